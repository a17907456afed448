"""The documented limits a run tested nothing of: every case of the limit on a platform and
dtype ``untestable`` or ``rewritten-away``. The report lists them beside the limits no case
probes; ``hil diff`` those no case tested any more, or tested again."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from harness.judge.verdict import KINDS, TESTED_NOTHING
from harness.results.records import CaseRecord


def untested_in_run(records: Iterable[CaseRecord]) -> list[dict[str, str]]:
    """The limits whose every case on a platform and dtype tested nothing (``untestable``,
    ``rewritten-away``), as run.json's unprobed entries: {"limit", "reason"}, the reason the
    verdicts' meanings."""
    verdicts: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for record in records:
        verdicts[record.platform, record.dtype, record.limit].add(record.verdict)
    return [
        {
            "limit": limit,
            "reason": f"{platform} {dtype}: "
            + "; ".join(KINDS[verdict].meaning for verdict in sorted(seen)),
        }
        for (platform, dtype, limit), seen in verdicts.items()
        if seen <= set(TESTED_NOTHING)
    ]


def untested_changes(old: list[CaseRecord], new: list[CaseRecord]) -> dict[str, list[str]]:
    """The limits whose every case on a platform and dtype tested nothing in ``new`` and not
    in ``old`` ("now"), and the other way round ("again"), each as "limit (platform dtype:
    why)"."""

    def untested(records: list[CaseRecord]) -> set[str]:
        return {f"{item['limit']} ({item['reason']})" for item in untested_in_run(records)}

    before, after = untested(old), untested(new)
    return {"now": sorted(after - before), "again": sorted(before - after)}
