"""Cause signatures: the failures of a run grouped by what was seen, not case by case.

A record's ``Signature`` is made from its observation alone, never from its id, platform name,
parameters or SDK, so the same vendor problem met by 26 cases, on several platforms or SDK
releases, is one cause:

- the deciding check: the property and status that made the verdict (``verdict_of``);
- the stage: ``build`` or ``runtime`` (the toolkit rejected or failed the model), else from the
  deciding check: ``precision``, ``placement``, ``numeric`` (the result) or ``layout``;
- the message: the deciding check's observation (the toolkit's words for a rejected model)
  with numbers, quoted and labelled names, paths, shapes, hex addresses and the record's own
  platform name replaced by placeholders; any other difference of words is another cause;
- the placement pattern: the layer types (through the vendor's aliases) that ran anywhere
  but the NPU, e.g. ``Min->CPU``;
- the precision fallback of a case whose precision is checked (int8): the layer types none of
  whose layers ran in the precision asked, e.g. ``Softmax->FLOAT16``;
- the metric class of a numeric failure: the cosine similarity's and the mismatching
  elements' band, e.g. ``cosine 0.5-0.99, mismatches >=10%``.

Records get a signature when their verdict is in ``GROUPED``: the failures and the document's
own findings (doc drift, limits confirmed or met by a rewrite), which the report lists too.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from operator import attrgetter
from typing import Any

from harness.documented.properties import PRECISION
from harness.judge.verdict import (
    CONFIRMED,
    ERROR_VERDICTS,
    FAILING_VERDICTS,
    LAYOUT_PHASE,
    NUMERIC_FAILURES,
    RESULT_PHASE,
    SEVERITY,
)
from harness.report.behaviour import RAN, behaviour
from harness.results.records import CaseRecord, record_key

# The verdicts that get a cause: all but the errors (nothing the SDK did) and ``confirmed``
# (the document holds), most severe first.
GROUPED = tuple(v for v in SEVERITY if v not in (*ERROR_VERDICTS, CONFIRMED))
ACCELERATOR = "NPU"  # where a layer is meant to run; the pattern names the layers elsewhere

# Placeholders, applied in this order (a path may hold numbers, a shape is numbers).
_NORMALISED = (
    (re.compile(r"(?<![\w.~-])(?:~|\.{1,2})?/[^\s:;,()'\"\[\]]+"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"'[^'\n]*'|\"[^\"\n]*\""), "<name>"),
    (re.compile(r"(?i)\b(name\s*[:=]\s*)(?!<)\S+"), r"\1<name>"),
    (re.compile(r"\[\s*[-+\d.,\s]*\]|\(\s*-?\d+(?:\s*,\s*-?\d+)+\s*,?\s*\)"), "<shape>"),
    (re.compile(r"\b\d+(?:x\d+)+\b"), "<shape>"),
    # an exit status is the outcome's name, like a signal's ("build aborted (exit code 1)")
    (
        re.compile(
            r"(?<![\w.])(?<!exit code )[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?(?![\w.])", re.I
        ),
        "<n>",
    ),
)
# Cosine similarity bands, highest first: (lower bound, name).
_COSINE_BANDS = ((0.999, ">=0.999"), (0.99, "0.99-0.999"), (0.5, "0.5-0.99"), (-math.inf, "<0.5"))
# Share of the elements outside tolerance: (lower bound, name), highest first.
_MISMATCH_BANDS = ((0.1, ">=10%"), (0.01, "1-10%"), (0.0, "<1%"))


@dataclass(frozen=True)
class Signature:
    """What a record's observation says went wrong (the module docstring)."""

    status: str  # the deciding check's status: the record's verdict
    check: str  # the deciding check's property, e.g. "placement", "result", "width limit"
    stage: str  # build, runtime, placement, precision, numeric, layout
    message: str  # the deciding observation, normalised
    placement: str = ""  # e.g. "Min->CPU"; "" every layer on the NPU (or none ran)
    precision: str = ""  # e.g. "Softmax->FLOAT16"; "" as asked, or the precision not checked
    metric: str = ""  # a numeric failure's band, e.g. "cosine 0.5-0.99, mismatches >=10%"

    @property
    def key(self) -> str:
        """A short stable name: the same observation gives the same key in every run."""
        text = json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)
        return "cause-" + hashlib.sha1(text.encode()).hexdigest()[:10]

    def reading(self) -> str:
        """One line: "violation at build: build aborted (SIGABRT): ...; CPU: Min"."""
        facts = [f"{self.status} at {self.stage}: {self.message}"]
        facts += [
            f"{label} {text}"
            for label, text in (
                ("placement", self.placement),
                ("precision", self.precision),
                ("metric", self.metric),
            )
            if text
        ]
        return "; ".join(facts)

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, **asdict(self), "reading": self.reading()}


