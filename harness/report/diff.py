"""Run-to-run diff: which cases changed verdict, backend or behaviour between two runs.

Cases are matched by id. A case's behaviour (``harness.report.behaviour``) is its build outcome
("build aborted (SIGABRT)"), placement and precision per layer type, numeric result and
metrics; when the outcome changed it alone is listed (the rest follows from it). Layer types
go through the vendor's alias table, so a renamed or re-tiled layer is a compiler internal:
not a change, counted apart. ``summarize`` counts cases, not changes: a case whose verdict changed
is a verdict change (a new failure when it now fails, whether it passed before or failed another
way; fixed when it failed before and no longer does; a failing case only in the new run is a new
failure too), a case with the same verdict whose backend or behaviour changed is a
backend-only change. A new failure is what fails a run against its baseline (``--baseline``),
so the report's count and the end-of-run summary's agree.

A metric counts as changed when ``|new - old| > threshold * max(|old|, |new|)`` (default
threshold 0.10, i.e. 10 %), when it is present in only one run, or when exactly one side is
NaN. The denominator is the larger magnitude, so the measure is symmetric and at most 2; a
metric moving away from exactly 0 is always a change (an exact match that stopped being exact
is worth seeing).

Timed runs (``--perf``) also show a case whose median latency moved beyond the threshold of
``harness.results.latency`` (``max(k * MAD, percent%)``) as a "slower" or "faster" change
(old and new median in seconds), a backend-only change when the verdict stayed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from operator import attrgetter
from typing import Any

from harness.judge.verdict import FAILING_VERDICTS
from harness.report.behaviour import behaviour, differences, internal_only
from harness.report.cells import format_number, natural_key
from harness.results.latency import IMPROVEMENT, REGRESSION, Threshold, latency_change
from harness.results.records import CaseRecord
from harness.terminal import columns

DEFAULT_METRIC_THRESHOLD = 0.10


@dataclass(frozen=True)
class Change:
    case_id: str
    # "only-old", "only-new", "verdict", "backend", "build", "placement <type>",
    # "precision <type>", "result", "metric", "slower" or "faster"
    kind: str
    old: str | float | None
    new: str | float | None
    metric: str = ""  # the metric's name, for kind "metric"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def diff_records(
    old: list[CaseRecord],
    new: list[CaseRecord],
    metric_threshold: float = DEFAULT_METRIC_THRESHOLD,
    key: Callable[[CaseRecord], str] = attrgetter("id"),
    aliases: Mapping[str, str] | None = None,
    latency: Threshold | None = None,
) -> list[Change]:
    """Every difference, ordered by case (latency beyond ``latency``, default
    ``Threshold()``). Records are matched by ``key``, which the changes name: the case id, or
    ``record_key`` (case and SDK) for runs on several SDKs; ``aliases`` is the vendor's layer
    renames."""
    if not metric_threshold >= 0:
        raise ValueError(f"metric threshold must be >= 0, got {metric_threshold!r}")
    before = {key(record): record for record in old}
    after = {key(record): record for record in new}
    changes: list[Change] = []
    for name in sorted(before.keys() | after.keys(), key=natural_key):
        if name not in after:
            changes.append(Change(name, "only-old", before[name].verdict, None))
        elif name not in before:
            changes.append(Change(name, "only-new", None, after[name].verdict))
        else:
            changes += _case_changes(
                name, before[name], after[name], metric_threshold, aliases or {}
            )
            changes += _latency_changes(name, before[name], after[name], latency or Threshold())
    return changes


def _case_changes(
    name: str, old: CaseRecord, new: CaseRecord, threshold: float, aliases: Mapping[str, str]
) -> list[Change]:
    changes = [
        Change(name, kind, a, b)
        for kind, a, b in (
            ("verdict", old.verdict, new.verdict),
            ("backend", old.backend, new.backend),
        )
        if a != b
    ]
    found = differences(behaviour(old, aliases), behaviour(new, aliases))
    changes += [Change(name, aspect, a, b) for aspect, a, b in found]
    if any(aspect == "build" for aspect, _, _ in found):
        return changes  # no metrics on the side that did not build
    for metric in sorted(old.metrics.keys() | new.metrics.keys()):
        a, b = old.metrics.get(metric), new.metrics.get(metric)
        if a is None or b is None or _metric_changed(a, b, threshold):
            changes.append(Change(name, "metric", a, b, metric=metric))
    return changes


_LATENCY_KINDS = {REGRESSION: "slower", IMPROVEMENT: "faster"}


def _latency_changes(
    name: str, old: CaseRecord, new: CaseRecord, threshold: Threshold
) -> list[Change]:
    moved = latency_change(old.perf, new.perf, threshold)
    if moved.kind not in _LATENCY_KINDS:
        return []
    return [Change(name, _LATENCY_KINDS[moved.kind], moved.old_s, moved.new_s)]


@dataclass(frozen=True)
class Summary:
    """Cases by how they changed; each case counts once (see the module docstring)."""

    new_failures: list[str]  # failing now; before passing, failing another way, or not there
    fixed: list[str]  # failing before, not now
    other_verdict: list[str]  # verdict changed between two non-failing ones
    backend_only: list[str]  # same verdict, another backend or behaviour
    only_old: list[str]
    only_new: list[str]
    unchanged: int  # internals among them
    internals: list[str]  # unchanged but for the compiler's internals (renamed, tiled layers)

    @property
    def verdict_changes(self) -> int:
        return len(self.new_failures) + len(self.fixed) + len(self.other_verdict)

    def line(self) -> str:
        """One line, e.g. "2 verdict changes (1 new failure, 1 fixed, 0 other), 3 backend-only
        changes, 1 case only in the old run, 0 only in the new one, 640 unchanged (compiler
        internals: 30)"."""
        return (
            f"{_count(self.verdict_changes, 'verdict change')} "
            f"({_count(len(self.new_failures), 'new failure')}, {len(self.fixed)} fixed, "
            f"{len(self.other_verdict)} other), "
            f"{_count(len(self.backend_only), 'backend-only change')}, "
            f"{_count(len(self.only_old), 'case')} only in the old run, "
            f"{len(self.only_new)} only in the new one, {self.unchanged} unchanged "
            f"(compiler internals: {len(self.internals)})"
        )

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "verdict_changes": self.verdict_changes}


