"""The outcome policy: how a verdict becomes a pass, a failure, an expected failure or a
warning (``check_verdict``), and the warning classes and exit status the plugin raises."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import pytest

from harness.judge.verdict import FAILING_VERDICTS, TESTED_NOTHING
from harness.results.records import CaseRecord
from harness.text import printable

if TYPE_CHECKING:
    from harness.plugin.run_policy import RunPolicy

# A configured board down at the start (unreachable, no place leased, failed version check):
# not a test result, so neither one of pytest's statuses nor a failure.
BOARD_DOWN_EXIT = 6
# Warnings the summary counts instead of pytest listing each (-W default::<this> lists them);
# their public name is harness.plugin.<name>, as the docs spell it
QUIET = ("DocDriftWarning", "KnownIssueChangedWarning")
PUBLIC_MODULE = "harness.plugin"


class InfrastructureError(Exception):
    """Board, SSH, toolkit or timeout trouble: says nothing about the NPU."""


class DocDriftWarning(UserWarning):
    """A documented limit the SDK does not enforce (passes unless --strict-docs)."""


class KnownIssueChangedWarning(UserWarning):
    """A known issue whose case now behaves differently (fails with --strict-known)."""


def check_verdict(record: CaseRecord, strict_docs: bool, policy: RunPolicy | None = None) -> None:
    """Pass, fail or warn according to the verdict table (docs/report.md, "Verdicts"); a verdict
    that would fail is an expected failure (xfail) when it is a known issue behaving as
    recorded or the baseline failed the same way (docs/nightly.md). ``policy``: the run's
    (the ``hil_policy`` fixture); None outside a configured run: no known issues, no
    baseline."""
    # Model and file names, toolkit, board and known-issues text may carry terminal escapes.
    where = printable(f"[{record.backend}] {record.limit} at {record.value} ({record.documented})")
    detail = printable(record.detail)
    changed = policy.changed(record) if policy else None
    if changed is not None:
        changed = printable(changed)
        if policy and policy.strict_known:
            pytest.fail(f"{changed} (--strict-known): {where}: {detail}", pytrace=False)
        warnings.warn(KnownIssueChangedWarning(changed), stacklevel=2)
    drift = record.verdict == "doc-drift"
    if record.verdict in FAILING_VERDICTS or (drift and strict_docs):
        excuse = policy.excuse(record) if policy else None
        if excuse is not None:  # a known issue, or a failure the baseline had too
            pytest.xfail(printable(f"{record.verdict} ({excuse}): {where}: {detail}"))
    if record.verdict in FAILING_VERDICTS:
        pytest.fail(f"{record.verdict}: {where}: {detail}", pytrace=False)
    if record.verdict in TESTED_NOTHING:  # neither a pass nor a failure of its limit
        pytest.skip(f"{record.verdict}: {where}: {detail}")
    slower = policy.slower(record) if policy else None
    if slower is not None:
        why, excuse = slower
        if excuse is not None:  # a known issue's text, or the baseline's path
            pytest.xfail(printable(f"{why} ({excuse}): {where}"))
        pytest.fail(printable(f"{why}: {where}"), pytrace=False)
    if drift:
        message = f"doc-drift: {where}: {detail}"
        if strict_docs:
            pytest.fail(message, pytrace=False)
        warnings.warn(DocDriftWarning(message), stacklevel=2)
