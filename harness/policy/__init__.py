"""The run policy: what decides a run beyond the verdicts (known issues, a baseline and the
history store's flaky cases, the cost tiers, shards, the performance gate) and its progress.

Each module holds one of them and works on records and case ids alone; the pytest plugin
(``harness.plugin.run_policy``) and the ``hil known-issues`` command wire them in
(docs/nightly.md).
"""
