"""The history store in a pytest run (``harness.policy.flaky.RunHistory``, ``--hil-db``):
opened from the options, the baseline ``--baseline last`` reads from it, and how writing the
run into it at its end went (``harness.plugin.run_policy``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from harness.history.importing import Written
from harness.history.location import StoreError, shown
from harness.judge.verdict import FAILING_VERDICTS
from harness.policy.baseline import Baseline
from harness.policy.flaky import LAST, RunHistory


def open_history(config: pytest.Config) -> RunHistory:
    """The store ``--hil-db`` names; a usage error when it cannot be opened, or is off while
    ``--flaky-ok`` or ``--baseline last`` would read it."""
    option = config.getoption
    try:
        history = RunHistory(option("hil_db"))
    except StoreError as exc:
        raise pytest.UsageError(str(exc)) from None
    if not history.on and (option("flaky_ok") or option("baseline") == LAST):
        raise pytest.UsageError(
            f"--flaky-ok and --baseline {LAST} read the history store: --hil-db is off"
        )
    return history


def last_baseline(history: RunHistory, entry: Mapping[str, str], vendor: str) -> Baseline:
    """``--baseline last``: the last stored run of the configuration of ``entry`` (run.json's
    history entry) and of ``vendor`` other than this run."""
    try:
        return history.last_baseline(
            entry.get("configuration", ""), vendor, entry.get("run", ""), FAILING_VERDICTS
        )
    except StoreError as exc:
        raise pytest.UsageError(f"--baseline {LAST}: {exc}") from None


def stored_text(history: RunHistory, written: Written) -> str:
    """The summary's last line when the run was written into the store."""
    records = written.added + written.updated
    return (
        f"npu-hil: history store {shown(history.location)}: run {written.run}, "
        f"{records} records written"
    )


def not_stored_text(results: Path, error: Exception) -> str:
    """The summary's last line when writing the run into the store failed."""
    return (
        f"npu-hil: history store: this run was not written ({error}); the journal has it: "
        f"hil history import {results}"
    )