def signature(record: CaseRecord, aliases: Mapping[str, str] | None = None) -> Signature | None:
    """``record``'s cause, layer types through ``aliases``; None for a verdict not grouped."""
    if record.verdict not in GROUPED:
        return None
    seen = behaviour(record, aliases)
    check = _deciding(record)
    observed = str(check.get("observed", "")) if check else record.detail
    prop = str(check.get("prop", "")) if check else ""
    stage = _stage(seen.outcome, check)
    asked = record.dtype.upper()
    checked = any(c.get("prop") == PRECISION for c in record.checks)
    return Signature(
        status=record.verdict,
        check=prop,
        stage=stage,
        message=normalised(observed, record.platform),
        placement=", ".join(
            f"{op}->{where}" for op, where in seen.placement.items() if where != ACCELERATOR
        ),
        precision=", ".join(
            f"{op}->{dtypes}"
            for op, dtypes in seen.precision.items()
            if checked and asked not in dtypes.split(", ")
        ),
        metric=metric_class(record.metrics) if stage == "numeric" else "",
    )


def normalised(text: str, platform: str = "") -> str:
    """``text`` on one line with what varies from case to case replaced by placeholders:
    ``platform`` (the record's own), paths, hex addresses, quoted and labelled names, shapes
    and numbers."""
    text = " ".join(text.split())
    if platform:
        pattern = rf"(?i)(?<![A-Za-z0-9]){re.escape(platform)}(?![A-Za-z0-9])"
        text = re.sub(pattern, "<platform>", text)
    for pattern_, replacement in _NORMALISED:
        text = pattern_.sub(replacement, text)
    return text


def metric_class(metrics: Mapping[str, float]) -> str:
    """The band of a numeric failure: cosine similarity and the share of mismatches."""
    parts = []
    cosine = metrics.get("cosine")
    if cosine is not None:
        if math.isnan(cosine):
            parts.append("cosine not finite")
        else:
            parts.append("cosine " + next(name for low, name in _COSINE_BANDS if cosine >= low))
    count, mismatches = metrics.get("count"), metrics.get("mismatches")
    if count and mismatches is not None and not math.isnan(mismatches):
        share = mismatches / count
        parts.append("mismatches " + next(name for low, name in _MISMATCH_BANDS if share >= low))
    return ", ".join(parts)


def _deciding(record: CaseRecord) -> dict[str, Any] | None:
    """The check the verdict's detail names (``verdict_of`` writes "<prop>: <observed>")."""
    candidates = [c for c in record.checks if c.get("status") == record.verdict]
    for check in candidates:
        if record.detail.startswith(f"{check.get('prop')}: {check.get('observed')}"):
            return check
    return candidates[0] if candidates else None


def _stage(outcome: str, check: Mapping[str, Any] | None) -> str:
    if outcome != RAN:
        return outcome.split()[0]  # "build failed", "runtime aborted (SIGSEGV)"
    if check is None:
        return "placement"
    if check.get("prop") == PRECISION:
        return "precision"
    if check.get("phase") == RESULT_PHASE or check.get("status") in NUMERIC_FAILURES:
        return "numeric"
    return "layout" if check.get("phase") == LAYOUT_PHASE else "placement"


