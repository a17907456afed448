"""Records grouped for reporting: per (backend, platform) an operator x limit x dtype matrix.

Both renderers (Markdown, HTML) and the diff read records only through this module, so what a
cell shows and how placement is summarised is decided once.
"""

from __future__ import annotations

import hashlib
import re
import textwrap
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.documented.properties import PRECISION
from harness.judge.verdict import ERROR_VERDICTS, FAILING_VERDICTS, KINDS, SEVERITY
from harness.report.baseline import BaselineChanges
from harness.report.causes import Cause, as_expected
from harness.report.cells import format_number, natural_key, verdict_counts
from harness.report.cut_short import cut_short
from harness.report.documented_rows import (
    DOCUMENTED_KEY,
    OLD_KEY,
    DocumentedSection,
    documented_groups,
    documented_sections,
)
from harness.report.sdk_matrix import SdkMatrix
from harness.report.untested import untested_in_run
from harness.results.probes import ProbeRecord
from harness.results.records import CaseRecord, record_key

UNPROBED_KEY = "unprobed"  # run.json: [{"limit": id, "reason": text}, ...]
# run.json: [{"model": name, "reason": "not runnable: ..." | "not selected: ..."}] (--models)
MODELS_NOT_RUN_KEY = "models_not_run"
# run.json: the configured boards that were down at the start, {"board", "address", "status",
# "problem", "cases": "simulator" (--board-fallback simulator) or "not run" (the run stopped)}
BOARD_DOWN_KEY = "board_down"
LEFT_OUT_KEY = "left_out"  # run.json: [{"id": case id, "reason": text}, ...] not run (tier)
# run.json entries the run header shows (the others go to the collapsed run details)
HEADER_KEYS = (
    "started",
    "platform",
    "tier",
    "shard",
    "baseline",
    "known_issues",
    "versions",
    "boards",
)
DISAGREEMENT = "reference-disagreement"
CHANGED = "changed"  # CaseRecord.known["status"] of a known issue that behaves differently now
# One letter per verdict for the matrix cells (a legend names them), in the reports' order
SHORT = {word: kind.letter for word, kind in KINDS.items()}
# The board versions (run.json "boards") the header shows, with their titles, besides those
# the board's runtime names in its discovery report (``versions_shown``)
_BOARD_VERSIONS = (("runtime_library", "runtime library"), ("npu_driver", "driver"))
CAUSE_WIDTH = 96  # characters of a failure's one-line cause: one line at 1280 px


@dataclass(frozen=True)
class Row:
    op: str
    limit: str
    cells: dict[str, list[CaseRecord]]  # dtype -> the cases probing this limit, by value

    def anchor(self, backend: str, platform: str, dtype: str) -> str:
        """The id of this cell's details in the HTML report."""
        return "cell-" + _slug(f"{backend}-{platform}-{self.limit}-{dtype}")


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
    def records(self) -> list[CaseRecord]:
        """Every case of the section, row by row."""
        return [case for row in self.rows for cases in row.cells.values() for case in cases]

    @property
    def title(self) -> str:
        """E.g. "rk3562 on simulator, SDK 2.3.2" (plain text)."""
        return section_title(self.platform, self.backend, self.sdk)

    @property
    def where(self) -> str:
        """E.g. "rk3562/simulator" or "rk3562/simulator, SDK 2.3.2" (plain text)."""
        on_sdk = f", SDK {self.sdk}" if self.sdk else ""
        return f"{self.platform}/{self.backend}{on_sdk}"

    @property
    def by_op(self) -> list[tuple[str, list[Row], list[CaseRecord]]]:
        """(operator, its rows, its cases) of the section, operators in the rows' order."""
        rows: dict[str, list[Row]] = {}
        for row in self.rows:
            rows.setdefault(row.op, []).append(row)
        return [
            (op, mine, [case for row in mine for cases in row.cells.values() for case in cases])
            for op, mine in rows.items()
        ]

    def anchor(self, row: Row, dtype: str) -> str:
        """The id of a cell's details in the HTML report, unique across SDK sections."""
        where = f"{self.backend}-{self.sdk}" if self.sdk else self.backend
        return row.anchor(where, self.platform, dtype)


def section_title(platform: str, backend: str, sdk: str) -> str:
    """The title of the section holding a record: "rk3562 on simulator, SDK 2.3.2"."""
    on_sdk = f", SDK {sdk}" if sdk else ""
    return f"{platform} on {backend}{on_sdk}"


# The verdicts that fail a run unless a known issue or the baseline excuses them, most severe
# first (the errors are no test failures, yet the run is not green)
RUN_FAILING = tuple(v for v in SEVERITY if v in FAILING_VERDICTS or v in ERROR_VERDICTS)
# A cell's colour and word when its worst cases are known issues behaving as recorded: they
# do not fail the run, so they are not drawn as its failures are
KNOWN = "known"


