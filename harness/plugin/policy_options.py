"""The run policy's options (``harness.policy``, docs/nightly.md): known issues, the baseline,
the history store, flaky cases, tiers, shards and progress lines."""

from __future__ import annotations

import pytest

from harness.history.location import ENV as STORE_ENV
from harness.history.location import help_default
from harness.plugin.run_inputs import OFF, VENDOR
from harness.policy import perf
from harness.policy.flaky import LAST
from harness.policy.progress import DEFAULT_EVERY
from harness.policy.tiers import DEFAULT_BUDGET_S, DEFAULT_SLOW_TIMEOUT_S, TIERS


def add_policy_options(group: pytest.OptionGroup) -> None:
    """The run policy's options (``harness.policy``, docs/nightly.md)."""
    perf.add_options(group)
    group.addoption(
        "--known-issues",
        default=OFF,
        metavar="FILE",
        help="known-issues YAML file: matching cases that behave as recorded do not fail "
        f"the run; '{VENDOR}': the file the vendor ships for its default run (default off)",
    )
    group.addoption(
        "--strict-known", action="store_true", help="a known issue that changed fails its case"
    )
    group.addoption(
        "--baseline",
        default=None,
        metavar="DIR|last",
        help="results of a previous run: only new failures and regressions fail; "
        f"'{LAST}': the last run of this configuration in the history store",
    )
    group.addoption(
        "--hil-db",
        default=None,
        metavar="URL|FILE|off",
        help="history store every run is written to at its end: a PostgreSQL or SQLite URL, "
        f"or an SQLite file (env {STORE_ENV}; default {help_default()}); 'off': none",
    )
    group.addoption(
        "--flaky-ok",
        action="store_true",
        help="a failure of a case the history store shows flapping does not fail the run",
    )
    group.addoption(
        "--tier",
        choices=TIERS,
        default="default",
        help="default: leave out the slow tier (cases estimated over --case-budget); full: "
        "run every case",
    )
    group.addoption(
        "--case-budget",
        type=float,
        default=DEFAULT_BUDGET_S,
        help=f"estimated seconds above which a case is in the slow tier ({DEFAULT_BUDGET_S:g})",
    )
    group.addoption(
        "--slow-timeout",
        type=float,
        default=DEFAULT_SLOW_TIMEOUT_S,
        help="seconds one slow-tier case may take, instead of --hil-timeout "
        f"({DEFAULT_SLOW_TIMEOUT_S:g}; above 0, at most a day)",
    )
    group.addoption(
        "--shard",
        default=None,
        metavar="I/N",
        help="run only the I-th of N parts of the selected cases, split stably by case id and "
        "balanced by their cost estimates (one CI job per part; hil report merges them)",
    )
    group.addoption(
        "--progress-every",
        type=int,
        default=DEFAULT_EVERY,
        help=f"outside a terminal (CI): a progress line every N cases ({DEFAULT_EVERY}; 0: none)",
    )
