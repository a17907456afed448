"""What a nightly run needs beyond the verdicts: known issues, a baseline, tiers and progress.

Each module holds one of them and works on records and case ids alone; the pytest plugin and
the ``hil known-issues`` command wire them in (docs/nightly.md).
"""
