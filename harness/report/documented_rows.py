"""Documented rows in a report: every row of a vendor's document per platform group, and
what was seen.

The rows come from the run's metadata (``run.json`` key ``DOCUMENTED_KEY``, written when the
run started from ``Vendor.documented``): titled groups, each with its platform group's name,
targets, the document the rows are from and the rows in the document's order. One section per
(backend, group) whose records have checks citing those rows, under the vendor's title. Under
each row, per documented property, how many checks cite the row with each status, one example
per status (case value, documented value, observation), and for properties the backend cannot
observe the reason instead. A row no case cited says so.

Results written before the groups carried a title hold them under ``OLD_KEY``; they are shown
under ``UNTITLED``. The report's templates write the sections (``templates/documented.html``,
the ``documented`` macro of ``templates/report.md``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.documented.properties import RESULT
from harness.judge.verdict import SEVERITY, UNOBSERVED
from harness.results.records import CaseRecord

# run.json: [{"title", "document", "group", "targets", "rows": [{"limit", "kind", "text"}]}]
DOCUMENTED_KEY = "documented_rows"
OLD_KEY = "model_io"  # the same groups without title and document, as older runs wrote them
UNTITLED = {"title": "Documented rows", "document": "document"}
NOT_RUN = "not run"
STATUS_ORDER = (*SEVERITY, UNOBSERVED, NOT_RUN)


@dataclass(frozen=True)
class Example:
    status: str
    value: str  # the case's probed value, e.g. "c=3 w=33"
    documented: str
    observed: str


@dataclass(frozen=True)
class PropertySummary:
    prop: str
    counts: dict[str, int]  # status -> checks, in STATUS_ORDER
    examples: list[Example]  # one per status

    @property
    def status(self) -> str:
        return _worst(self.counts)


@dataclass(frozen=True)
class DocumentedRow:
    limit: str
    kind: str
    text: str  # the row as the seed prints it
    properties: list[PropertySummary]

    @property
    def status(self) -> str:
        """The worst status of the row's own properties; a failing result check outranks them,
        a passing one cannot stand in for a property the backend could not observe."""
        own = Counter(p.status for p in self.properties if p.prop != RESULT)
        result = Counter(p.status for p in self.properties if p.prop == RESULT)
        if not own:
            return _worst(result)
        worst, failing = _worst(own), _worst(result)
        if failing != "confirmed" and STATUS_ORDER.index(failing) < STATUS_ORDER.index(worst):
            return failing
        return worst


@dataclass(frozen=True)
class DocumentedSection:
    title: str  # the vendor's, e.g. "Model I/O"
    document: str  # what the rows are from, e.g. "seed 003"
    backend: str
    group: str
    platforms: list[str]
    rows: list[DocumentedRow]

    @property
    def counts(self) -> dict[str, int]:
        found = Counter(row.status for row in self.rows)
        return {status: found[status] for status in STATUS_ORDER if found[status]}


def _worst(counts: Counter[str] | dict[str, int]) -> str:
    return next((s for s in STATUS_ORDER if counts.get(s)), NOT_RUN)


def documented_groups(meta: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The run metadata's groups of documented rows, an older run's (``OLD_KEY``) untitled."""
    old = [{**UNTITLED, **group} for group in meta.get(OLD_KEY, [])]
    return [*meta.get(DOCUMENTED_KEY, []), *old]


def documented_sections(
    records: Iterable[CaseRecord], groups: Iterable[Mapping[str, Any]]
) -> list[DocumentedSection]:
    """One section per (group, backend) whose records have checks citing its rows; ``groups``
    are ``documented_groups`` of the run metadata."""
    found = list(records)
    sections = []
    for group in groups:
        cited = {row["limit"] for row in group["rows"]}
        mine = [
            r
            for r in found
            if r.platform in group["targets"] and any(cited & set(c["limits"]) for c in r.checks)
        ]
        for backend in sorted({r.backend for r in mine}):
            ran = [r for r in mine if r.backend == backend]
            rows = [_row(row["limit"], row["kind"], row["text"], ran) for row in group["rows"]]
            platforms = sorted({r.platform for r in ran})
            title, document = group["title"], group["document"]
            sections.append(
                DocumentedSection(title, document, backend, group["group"], platforms, rows)
            )
    return sorted(sections, key=lambda s: (s.title, s.backend, s.group))


def _row(limit: str, kind: str, text: str, records: list[CaseRecord]) -> DocumentedRow:
    by_prop: dict[str, list[tuple[CaseRecord, dict[str, Any]]]] = defaultdict(list)
    for record in records:
        for check in record.checks:
            if limit in check["limits"]:
                by_prop[check["prop"]].append((record, check))
    properties = []
    for prop, cited in by_prop.items():
        counts = Counter(check["status"] for _, check in cited)
        examples: dict[str, Example] = {}
        for record, check in cited:
            examples.setdefault(
                check["status"],
                Example(check["status"], record.value, check["documented"], check["observed"]),
            )
        ordered = [s for s in STATUS_ORDER if counts[s]]
        properties.append(
            PropertySummary(prop, {s: counts[s] for s in ordered}, [examples[s] for s in ordered])
        )
    return DocumentedRow(limit, kind, text, properties)


def counts_text(counts: dict[str, int]) -> str:
    """ "confirmed 3, doc-drift 1": checks or rows per status, as the reports write them."""
    return ", ".join(f"{status} {n}" for status, n in counts.items())
