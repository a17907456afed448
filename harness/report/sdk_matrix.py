"""What changed between SDK releases: per documented limit, the verdicts on each SDK side by side.

A results directory holding records of several SDKs (``pytest suites --sdk 2.3.2,2.5.0``) gets
this section. Each SDK is compared with the next newer one, case by case (the same case id);
a transition is classified, and limits with a change come first, in the order of ``KINDS``:
the changes a user of the new release most needs to know about lead. A case whose verdict
stays but whose behaviour changed (build outcome, placement or precision per layer type,
numeric result: ``harness.report.behaviour``) is a change too, in words; one whose layers
differ only by the compiler's internals (renames in the vendor's alias table, an operator
tiled into several layers) is counted apart.

Each SDK is judged against its own release's document where the vendor published one (the
record's ``source["judged_against"]``, with a ``fallback`` where it did not), and a change
says whether the document changed between the two releases (their documents read the case's
limit differently) or the behaviour did (same reading, another verdict).
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from harness.judge.verdict import FAILING_VERDICTS
from harness.report.behaviour import behaviour, differences, in_words, internal_only
from harness.report.cells import natural_key, verdict_counts
from harness.results.records import CaseRecord

# Change kinds, most important first: (kind, what the report calls it).
KINDS: tuple[tuple[str, str], ...] = (
    ("no-longer-enforced", "limit enforced before, no longer"),
    ("violation-fixed", "violation fixed"),
    ("new-wrong-result", "new wrong result"),
    ("new-build-failure", "new build failure"),
    ("new-violation", "new violation"),
    ("behaviour-changed", "same verdict, behaviour changed"),
    ("newly-enforced", "limit enforced now"),
    ("wrong-result-fixed", "wrong result fixed"),
    ("verdict-changed", "other verdict change"),
)
_RANK = {kind: rank for rank, (kind, _) in enumerate(KINDS)}


@dataclass(frozen=True)
class SdkChange:
    """One case whose verdict differs between two SDKs (``old`` the older release)."""

    case_id: str
    kind: str
    old_sdk: str
    new_sdk: str
    old: str  # verdict
    new: str
    # what was observed differently, in words: "build aborted (SIGABRT) on 2.3.0 (built and
    # ran on 2.2.0)"
    what: tuple[str, ...] = ()
    document: str = ""  # how the two releases' documents read the limit differently; "": alike

    @property
    def cause(self) -> str:
        return (
            f"the document changed ({self.document})" if self.document else "the behaviour changed"
        )


@dataclass(frozen=True)
class LimitRow:
    """One documented limit: its cases' verdict counts per SDK and the changes between SDKs."""

    limit: str
    op: str
    counts: dict[str, dict[str, int]]  # sdk -> verdict -> cases (verdicts in VERDICTS order)
    changes: list[SdkChange]
    internals: int = 0  # transitions whose only difference is the compiler's internals

    @property
    def rank(self) -> int:
        return min((_RANK[change.kind] for change in self.changes), default=len(KINDS))


@dataclass(frozen=True)
class SdkMatrix:
    sdks: list[str]  # oldest first
    documents: str  # what every SDK was judged against (run.json ``documents``)
    rows: list[LimitRow]  # limits with changes first (by the most important change), then the rest
    totals: dict[str, dict[str, int]]  # sdk -> verdict -> cases
    # sdk -> (document, or "fallback: why") -> cases judged against it
    judged: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def changes(self) -> list[SdkChange]:
        return [change for row in self.rows for change in row.changes]

    @property
    def internals(self) -> int:
        return sum(row.internals for row in self.rows)


