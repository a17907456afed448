"""Records grouped for reporting: per (backend, platform) an operator x limit x dtype matrix.

Both renderers (Markdown, HTML) and the diff read records only through this module, so what a
cell shows and how placement is summarised is decided once.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.judge.verdict import FAILING_VERDICTS, VERDICTS
from harness.report.io_section import MODEL_IO_KEY, IOSection, io_sections
from harness.results.records import CaseRecord, record_key
from harness.spec.properties import PRECISION

if TYPE_CHECKING:
    from harness.report.sdk_matrix import SdkMatrix

UNPROBED_KEY = "unprobed"  # run.json: [{"limit": id, "reason": text}, ...]
DISAGREEMENT = "reference-disagreement"


@dataclass(frozen=True)
class Row:
    op: str
    limit: str
    cells: dict[str, list[CaseRecord]]  # dtype -> the cases probing this limit, by value


@dataclass(frozen=True)
class Section:
    """Everything from one backend on one platform and SDK: a simulator run never mixes with a
    board, nor one SDK release with another."""

    backend: str
    platform: str
    dtypes: list[str]
    rows: list[Row]
    counts: dict[str, int]
    sdk: str = ""

    @property
    def title(self) -> str:
        """E.g. "rk3562 on simulator, SDK 2.3.2" (plain text)."""
        on_sdk = f", SDK {self.sdk}" if self.sdk else ""
        return f"{self.platform} on {self.backend}{on_sdk}"


@dataclass(frozen=True)
class Failure:
    record: CaseRecord
    bundle: str | None  # bundle folder relative to the results directory, when one exists


@dataclass(frozen=True)
class Report:
    summary: list[tuple[str, str]]  # run metadata as (key, text) pairs
    counts: dict[str, int]
    sections: list[Section]
    failures: list[Failure]
    io: list[IOSection] = field(default_factory=list)  # seed 003 rows per platform group
    # Documented limits no case probes, with the reason (run.json "unprobed")
    unprobed: list[tuple[str, str]] = field(default_factory=list)
    # Cases whose host references disagree: neither pass nor fail, listed with both values
    disagreements: list[CaseRecord] = field(default_factory=list)
    # Records of several SDKs: per limit, the verdicts side by side (None for one SDK)
    sdk_matrix: SdkMatrix | None = None


def build_report(
    records: list[CaseRecord], meta: Mapping[str, Any], bundles: Mapping[str, str]
) -> Report:
    """Group records for rendering; ``bundles`` maps case id -> bundle folder (relative)."""
    return Report(
        summary=run_summary(records, meta),
        counts=verdict_counts(records),
        sections=sections(records),
        failures=[
            Failure(record, bundles.get(record_key(record)))
            for record in sorted(records, key=lambda r: natural_key(r.id))
            if record.verdict in FAILING_VERDICTS
        ],
        io=io_sections(records, meta.get(MODEL_IO_KEY, [])),
        unprobed=[(item["limit"], item["reason"]) for item in meta.get(UNPROBED_KEY, [])],
        disagreements=[
            record
            for record in sorted(records, key=lambda r: natural_key(r.id))
            if record.verdict == DISAGREEMENT
        ],
    )


def verdict_counts(records: Iterable[CaseRecord]) -> dict[str, int]:
    """Cases per verdict, every verdict listed (zeros included) in VERDICTS order."""
    counts = Counter(record.verdict for record in records)
    return {verdict: counts[verdict] for verdict in VERDICTS}


def sections(records: Iterable[CaseRecord]) -> list[Section]:
    grouped: dict[tuple[str, str, str], list[CaseRecord]] = defaultdict(list)
    for record in records:
        grouped[(record.backend, record.platform, record.sdk)].append(record)
    return [
        _section(backend, platform, sdk, grouped[(backend, platform, sdk)])
        for backend, platform, sdk in sorted(grouped)
    ]


def _section(backend: str, platform: str, sdk: str, records: list[CaseRecord]) -> Section:
    cells: dict[tuple[str, str], dict[str, list[CaseRecord]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for record in records:
        cells[(record.op, record.limit)][record.dtype].append(record)
    rows = [
        Row(
            op,
            limit,
            {
                dtype: sorted(cases, key=lambda r: natural_key(r.value))
                for dtype, cases in by_dtype.items()
            },
        )
        for (op, limit), by_dtype in sorted(
            cells.items(), key=lambda item: natural_key(" ".join(item[0]))
        )
    ]
    dtypes = sorted({record.dtype for record in records})
    return Section(backend, platform, dtypes, rows, verdict_counts(records), sdk)


def run_summary(records: list[CaseRecord], meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Platforms, backends and versions seen in the records, then run.json's own entries."""
    versions: dict[str, set[str]] = defaultdict(set)
    for record in records:
        for name, version in record.versions.items():
            versions[name].add(str(version))
    summary = [
        ("platforms", ", ".join(sorted({r.platform for r in records}))),
        ("backends", ", ".join(sorted({r.backend for r in records}))),
        ("cases", str(len(records))),
    ]
    summary += [
        (f"version: {name}", ", ".join(sorted(versions[name]))) for name in sorted(versions)
    ]
    summary += [
        (f"run: {key}", _text(meta[key]))
        for key in sorted(meta)
        if key not in (UNPROBED_KEY, MODEL_IO_KEY)
    ]
    return summary


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{key}={_text(item)}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_text(item) for item in value)
    return str(value)