def letter(verdict: str) -> str:
    """A verdict's letter in the cells; a verdict the legend does not list keeps its word."""
    return SHORT.get(verdict, verdict)


def worst_first(cases: Iterable[CaseRecord]) -> dict[str, int]:
    """Cases per verdict, the most severe first."""
    return _counted(cases, SEVERITY)


def in_short_order(cases: Iterable[CaseRecord]) -> dict[str, int]:
    """Cases per verdict in SHORT's (the legend's) order."""
    return _counted(cases, SHORT)


def _counted(cases: Iterable[CaseRecord], order: Iterable[str]) -> dict[str, int]:
    """Cases per verdict in ``order``, then the verdicts it does not list (a verdict newer
    than the report's letters is shown, not dropped)."""
    found = Counter(case.verdict for case in cases)
    listed = list(order)
    return {v: found[v] for v in [*listed, *sorted(set(found) - set(listed))] if found[v]}


def cell_colour(cases: list[CaseRecord]) -> str:
    """The verdict a cell of ``cases`` is coloured by: its most severe verdict, but KNOWN when
    the cases that would fail the run are all known issues behaving as recorded."""
    worst = next(iter(worst_first(case for case in cases if not as_expected(case))), KNOWN)
    return worst if worst in RUN_FAILING or not any(map(as_expected, cases)) else KNOWN


def chip_counts(cases: Iterable[CaseRecord]) -> list[tuple[str, int, bool]]:
    """(verdict, cases, known) per verdict, the most severe first: the cases known issues
    expected counted apart, so they are drawn as known."""
    cases = list(cases)
    known = worst_first(case for case in cases if as_expected(case))
    judged = worst_first(case for case in cases if not as_expected(case))
    return [
        (verdict, n, is_known)
        for verdict in worst_first(cases)
        for n, is_known in ((judged.get(verdict, 0), False), (known.get(verdict, 0), True))
        if n
    ]


@dataclass(frozen=True)
class OverviewCell:
    """One operator in one section: its cases per verdict, its colour (``cell_colour``: a
    green run's known violations do not paint it as violations), how many known issues
    behaved as recorded, and where its first heat-map cell is."""

    counts: dict[str, int]  # verdict -> cases, in SHORT's order (others last)
    verdict: str  # ``cell_colour``: a verdict or KNOWN
    known: int
    anchor: str

    @property
    def chip(self) -> str:
        """E.g. ``13C 2V (2 known)``: counts by verdict letter, then the known issues."""
        return letters(self.counts) + (f" ({self.known} known)" if self.known else "")


def letters(counts: Mapping[str, int]) -> str:
    """ "13C 2V": cases per verdict in the cells' letters."""
    return " ".join(f"{n}{letter(verdict)}" for verdict, n in counts.items())


def overview_cell(cases: list[CaseRecord], anchor: str) -> OverviewCell:
    return OverviewCell(
        counts=in_short_order(cases),
        verdict=cell_colour(cases),
        known=sum(map(as_expected, cases)),
        anchor=anchor,
    )


@dataclass(frozen=True)
class OverviewRow:
    op: str
    cells: list[OverviewCell | None]  # one per section of the report, None: no case there


def overview(sections: list[Section]) -> list[OverviewRow]:
    """Operators × sections (platform, backend, SDK), operators in name order."""
    ops = sorted({row.op for section in sections for row in section.rows}, key=natural_key)
    result = []
    for op in ops:
        cells: list[OverviewCell | None] = []
        for section in sections:
            rows = [row for row in section.rows if row.op == op]
            cases = [
                case for row in rows for dtype_cases in row.cells.values() for case in dtype_cases
            ]
            if not cases:
                cells.append(None)
                continue
            first = rows[0]
            anchor = section.anchor(first, next(d for d in section.dtypes if d in first.cells))
            cells.append(overview_cell(cases, anchor))
        result.append(OverviewRow(op, cells))
    return result


@dataclass(frozen=True)
class Failure:
    """A failing case, or a known issue that behaves differently now (whatever its verdict)."""

    record: CaseRecord
    bundle: str | None  # bundle folder relative to the results directory, when one exists

    @property
    def cause(self) -> str:
        return one_line_cause(self.record)

    @property
    def known(self) -> str:
        """ "" (no known issue), "as-expected" or "changed"."""
        return str((self.record.known or {}).get("status", ""))


@dataclass(frozen=True)
class Untested:
    """Documented limits of one operator property no case probes, for one reason (or the
    same reason with other numbers): one row for what would be near-duplicate rows."""

    op: str
    prop: str  # the limit id's last part, e.g. "quantization", "hidden_size"
    roles: list[str]  # the middle parts, e.g. ["X", "Z"]
    reasons: list[str]  # distinct reasons, in catalogue order