def sdk_key(sdk: str) -> tuple[tuple[int, int | str], ...]:
    """Release order: 2.3.2 before 2.10.0; "" (journals without SDKs) first."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in sdk.split(".") if p)


def sdks_of(records: Iterable[CaseRecord]) -> list[str]:
    return sorted({record.sdk for record in records}, key=sdk_key)


def classify(old: CaseRecord, new: CaseRecord) -> str | None:
    """The kind of change from ``old`` (older SDK) to ``new``, or None when the verdict holds."""
    if old.verdict == new.verdict:
        return None
    if old.verdict == "limit-confirmed" and new.verdict == "doc-drift":
        return "no-longer-enforced"
    if old.verdict == "violation" and new.verdict not in FAILING_VERDICTS:
        return "violation-fixed"
    if new.verdict == "wrong-result":
        return "new-wrong-result"
    if _build_failed(new) and not _build_failed(old):
        return "new-build-failure"
    if new.verdict == "violation":
        return "new-violation"
    if old.verdict == "doc-drift" and new.verdict == "limit-confirmed":
        return "newly-enforced"
    if old.verdict == "wrong-result" and new.verdict not in FAILING_VERDICTS:
        return "wrong-result-fixed"
    return "verdict-changed"


def _build_failed(record: CaseRecord) -> bool:
    return behaviour(record).outcome.startswith("build ")


def build_sdk_matrix(
    records: list[CaseRecord], documents: str = "", aliases: Mapping[str, str] | None = None
) -> SdkMatrix | None:
    """The side-by-side view, or None when the records come from fewer than two SDKs;
    ``documents`` names the documents the catalogue transcribes, ``aliases`` the vendor's
    layer renames (compiled type -> the type it stands for)."""
    sdks = sdks_of(records)
    if len(sdks) < 2:
        return None
    by_limit: dict[tuple[str, str], list[CaseRecord]] = defaultdict(list)
    for record in records:
        by_limit[(record.limit, record.op)].append(record)
    rows = [_row(limit, op, cases, sdks, aliases or {}) for (limit, op), cases in by_limit.items()]
    rows.sort(key=lambda row: (row.rank, natural_key(row.limit)))
    totals = {sdk: _counts(r for r in records if r.sdk == sdk) for sdk in sdks}
    judged = {sdk: _judged(r for r in records if r.sdk == sdk) for sdk in sdks}
    return SdkMatrix(sdks, documents, rows, totals, judged)


def _judged(records: Iterable[CaseRecord]) -> dict[str, int]:
    """Documents and fallbacks, each with its number of cases (sections left out)."""
    out: dict[str, int] = defaultdict(int)
    for record in records:
        if "judged_against" in record.source:
            out[record.source["judged_against"].split(" § ")[0]] += 1
        if "fallback" in record.source:
            out["fallback: " + re.sub(r" \(.*?§.*\)$", "", record.source["fallback"])] += 1
    return dict(out)


def _document_change(old: CaseRecord, new: CaseRecord) -> str:
    """How the two releases' documents read the case's limit differently ("" when alike)."""
    for record in (old, new):
        if "document_changed" in record.source:
            return record.source["document_changed"]
    before, after = old.source.get("document_reading"), new.source.get("document_reading")
    return f"{before} -> {after}" if before and after and before != after else ""


def _row(
    limit: str, op: str, records: list[CaseRecord], sdks: list[str], aliases: Mapping[str, str]
) -> LimitRow:
    by_case: dict[str, dict[str, CaseRecord]] = defaultdict(dict)
    for record in records:
        by_case[record.id][record.sdk] = record
    changes = []
    internals = 0
    for case_id in sorted(by_case, key=natural_key):
        ran = [sdk for sdk in sdks if sdk in by_case[case_id]]
        for old_sdk, new_sdk in itertools.pairwise(ran):
            old, new = by_case[case_id][old_sdk], by_case[case_id][new_sdk]
            found = differences(behaviour(old, aliases), behaviour(new, aliases))
            what = tuple(in_words(*change, old_sdk, new_sdk) for change in found)
            kind = classify(old, new) or ("behaviour-changed" if found else None)
            if kind is not None:
                changes.append(
                    SdkChange(
                        case_id,
                        kind,
                        old_sdk,
                        new_sdk,
                        old.verdict,
                        new.verdict,
                        what,
                        _document_change(old, new),
                    )
                )
            elif internal_only(old, new, aliases):
                internals += 1
    changes.sort(key=lambda change: (_RANK[change.kind], natural_key(change.case_id)))
    counts = {sdk: _counts(r for r in records if r.sdk == sdk) for sdk in sdks}
    return LimitRow(limit, op, counts, changes, internals)


def _counts(records: Iterable[CaseRecord]) -> dict[str, int]:
    return {verdict: n for verdict, n in verdict_counts(records).items() if n}


def kind_label(kind: str) -> str:
    return dict(KINDS)[kind]


def counts_text(counts: dict[str, int]) -> str:
    """'confirmed 3, violation 1'; '-' when the SDK ran no case of the limit."""
    return ", ".join(f"{verdict} {n}" for verdict, n in counts.items()) or "-"


DOCUMENTS_KEY = "documents"  # run.json: the vendor documents the catalogue transcribes


def judged_against(matrix: SdkMatrix) -> str:
    if not any(matrix.judged.values()):  # records written before SDKs had their own documents
        documents = matrix.documents or "the documents the catalogue transcribes"
        return (
            f"Every SDK is judged against the same documents: {documents}. An older SDK's "
            "verdicts say how it measures up to those documents, not to its own release's."
        )
    parts = [
        f"SDK {sdk}: " + "; ".join(f"{what} ({n} cases)" for what, n in judged.items())
        for sdk, judged in matrix.judged.items()
    ]
    return "Each SDK is judged against its own release's document where there is one. " + (
        ". ".join(parts) + "."
    )


def summary_table(matrix: SdkMatrix) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of plain text: all cases' verdict counts per SDK."""
    header = ["", *(f"SDK {sdk}" for sdk in matrix.sdks)]
    return header, [["all cases", *(counts_text(matrix.totals[sdk]) for sdk in matrix.sdks)]]


def limit_table(matrix: SdkMatrix) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of plain text, one row per limit, changed limits first; the changes cell
    holds one line per changed case."""
    header = ["limit", "operator", *(f"SDK {sdk}" for sdk in matrix.sdks), "changes"]
    rows = [
        [
            row.limit,
            row.op,
            *(counts_text(row.counts[sdk]) for sdk in matrix.sdks),
            "\n".join(
                f"{kind_label(c.kind)}: {c.case_id}: {c.old} on {c.old_sdk} -> {c.new} on "
                f"{c.new_sdk}" + "".join(f"; {words}" for words in c.what) + f"; {c.cause}"
                for c in row.changes
            ),
        ]
        for row in matrix.rows
    ]
    return header, rows


def headline(matrix: SdkMatrix) -> str:
    changed = sum(1 for row in matrix.rows if row.changes)
    by_document = sum(1 for change in matrix.changes if change.document)
    return (
        f"{changed} documented limits changed verdict or behaviour between SDKs "
        f"({len(matrix.changes)} case changes: {by_document} where the document changed, "
        f"{len(matrix.changes) - by_document} where the behaviour did); they come first. "
        f"Compiler internals: {matrix.internals} (layers renamed or tiled differently, the same "
        "behaviour; not counted as changes)."
    )