def case_facts(record: CaseRecord) -> list[tuple[str, str]]:
    """What a matrix cell shows besides value, documentation and verdict (empty ones left out)."""
    facts = [
        ("placement", placement_summary(record)),
        # the precision an int8 case's layers ran in, as its precision check saw it
        ("precision", next((c["observed"] for c in record.checks if c["prop"] == PRECISION), "")),
        ("rewrites", ", ".join(record.rewrites)),
        ("metrics", format_metrics(record.metrics)),
        ("references", reference_summary(record)),
    ]
    return [(label, text) for label, text in facts if text]


def reference_summary(record: CaseRecord) -> str:
    """Where host references that disagree differ most, with each one's value and the observed
    one there, and the observed outputs' metrics against each reference; empty when they
    agree."""
    reference = record.reference
    used = reference.get("used", "")
    parts = []
    for name, agreement in reference.get("agreement", {}).items():
        worst = agreement.get("worst", {})
        if agreement.get("agrees", True) or not worst:
            continue
        values = [f"{used} {format_number(worst[used])}", f"{name} {format_number(worst[name])}"]
        if "observed" in worst:
            values.append(f"observed {format_number(worst['observed'])}")
        parts.append(f"output {worst['output']} at {worst['index']}: " + ", ".join(values))
    if parts:
        parts += [
            f"observed against {name}: {format_metrics(metrics)}"
            for name, metrics in reference.get("metrics", {}).items()
        ]
        parts.append(f"decided against {used}")
    return "; ".join(parts)


def placement_summary(record: CaseRecord) -> str:
    """Per op type where its layers ran, e.g. "Pow: CPU", "MaxPool: NPU×2"; the layers the
    vendor marks as model input/output (``"io"``) left out."""
    targets: dict[str, Counter[str]] = defaultdict(Counter)
    for layer in record.placement:
        if not layer.get("io"):
            targets[str(layer.get("op", "?"))][str(layer.get("target", "?"))] += 1
    parts = []
    for op, counter in targets.items():
        where = ", ".join(
            target if count == 1 else f"{target}×{count}"
            for target, count in sorted(counter.items())
        )
        parts.append(f"{op}: {where}")
    return "; ".join(parts)


def format_metrics(metrics: Mapping[str, float]) -> str:
    return ", ".join(f"{name}={format_number(value)}" for name, value in sorted(metrics.items()))


def format_number(value: float) -> str:
    return f"{value:.6g}"


def natural_key(text: str) -> list[tuple[int, int | str]]:
    """Sort key putting "kernel=7x7" before "kernel=8x8" and "999" before "8193"."""
    return [
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part
    ]