@dataclass(frozen=True)
class Report:
    header: list[tuple[str, str]]  # the run in a few (key, text) pairs
    details: list[tuple[str, str]]  # the rest of run.json, shown collapsed
    counts: dict[str, int]
    sections: list[Section]
    failures: list[Failure]  # new failures first, then changed and expected known issues
    overview: list[OverviewRow] = field(default_factory=list)  # operators × sections
    known: dict[str, int] = field(default_factory=dict)  # verdict -> cases known as expected
    baseline: BaselineChanges | None = None  # None: the run names no baseline
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (case id, why)
    models_not_run: list[tuple[str, str]] = field(default_factory=list)  # (model, why)
    # the vendor's documented rows per platform group
    documented: list[DocumentedSection] = field(default_factory=list)
    # Documented limits no case probes, for the operators that ran (run.json "unprobed")
    unprobed: list[Untested] = field(default_factory=list)
    # Cases whose host references disagree: neither pass nor fail, listed with both values
    disagreements: list[CaseRecord] = field(default_factory=list)
    probes: list[ProbeRecord] = field(default_factory=list)  # ``hil probe``'s bounds
    # Records of several SDKs: per limit, the verdicts side by side (None for one SDK)
    sdk_matrix: SdkMatrix | None = None
    records: list[CaseRecord] = field(default_factory=list)  # every record, in case-id order
    causes: list[Cause] = field(default_factory=list)  # failures and findings by cause


def build_report(
    records: list[CaseRecord],
    meta: Mapping[str, Any],
    bundles: Mapping[str, str],
    baseline: BaselineChanges | None = None,
) -> Report:
    """Group records for rendering; ``bundles`` maps case id -> bundle folder (relative)."""
    ordered = sorted(records, key=lambda r: natural_key(r.id))
    failures = [
        Failure(record, bundles.get(record_key(record)))
        for record in ordered
        if record.verdict in FAILING_VERDICTS or (record.known or {}).get("status") == CHANGED
    ]
    failures.sort(key=lambda f: ("", CHANGED).index(f.known) if f.known != "as-expected" else 2)
    known = Counter(r.verdict for r in records if as_expected(r))
    grouped = sections(records)
    return Report(
        header=run_header(records, meta),
        details=run_details(meta),
        counts=verdict_counts(records),
        sections=grouped,
        failures=failures,
        overview=overview(grouped),
        known=dict(known),
        baseline=baseline,
        left_out=[(item["id"], item["reason"]) for item in meta.get(LEFT_OUT_KEY, [])],
        models_not_run=[(m["model"], m["reason"]) for m in meta.get(MODELS_NOT_RUN_KEY, [])],
        documented=documented_sections(records, documented_groups(meta)),
        unprobed=unprobed_groups(
            [*meta.get(UNPROBED_KEY, []), *untested_in_run(records)], {r.op for r in records}
        ),
        disagreements=[record for record in ordered if record.verdict == DISAGREEMENT],
        records=ordered,
    )


def not_run_counts(report: Report) -> str:
    """ "3 not runnable, 1400 not selected": the models not run, by why."""
    whys = Counter(why.split(":", 1)[0] for _, why in report.models_not_run)
    return ", ".join(f"{count} {why}" for why, count in sorted(whys.items()))


def one_line_cause(record: CaseRecord) -> str:
    """The check that decided the verdict and what it saw, on one line, with what really
    decides a case that cannot probe its limit alone."""
    check = next((c for c in record.checks if c["status"] == record.verdict), None)
    text = f"{check['prop']}: {check['observed']}" if check else record.detail
    note = f" [not isolable: {record.not_isolable}]" if record.not_isolable else ""
    return textwrap.shorten(text, max(CAUSE_WIDTH - len(note), 40), placeholder=" ...") + note


def unprobed_groups(entries: Iterable[Mapping[str, str]], ops: set[str]) -> list[Untested]:
    """run.json's unprobed limits of the operators in ``ops``, one row per operator, property
    and reason (numbers in the reason aside), in catalogue order."""
    groups: dict[tuple[str, str, str], Untested] = {}
    for entry in entries:
        parts = entry["limit"].split("/")
        op, roles, prop = parts[0], parts[1:-1], parts[-1]
        if op not in ops:
            continue
        group = groups.setdefault(
            (op, prop, re.sub(r"\d+", "#", entry["reason"])), Untested(op, prop, [], [])
        )
        for role in ["/".join(roles)] if roles else []:
            if role not in group.roles:
                group.roles.append(role)
        if entry["reason"] not in group.reasons:
            group.reasons.append(entry["reason"])
    return list(groups.values())


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