def summarize(
    changes: list[Change],
    old: list[CaseRecord],
    new: list[CaseRecord],
    key: Callable[[CaseRecord], str] = attrgetter("id"),
    aliases: Mapping[str, str] | None = None,
) -> Summary:
    """``changes`` (from ``diff_records(old, new, key=key, aliases=aliases)``) counted per
    case; the unchanged cases whose layers differ only by the compiler's internals apart."""
    by_case: dict[str, list[Change]] = {}
    for change in changes:
        by_case.setdefault(change.case_id, []).append(change)
    groups: dict[str, list[str]] = {name: [] for name in _GROUPS}
    for case_id, found in by_case.items():
        groups[_group(found)].append(case_id)
    before = {key(record): record for record in old}
    after = {key(record): record for record in new}
    internals = [
        name
        for name in sorted(before.keys() & after.keys() - by_case.keys(), key=natural_key)
        if internal_only(before[name], after[name], aliases or {})
    ]
    ids = before.keys() | after.keys()
    return Summary(**groups, unchanged=len(ids) - len(by_case), internals=internals)


_GROUPS = ("new_failures", "fixed", "other_verdict", "backend_only", "only_old", "only_new")


def _group(changes: list[Change]) -> str:
    kinds = {change.kind: change for change in changes}
    if "only-old" in kinds:
        return "only_old"
    if "only-new" in kinds:
        return "new_failures" if kinds["only-new"].new in FAILING_VERDICTS else "only_new"
    verdict = kinds.get("verdict")
    if verdict is None:
        return "backend_only"
    if verdict.new in FAILING_VERDICTS:
        return "new_failures"
    return "fixed" if verdict.old in FAILING_VERDICTS else "other_verdict"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _metric_changed(old: float, new: float, threshold: float) -> bool:
    if math.isnan(old) or math.isnan(new):
        return math.isnan(old) != math.isnan(new)
    return abs(new - old) > threshold * max(abs(old), abs(new))


def format_table(changes: list[Change]) -> str:
    """Aligned plain-text columns: case, change, old, new."""
    rows = [["case", "change", "old", "new"]]
    for c in changes:
        cells = (
            c.case_id,
            f"metric {c.metric}" if c.metric else c.kind,
            _cell(c.old),
            _cell(c.new),
        )
        rows.append([_printable(cell) for cell in cells])
    return "\n".join(columns(rows)) + "\n"


def _cell(value: str | float | None) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else format_number(value)


def _printable(text: str) -> str:
    """No terminal control sequences from record text."""
    return "".join(char if char.isprintable() else "?" for char in text)
