"""Changes against the baseline: the run compared with the results directory run.json names.

``run.json`` key ``"baseline"`` holds the absolute path of an earlier results directory
(``--baseline``) or null. Cases are matched SDK by SDK, as the run matched them to excuse a
failure the baseline had too: a run on one SDK is compared with the baseline's records of that
SDK, by case id, so the numbers agree with ``hil diff BASELINE RESULTS --old-sdk S --new-sdk
S``; a run on several SDKs is compared case and SDK by case and SDK, and the changes name
both (``ID@SDK``). The comparison is ``harness.report.diff``'s, and the failing causes
(``harness.report.causes``) that appeared and went. A baseline that cannot be read, or is a
run of another vendor than the run's (or names none where the run does), is said in the report,
never a reason to write no report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from harness.report.causes import CauseChanges, cause_changes
from harness.report.diff import Change, Summary, diff_records, summarize
from harness.report.sdk_matrix import sdks_of
from harness.results.journal import JournalError, read_records, read_run_metadata
from harness.results.records import CaseRecord, record_key
from harness.results.runs import check_same_vendor, vendor_of

BASELINE_KEY = "baseline"


@dataclass(frozen=True)
class BaselineChanges:
    path: str
    problem: str = ""  # why the baseline could not be read; then nothing else is set
    summary: Summary | None = None
    # One per case whose verdict changed or that fails and is new, new failures first
    verdicts: list[Change] = field(default_factory=list)
    causes: CauseChanges | None = None  # the failing causes that appeared and went


def baseline_changes(
    meta: Mapping[str, Any],
    records: list[CaseRecord],
    aliases: Mapping[str, str] | None = None,
) -> BaselineChanges | None:
    """None when the run names no baseline; ``aliases``: the vendor's layer renames."""
    path = meta.get(BASELINE_KEY)
    if not path:
        return None
    try:
        old = read_records(path)
        vendor = vendor_of([meta], (record.vendor for record in records), "this run")
        of = vendor_of([read_run_metadata(path)], (record.vendor for record in old), str(path))
        check_same_vendor(of, str(path), vendor, "this run")
    except (JournalError, OSError) as exc:
        return BaselineChanges(str(path), problem=str(exc))
    sdks = sdks_of(records)
    key: Callable[[CaseRecord], str] = record_key
    if len(sdks) == 1:
        old = [record for record in old if record.sdk == sdks[0]]
        key = attrgetter("id")
    changes = diff_records(old, records, key=key, aliases=aliases)
    summary = summarize(changes, old, records, key=key, aliases=aliases)
    order = {case_id: i for i, case_id in enumerate(summary.new_failures + summary.fixed)}
    verdicts = [
        change
        for change in changes
        if change.kind == "verdict" or change.case_id in summary.new_failures
    ]
    verdicts.sort(key=lambda change: order.get(change.case_id, len(order)))
    by_cause = cause_changes(old, records, aliases, key)
    return BaselineChanges(str(path), summary=summary, verdicts=verdicts, causes=by_cause)
