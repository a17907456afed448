"""What a pytest run reads of files besides its cases (``harness.plugin.run_policy``): the
known issues (``--known-issues``), a baseline folder (``--baseline DIR``) and the folder a
``--resume`` continues, each refused as a usage error in words."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.judge.verdict import FAILING_VERDICTS
from harness.policy.baseline import Baseline
from harness.policy.known_issues import KnownIssues, KnownIssuesError, load_known_issues
from harness.results.journal import JournalError
from harness.results.runs import folder_vendor
from harness.text import printable
from harness.vendors import layer_aliases

OFF = "off"
VENDOR = "vendor"  # --known-issues vendor: the known issues the run's vendor ships


def run_known_issues(value: str, shipped: Path | None) -> KnownIssues | None:
    if value == OFF:
        return None
    if value == VENDOR:
        if shipped is None:
            raise pytest.UsageError(f"--known-issues {VENDOR}: the vendor ships no known issues")
        value = str(shipped)
    try:
        return load_known_issues(value)
    except KnownIssuesError as exc:
        raise pytest.UsageError(printable(f"--known-issues: {exc}")) from None


def check_resumed_vendor(results: Path, vendor: str) -> None:
    """A usage error when ``--resume`` continues another vendor's run: its records and this
    run's would be one run of two vendors."""
    try:
        before = folder_vendor(results)
    except JournalError as exc:
        raise pytest.UsageError(printable(f"--resume: {exc}")) from None
    if before and before != vendor:
        raise pytest.UsageError(
            printable(
                f"--resume: {results} holds a run of vendor {before}; this run's vendor is "
                f"{vendor}: a run has one vendor. Give a new folder (--results DIR)"
            )
        )


def folder_baseline(value: str | None, vendor: str) -> Baseline | None:
    if value is None:
        return None
    try:
        return Baseline(value, FAILING_VERDICTS, aliases=layer_aliases(), vendor=vendor)
    except (JournalError, OSError) as exc:
        raise pytest.UsageError(printable(f"--baseline {value}: {exc}")) from None  # its journal