def run_header(records: list[CaseRecord], meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Platforms, backends, start, tier, shard, cases (and those left out), versions,
    baseline and known-issues file: what the records and run.json say, each once."""
    versions: dict[str, set[str]] = defaultdict(set)
    for source in [meta.get("versions", {}), *(record.versions for record in records)]:
        for name, version in source.items():
            versions[name].add(str(version))
    cases = str(len(records))
    if meta.get(LEFT_OUT_KEY):
        cases += f" ({len(meta[LEFT_OUT_KEY])} left out: slower tier)"
    if meta.get(MODELS_NOT_RUN_KEY):
        cases += f" ({len(meta[MODELS_NOT_RUN_KEY])} models not run)"
    header = [
        ("cut short", cut_short(records, meta)),
        ("board down", "; ".join(map(_board_down, meta.get(BOARD_DOWN_KEY, [])))),
        (
            "platforms",
            ", ".join(sorted({r.platform for r in records} or {meta.get("platform", "")})),
        ),
        ("backends", ", ".join(sorted({r.backend for r in records}))),
        ("started", str(meta.get("started", ""))),
        ("tier", str(meta.get("tier", ""))),
        ("shard", shard_text(meta.get("shard"))),
        ("cases", cases),
        ("versions", ", ".join(f"{n} {'/'.join(sorted(versions[n]))}" for n in sorted(versions))),
        ("boards", "; ".join(map(_board_versions, meta.get("boards", [])))),
        ("baseline", _text(meta["baseline"]) if meta.get("baseline") else "none"),
        ("known issues", _text(meta["known_issues"]) if meta.get("known_issues") else "none"),
    ]
    return [(key, text) for key, text in header if text]


def _board_down(down: Mapping[str, Any]) -> str:
    """A board that was down at the start, and where its cases went."""
    cases = (
        "its cases ran on the simulator (--board-fallback simulator)"
        if down.get("cases") == "simulator"
        else "the run stopped before any case"
    )
    return (
        f"{down.get('board')} ({down.get('address')}) {down.get('status')}: "
        f"{down.get('problem')}: {cases}"
    )


def _board_versions(report: Mapping[str, Any]) -> str:
    """One board of run.json: its status and the versions the version check compared."""
    shown = dict(_BOARD_VERSIONS)
    for key, title in report.get("versions_shown", []):
        shown.setdefault(key, title)
    versions = ", ".join(
        f"{title} {report[key]}"
        for key, title in shown.items()
        if report.get(key, "unknown") != "unknown"
    )
    warnings = len(report.get("version_warnings", []))
    text = f"{report.get('board')} {report.get('status')}" + (f" ({versions})" if versions else "")
    return text + (f", {warnings} version warning(s)" if warnings else "")


def shard_text(shard: Mapping[str, Any] | None) -> str:
    """``--shard``: "2/4" for one shard; "1, 2, 4 of 4 merged (missing: 3)" for several."""
    if not shard:
        return ""
    if "indices" not in shard:
        return f"{shard['index']}/{shard['count']}"
    indices = shard["indices"]
    missing = sorted(set(range(1, shard["count"] + 1)) - set(indices))
    text = f"{', '.join(map(str, indices))} of {shard['count']} merged"
    return text + (f" (missing: {', '.join(map(str, missing))})" if missing else "")


def run_details(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    """run.json's entries the header and the sections do not show."""
    shown = {*HEADER_KEYS, UNPROBED_KEY, DOCUMENTED_KEY, OLD_KEY, LEFT_OUT_KEY}
    shown.add(MODELS_NOT_RUN_KEY)
    return [(key, _text(meta[key])) for key in sorted(meta) if key not in shown]


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
        ("warnings", "; ".join(record.warnings)),
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


def _slug(text: str) -> str:
    """Readable and unique: the text's safe characters plus a short hash of all of it (a
    stored id's lone surrogate hashed too)."""
    readable = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:80]
    return f"{readable}-{hashlib.sha1(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def case_anchor(record: CaseRecord) -> str:
    """The id of a case's card in the HTML report."""
    return "case-" + _slug(f"{record.backend}-{record_key(record)}")


CASE_PAGES = "report-cases"  # beside report.html: the case cards, one page per section


def case_page(backend: str, platform: str, sdk: str) -> str:
    """The page holding one section's case cards, relative to report.html."""
    where = f"{platform}-{backend}-{sdk}" if sdk else f"{platform}-{backend}"
    return f"{CASE_PAGES}/{_slug(where)}.html"


def case_href(record: CaseRecord) -> str:
    """A link from report.html to a case's card."""
    return f"{case_page(record.backend, record.platform, record.sdk)}#{case_anchor(record)}"


def cell_href(section: Section, anchor: str) -> str:
    """A link from report.html to a heat-map cell's cases (``Section.anchor``)."""
    return f"{case_page(section.backend, section.platform, section.sdk)}#{anchor}"
