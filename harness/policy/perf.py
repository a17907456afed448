"""``--perf`` in a pytest run: its options, the timing request, and latency judged against the
baseline with a confirming re-run.

Against ``--baseline``, a case whose median is slower beyond the threshold
(``harness.results.latency``) is first a suspect: the plugin runs just that case again, and
only a re-run slower too makes it a regression (``perf.baseline.verdict``), which fails the run
like a new failure unless a known-issues entry with verdict ``perf-regression`` covers it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from harness.policy.baseline import Baseline
from harness.results.latency import (
    IMPROVEMENT,
    NOT_COMPARED,
    REGRESSION,
    UNCHANGED,
    Threshold,
    add_threshold_options,
    latency_change,
)
from harness.results.layer_times import ms
from harness.results.records import CaseRecord, record_key
from harness.targets import timing
from harness.targets.timing import JobTiming, add_perf_options

SUSPECT = "suspect"  # slower on the first run; the re-run decides


def add_options(group: pytest.OptionGroup) -> None:
    group.addoption(
        "--perf", action="store_true", help="time every case on a board (warm-up, timed runs)"
    )
    add_perf_options(group.addoption)
    add_threshold_options(group.addoption)


def perf_request(config: pytest.Config) -> JobTiming | None:
    """The timing every case asks for (``--perf``), or None; bad values are usage errors."""
    try:
        request = timing.perf_request(config.option)
    except ValueError as exc:
        raise pytest.UsageError(f"--perf-*: {exc}") from None
    return request if config.getoption("perf") else None


def threshold(config: pytest.Config) -> Threshold:
    try:
        return Threshold(config.getoption("perf_k"), config.getoption("perf_percent"))
    except ValueError as exc:
        raise pytest.UsageError(f"--perf-k/--perf-percent: {exc}") from None


@dataclass
class PerfJudge:
    """Judges each timed record against the baseline's, remembering suspects for their re-run."""

    baseline: Baseline
    threshold: Threshold
    suspects: dict[str, float] = field(default_factory=dict)  # key -> first run's median

    def judge(self, record: CaseRecord) -> CaseRecord:
        """The record with ``perf.baseline``: the judgement (a re-run's confirms or not)."""
        if not record.perf:
            return record
        key = record_key(record)
        change = latency_change(self.baseline.timings.get(key), record.perf, self.threshold)
        entry: dict[str, Any] = change.to_json()
        first = self.suspects.pop(key, None)
        if first is not None:  # the confirming re-run
            entry["first_median_s"] = first
            entry["confirmed"] = change.kind == REGRESSION
        elif change.kind == REGRESSION:
            assert change.new_s is not None
            self.suspects[key] = change.new_s
            entry["verdict"] = SUSPECT
        return replace(record, perf={**record.perf, "baseline": entry})


def suspect(record: CaseRecord) -> bool:
    """Whether the record needs its confirming re-run."""
    return _verdict(record) == SUSPECT


def slower(record: CaseRecord) -> str | None:
    """Why the record is a confirmed performance regression, or None."""
    if _verdict(record) != REGRESSION:
        return None
    judged = record.perf["baseline"]
    old, new = judged["old_median_s"], judged["new_median_s"]
    factor = f"x{new / old:.2f}" if old > 0 else "the baseline's was 0 s"
    return (
        f"performance regression: median {ms(new)} against {ms(old)} in the baseline "
        f"({factor}; margin {ms(judged['margin_s'])}; the first run "
        f"{ms(judged['first_median_s'])})"
    )


def summary_lines(records: list[CaseRecord]) -> list[str]:
    """The latency part of the end-of-run baseline summary: counts, then each change."""
    kinds = {kind: [r for r in records if _verdict(r) == kind] for kind in _KINDS}
    timed = [r for r in records if r.perf]
    if not timed:
        return []
    unconfirmed = [r for r in kinds[UNCHANGED] + kinds[IMPROVEMENT] if _was_suspect(r)]
    lines = [
        "latency: "
        + ", ".join(f"{len(kinds[kind])} {kind}" for kind in _KINDS)
        + f" ({len(unconfirmed)} slower once, not confirmed by the re-run)"
    ]
    lines += [f"slower: {record.id}: {slower(record)}" for record in kinds[REGRESSION]]
    for record in kinds[IMPROVEMENT]:
        judged = record.perf["baseline"]
        lines.append(
            f"faster: {record.id}: median {ms(judged['new_median_s'])} against "
            f"{ms(judged['old_median_s'])}"
        )
    return lines


_KINDS = (REGRESSION, IMPROVEMENT, UNCHANGED, NOT_COMPARED)


def _verdict(record: CaseRecord) -> str | None:
    judged = record.perf.get("baseline") if record.perf else None
    return judged.get("verdict") if isinstance(judged, dict) else None


def _was_suspect(record: CaseRecord) -> bool:
    return "first_median_s" in record.perf.get("baseline", {})
