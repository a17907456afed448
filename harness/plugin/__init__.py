"""pytest plugin of npu-hil (registered as the ``npu_hil`` pytest11 entry point).

A test that asks for the ``hil_record`` fixture is parametrized with one case per documented
limit boundary (``harness.cases.operators``); the fixture runs the case on the selected backend and
journals it; ``check_verdict`` turns the verdict into a pass, a failure or a warning.
Infrastructure trouble is raised from the fixture, so pytest reports it as an error, never as
a test failure.

One module per pytest phase, each its own plugin module (``pytest_plugins``): ``options`` (the
options and their checks; ``vendor_options`` and ``policy_options`` hold two of their groups,
``vendor_options`` resolving the run's vendor), ``configure`` (the run configuration, with
``operator_selection`` for ``--op``/``--entry``, computed once and kept in ``config.stash``,
and the run's metadata), ``boards`` (every process's boards, chosen before any case),
``collection`` (the cases and their marks), ``fixtures``, ``outcome`` (the verdict as a test
outcome, the warning classes), ``junit`` (the verdicts in ``--junitxml``'s XML), ``summary``
(the verdicts at the end) and ``run_policy`` (known issues, baseline, tiers, shards and the
performance gate in a run).
Per-run state lives in the run configuration's objects, never in module globals.
"""

from __future__ import annotations

import importlib
from typing import Any

# Dependencies first: pytest imports each itself (to rewrite its asserts), so none may be
# imported before its turn; hence the names below are looked up when first asked for.
pytest_plugins = [
    "harness.plugin.options",
    "harness.plugin.boards",
    "harness.plugin.configure",
    "harness.plugin.collection",
    "harness.plugin.fixtures",
    "harness.plugin.junit",
]

# What suites, tests and ``-W default::harness.plugin.DocDriftWarning`` name -> its module
_PUBLIC = {
    "BOARD_DOWN_EXIT": "outcome",
    "DocDriftWarning": "outcome",
    "InfrastructureError": "outcome",
    "KnownIssueChangedWarning": "outcome",
    "check_verdict": "outcome",
    "RunPolicy": "run_policy",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
