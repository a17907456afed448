"""The report's performance section (``--perf``): latency per case, its change against the
baseline as an inline SVG chart (no scripts; each bar links to its case's card), and the
slowest layers of the cases that recorded a per-layer table.

The judgement against the baseline is the run's own (``perf.baseline`` of each record: the
threshold and the confirming re-run of ``harness.policy.perf``). Records without timing say
why (the simulator has none), instead of numbers.

The section is written by the report's templates (``templates/perf.html``, the ``perf``
macro of ``templates/report.md``) from ``PerfView``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from harness.report.matrix import case_href
from harness.results.latency import IMPROVEMENT, REGRESSION
from harness.results.layer_times import ms, slowest_layers
from harness.results.records import CaseRecord

_COLOURS = {REGRESSION: "#c0392b", IMPROVEMENT: "#2e8b57"}
_OTHER = "#9aa0a6"
ROW, _LABEL, HALF = 18, 360, 150  # px: row height, label column, bar half-width (+-100%)
_CLAMP = 1.0  # changes beyond +-100% are drawn at the edge
_LABEL_CHARS = 52


def judgement(record: CaseRecord) -> dict[str, Any] | None:
    judged = record.perf.get("baseline")
    return judged if isinstance(judged, dict) and judged.get("old_median_s") else None


def change(judged: dict[str, Any]) -> float:
    """The median's relative change against the baseline (0.25: 25% slower)."""
    return float(judged["new_median_s"]) / float(judged["old_median_s"]) - 1


@dataclass(frozen=True)
class Bar:
    """One case's bar of the chart: where it is drawn, and what it says."""

    record: CaseRecord
    judged: dict[str, Any]
    y: int
    x: float
    width: float
    colour: str
    label: str  # the case id, shortened to fit the label column

    @property
    def change(self) -> float:
        return change(self.judged)


@dataclass(frozen=True)
class Chart:
    """One bar per case: its median's change against the baseline, centred on 0%."""

    bars: list[Bar]
    centre: int
    width: int
    height: int
    axis_y: int


def chart(records: list[CaseRecord]) -> Chart:
    centre = _LABEL + HALF
    bars = []
    for index, record in enumerate(records):
        judged = judgement(record)
        assert judged is not None
        length = max(-_CLAMP, min(_CLAMP, change(judged))) * HALF
        label = record.id if len(record.id) <= _LABEL_CHARS else record.id[: _LABEL_CHARS - 1] + "…"
        colour = _COLOURS.get(str(judged["verdict"]), _OTHER)
        x, width = centre + min(length, 0), max(abs(length), 1)
        bars.append(Bar(record, judged, index * ROW + 4, x, width, colour, label))
    height = ROW * len(records) + 24
    return Chart(bars, centre, centre + HALF + 80, height, ROW * len(records) + 18)


@dataclass(frozen=True)
class PerfView:
    """The section of a run's records: those timed, measured (a median) and judged against
    the baseline, and why the others have no timing."""

    timed: list[CaseRecord]

    @property
    def measured(self) -> list[CaseRecord]:
        return [r for r in self.timed if "median_s" in r.perf]

    @property
    def judged(self) -> list[CaseRecord]:
        return [r for r in self.measured if judgement(r)]

    @property
    def reasons(self) -> Counter[str]:
        """Why cases have no timing -> how many."""
        return Counter(str(r.perf["unavailable"]) for r in self.timed if "unavailable" in r.perf)

    @property
    def verdicts(self) -> Counter[str]:
        """The judged cases per verdict against the baseline."""
        return Counter(str(judgement(r)["verdict"]) for r in self.judged)  # type: ignore[index]

    @property
    def regressed(self) -> bool:
        return bool(self.verdicts.get(REGRESSION))


def perf_view(records: list[CaseRecord]) -> PerfView | None:
    """The section, or None when no case was timed."""
    timed = [r for r in records if r.perf]
    return PerfView(timed) if timed else None


def layer_share(record: CaseRecord) -> list[tuple[dict[str, Any], float]]:
    """The slowest layers of a case's per-layer table, each with its share of the total."""
    total = sum(float(layer["time_us"]) for layer in record.perf["layers"]) or math.inf
    return [(layer, float(layer["time_us"]) / total) for layer in slowest_layers(record.perf)]


# What the templates of the section read of this module
GLOBALS: dict[str, Any] = {
    "case_href": case_href,
    "chart": chart,
    "change": change,
    "judgement": judgement,
    "layer_share": layer_share,
    "ms": ms,
    "perf_view": perf_view,
    "slowest_layers": slowest_layers,
    "ROW": ROW,
    "HALF": HALF,
}