@dataclass(frozen=True)
class Cause:
    """The records of one signature, in case order; the first is the example."""

    signature: Signature
    records: tuple[CaseRecord, ...]
    bundle: str | None = None  # the example's bundle folder, relative, when one exists

    @property
    def example(self) -> CaseRecord:
        return self.records[0]

    @property
    def failing(self) -> bool:
        return self.signature.status in FAILING_VERDICTS

    def values(self, field: str) -> list[str]:
        """The distinct values of a record field over the cases, e.g. "platform", "sdk"."""
        return sorted({str(getattr(record, field)) for record in self.records} - {""})

    @property
    def known(self) -> int:
        """Cases matched by a known-issues entry that behaved as expected."""
        return sum(map(as_expected, self.records))

    @property
    def fails_run(self) -> bool:
        """A failing cause with a case no known issue expected: what keeps a run from green."""
        return self.failing and self.known < len(self.records)

    def line(self) -> str:
        """ "cause-1a2b3c4d5e: 12 cases (rk3562, rk3588; MaxPool): wrong-result at ..." """
        where = "; ".join(", ".join(self.values(field)) for field in ("platform", "op"))
        return (
            f"{self.signature.key}: {len(self.records)} cases ({where}): {self.signature.reading()}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            **self.signature.to_json(),
            "cases": len(self.records),
            "known": self.known,
            **{f"{field}s": self.values(field) for field in ("platform", "op", "dtype", "sdk")},
            "example": record_key(self.example),
            "bundle": self.bundle,
            "records": [record_key(record) for record in self.records],
        }


def causes(
    records: Iterable[CaseRecord],
    aliases: Mapping[str, str] | None = None,
    bundles: Mapping[str, str] | None = None,
) -> list[Cause]:
    """The causes of ``records``, most severe status first, then most cases first; a cause's
    example is its first case (by ``example_order``) that has a bundle in ``bundles``
    (``record_key`` -> bundle folder), else its first case."""
    found: dict[Signature, list[CaseRecord]] = {}
    for record in records:
        sig = signature(record, aliases)
        if sig is not None:
            found.setdefault(sig, []).append(record)
    bundles = bundles or {}
    result = []
    for sig, members in found.items():
        members.sort(key=example_order)
        bundled = [record for record in members if record_key(record) in bundles]
        first = bundled[0] if bundled else members[0]
        ordered = (first, *(record for record in members if record is not first))
        result.append(Cause(sig, ordered, bundles.get(record_key(first))))
    result.sort(
        key=lambda c: (SEVERITY.index(c.signature.status), -len(c.records), c.signature.key)
    )
    return result


def as_expected(record: CaseRecord) -> bool:
    """A known issue that behaved as its entry records (the run's xfail)."""
    return (record.known or {}).get("status") == "as-expected"


def example_order(record: CaseRecord) -> tuple[bool, str]:
    """Which case of a cause shows it: an unknown one before a known issue, then by key."""
    return (bool(record.known), record_key(record))


@dataclass(frozen=True)
class CauseChanges:
    """The failing causes of two runs: only in the new one, only in the old one, in both."""

    new: list[Cause]
    gone: list[Cause]
    kept: int

    def line(self) -> str:
        """ "failing causes: 1 new, 2 gone, 13 in both", then a line per new and gone cause."""
        lines = [f"failing causes: {len(self.new)} new, {len(self.gone)} gone, {self.kept} in both"]
        lines += [f"new cause {cause.line()}" for cause in self.new]
        lines += [f"gone cause {cause.line()}" for cause in self.gone]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "new": [cause.to_json() for cause in self.new],
            "gone": [cause.to_json() for cause in self.gone],
            "kept": self.kept,
        }


def cause_changes(
    old: Iterable[CaseRecord],
    new: Iterable[CaseRecord],
    aliases: Mapping[str, str] | None = None,
    key: Callable[[CaseRecord], str] = attrgetter("id"),
) -> CauseChanges:
    """Which failing causes appeared and which went between ``old`` and ``new``, by signature:
    a cause met by other cases (other values, platforms, SDKs) is the same cause. A cause of
    ``old`` is gone only when ``new`` ran one of its cases (matched by ``key``): a case not
    run again says nothing."""
    old, new = list(old), list(new)
    before = {cause.signature.key: cause for cause in causes(old, aliases) if cause.failing}
    after = {cause.signature.key: cause for cause in causes(new, aliases) if cause.failing}
    ran = {key(record) for record in new}
    gone = [
        cause
        for name, cause in before.items()
        if name not in after and any(key(record) in ran for record in cause.records)
    ]
    return CauseChanges(
        new=[cause for name, cause in after.items() if name not in before],
        gone=gone,
        kept=len(before.keys() & after.keys()),
    )
