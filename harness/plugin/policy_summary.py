"""The run policy's end-of-run summary (``harness.plugin.run_policy``): the shard, the slow
cases left out, timeouts, known issues, flaky cases, baseline changes and how writing the run
into the history store went."""

from __future__ import annotations

import os
from typing import Any, Protocol

from harness.policy import perf
from harness.policy.baseline import Baseline
from harness.policy.known_issues import CHANGED, KnownIssues
from harness.policy.shards import Shard
from harness.results.records import CaseRecord, flaky_text
from harness.text import printable

TIMED_OUT = "timed out"  # how the targets' infra-error details begin a timeout


class SummarisedPolicy(Protocol):
    """What the summary reads of the run's policy (``RunPolicy``)."""

    shard: Shard | None
    known: KnownIssues | None
    flaky_ok: bool
    baseline: Baseline | None
    deselected: set[str]
    stored: str


def known_issue_changed(record: CaseRecord) -> str | None:
    """Why a record marked by a known issue whose verdict changed warns, or None."""
    known = record.known
    if not known or known["status"] != CHANGED:
        return None
    return (
        f"known issue changed: {record.id} is {record.verdict}, "
        f"{known['expected']} expected ({known['reference']})"
    )


def write_summary(
    reporter: Any,
    policy: SummarisedPolicy,
    records: list[CaseRecord],
    left_out: list[dict[str, str]],
) -> None:
    """The policy's sections of the terminal summary, for this run's ``records`` and the slow
    cases it ``left_out``."""

    def write(text: str) -> None:
        _write(reporter, text)

    if policy.shard:
        write(f"npu-hil: shard {policy.shard} of the selected cases (--shard)")
    if left_out:
        reporter.section("npu-hil slow tier left out")
        write(f"{len(left_out)} slow case(s) not run (--tier full runs them):")
        for item in left_out:
            write(f"  {item['id']}: {item['reason']}")
    timeouts = [r for r in records if r.verdict == "infra-error" and TIMED_OUT in r.detail]
    if timeouts:
        reporter.section("npu-hil timeouts")
        for record in timeouts:
            write(f"{record.id}: {record.duration_s:.0f} s elapsed: {record.detail}")
    if policy.known:
        _known_summary(reporter, records, policy.known, policy.deselected)
    flaky = [record for record in records if record.flaky]
    if flaky:
        reporter.section("npu-hil flaky")
        fails = "do not fail the run (--flaky-ok)" if policy.flaky_ok else "fail the run"
        write(f"{len(flaky)} failing case(s) flap in the history store; they {fails}:")
        for record in flaky:
            assert record.flaky is not None
            write(f"  {record.id} ({record.verdict}): {flaky_text(record.flaky)}")
    if policy.baseline:
        _baseline_summary(reporter, records, policy.baseline)
    if policy.stored:
        write(policy.stored)


def _known_summary(
    reporter: Any, records: list[CaseRecord], known: KnownIssues, deselected: set[str]
) -> None:
    marked = [record for record in records if record.known]
    changed = [record for record in marked if record.known["status"] == CHANGED]  # type: ignore[index]
    stale = known.stale(records, deselected)
    unselected = known.not_selected(records, deselected)
    elsewhere = known.elsewhere(records, deselected)
    reporter.section("npu-hil known issues")
    _write(
        reporter,
        f"{_shown(known.path)}: {len(marked) - len(changed)} as expected, "
        f"{len(changed)} changed, {len(stale)} stale entr{'y' if len(stale) == 1 else 'ies'}"
        + (f", {unselected} for cases not selected" if unselected else "")
        + (f", {elsewhere} for other platforms" if elsewhere else ""),
    )
    for record in changed:
        _write(reporter, f"changed: {known_issue_changed(record)}")
    for entry in stale:
        _write(reporter, f"stale (matched no case of this run): {entry.label()}")


def _baseline_summary(reporter: Any, records: list[CaseRecord], baseline: Baseline) -> None:
    comparison = baseline.compare(records)
    reporter.section("npu-hil against the baseline")
    counts = ", ".join(f"{name} {count}" for name, count in comparison.counts().items())
    _write(reporter, f"{baseline.path}: {counts}")
    for case_id in comparison.new_failures:
        _write(reporter, f"new failure: {case_id}")
    for case_id, old, new in comparison.regressions:
        _write(reporter, f"regression: {case_id}: {old} -> {new}")
    for case_id, old, new in comparison.fixed:
        _write(reporter, f"fixed: {case_id}: {old} -> {new}")
    for case_id, old, new in comparison.changed:
        _write(reporter, f"changed: {case_id}: {old} -> {new}")
    for kind, found in (("new", comparison.new_causes), ("gone", comparison.gone_causes)):
        for key, reading, cases in found:
            _write(reporter, f"{kind} cause {key} ({cases} cases): {reading}")
    for line in perf.summary_lines(records):
        _write(reporter, line)


def _shown(path: str) -> str:
    """``path`` relative to the working directory when it lies below it (the shipped file in
    a checkout), else as given."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _write(reporter: Any, text: str) -> None:
    """A summary line: case ids, known-issues references and notes, record details and file
    names may all hold terminal escapes."""
    reporter.write_line(printable(text))
