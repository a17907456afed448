"""report.html: one self-contained file (inline CSS, no scripts, no external assets).

The page is ``SECTIONS`` in order, each a function of the ``Report`` returning HTML: what
matters first (run header, verdict counts, causes, changes against the baseline, failing
cases), then the operators × platforms overview, the links to the platform pages and the
collapsed reference lists. A platform's heat map and case cards are a link away, one page per
platform and backend, as are a cause's cases (``render_case_pages``, under ``report-cases/``),
so a full matrix's page stays small: an overview cell links to its operator's first cell there
(``Row.anchor``), a failing case to its card (``case_anchor``); browsers open the collapsed
``<details>`` holding a linked element. Adding a section is one function and one entry in
``SECTIONS``.

Every string that came from a record or run.json goes through ``html.escape``.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from harness.judge.verdict import KINDS
from harness.report.cause_section import KNOWN_CASE, cause_page, cause_page_html, causes_html
from harness.report.causes import as_expected
from harness.report.documented_rows import documented_html
from harness.report.matrix import (
    KNOWN,
    SHORT,
    Failure,
    Report,
    Row,
    Section,
    case_anchor,
    case_facts,
    case_href,
    case_page,
    cell_colour,
    cell_href,
    chip_counts,
    letter,
    not_run_counts,
    reference_summary,
    section_title,
    worst_first,
)
from harness.report.perf_section import perf_html
from harness.report.real_limits import real_limits_html
from harness.report.sdk_matrix import headline, judged_against, limit_table, summary_table
from harness.results.records import CaseRecord, flaky_text

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1em 1.5em; color: #222; font-size: 14px; }
h1 { font-size: 1.4em; margin: 0 0 0.4em; }
h2 { font-size: 1.15em; margin: 1.2em 0 0.4em; }
table { border-collapse: collapse; margin: 0.3em 0 0.8em; }
th, td { border: 1px solid #bbb; padding: 2px 6px; vertical-align: top; text-align: left; }
th { background: #f0f0f0; font-weight: 600; }
table.header th, table.header td { font-size: 0.92em; }
td.n { text-align: right; }
.cause { font-size: 0.93em; }
/* a cause's example is a long case id: it wraps rather than widening the table */
table.causes td:last-child { overflow-wrap: anywhere; min-width: 12em; }
table.causes td.list { min-width: 10em; } /* eleven platforms on a few lines, not eleven */
.nw { white-space: nowrap; }
/* long versions and paths (baseline, known issues) wrap instead of widening the page */
table.header td.long { overflow-wrap: anywhere; }
table.header td { white-space: nowrap; }
table.header td.long { white-space: normal; }
.case { border-radius: 4px; padding: 3px 6px; margin: 2px 0; font-size: 92%; }
.case .verdict { font-weight: bold; }
.case .fact { color: #444; }
details { margin: 2px 0; }
summary { cursor: pointer; }
details.group > summary { font-weight: 600; }
details.cell { margin-left: 1.2em; }
:target { outline: 2px solid #1a5fb4; }
pre { white-space: pre-wrap; margin: 2px 0; }
table.map td { padding: 1px 4px; white-space: nowrap; }
table.map td.op { font-weight: 600; }
table.map a { text-decoration: none; color: inherit; display: block; }
.chip { display: inline-block; min-width: 1.6em; padding: 0 3px; margin-right: 2px;
        border-radius: 3px; text-align: center; font-size: 0.9em; }
.legend .chip { min-width: 1.2em; }
.ok { color: #1e6b34; font-weight: 600; }
.bad { color: #a4161a; font-weight: 600; }
"""
_CSS += "".join(f".v-{word} {{ background: {kind.tint}; }}\n" for word, kind in KINDS.items())
_CSS += (
    ".v-known { background: #e6dcc8; } /* known issues as recorded: excused, not the run's "
    "failures */\n"
)


def render_html(report: Report) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>npu-hil report</title>',
        f"<style>{_CSS}</style></head><body>",
        "<h1>npu-hil report</h1>",
        *(section(report) for section in SECTIONS),
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part) + "\n"


_SHORT = 30  # header values longer than this (paths, versions) may wrap


def _header(report: Report) -> str:
    head = "".join(f"<th>{escape(key)}</th>" for key, _ in report.header)
    cells = "".join(
        f"<td{' class=long' if len(text) > _SHORT else ''}>{escape(text)}</td>"
        for _, text in report.header
    )
    return f'<table class="header" id="run"><tr>{head}</tr><tr>{cells}</tr></table>'


def _counts(report: Report) -> str:
    """One row of verdicts, one of counts (and one of known issues among them, if any)."""
    verdicts = [*report.counts, "total"]
    head = "<th></th>" + "".join(f'<th class="v-{escape(v)}">{escape(v)}</th>' for v in verdicts)
    counts = [*report.counts.values(), sum(report.counts.values())]
    rows = ["<tr><th>cases</th>" + "".join(f"<td class=n>{n}</td>" for n in counts) + "</tr>"]
    if report.known:
        known = [report.known.get(v, 0) for v in report.counts]
        cells = "".join(f"<td class=n>{n or ''}</td>" for n in [*known, sum(known)])
        rows.append(f"<tr><th>known issues, as expected</th>{cells}</tr>")
    return (
        '<h2 id="verdicts">Verdicts</h2>'
        f"<table><tr>{head}</tr>{''.join(rows)}</table>" + _left_out(report) + _not_run(report)
    )


def _not_run(report: Report) -> str:
    summary = f"Models not run: {len(report.models_not_run)} ({not_run_counts(report)})"
    return _listed(report.models_not_run, "model", summary)


def _left_out(report: Report) -> str:
    summary = (
        f"Left out: {len(report.left_out)} of a slower tier (<code>--tier full</code> runs them)"
    )
    return _listed(report.left_out, "case", summary)


def _listed(items: list[tuple[str, str]], column: str, summary: str) -> str:
    """(name, why) rows under a collapsed ``summary`` (HTML); nothing without rows."""
    if not items:
        return ""
    rows = [[f"<code>{escape(name)}</code>", escape(why)] for name, why in items]
    return f"<details><summary>{summary}</summary>{_table([column, 'why'], rows)}</details>"


def _changes(report: Report) -> str:
    title = '<h2 id="changes">Changes against the baseline</h2>'
    baseline = report.baseline
    if baseline is None:
        return title + "<p>No baseline: <code>--baseline DIR</code> compares with a run.</p>"
    where = f"<code>{escape(baseline.path)}</code>"
    if baseline.summary is None:
        return title + f'<p class="bad">Baseline {where} unreadable: {escape(baseline.problem)}</p>'
    summary = baseline.summary
    style = "bad" if summary.new_failures else "ok"
    text = f'<p>Against {where}: <span class="{style}">{escape(summary.line())}</span>.</p>'
    anchors = _anchors(report)
    rows = [
        [
            f'<a href="{escape(anchors[c.case_id])}"><code>{escape(c.case_id)}</code></a>',
            _verdict(str(c.old)) if c.old else "(not in the baseline)",
            _verdict(str(c.new)),
        ]
        for c in baseline.verdicts
    ]
    return title + text + (_table(["case", "baseline", "now"], rows) if rows else "")


def _failures(report: Report) -> str:
    """The failing cases to look at, then the known issues as expected, collapsed: a run of
    several platforms has those (a full matrix's thousand) collapsed per platform too."""
    title = '<h2 id="failures">Failing cases</h2>'
    if not report.failures:
        return title + '<p class="ok">None.</p>'
    new = [f for f in report.failures if f.known != "as-expected"]
    expected = [f for f in report.failures if f.known == "as-expected"]
    backends = len({f.record.backend for f in report.failures}) > 1
    parts = [title]
    parts.append(
        _failures_table(new, backends) if new else '<p class="ok">None besides known issues.</p>'
    )
    if expected:
        parts.append(
            f"<details><summary>Known issues, as expected: {len(expected)}</summary>"
            f"{_per_section(report, expected, backends)}</details>"
        )
    return "".join(parts)


def _per_section(report: Report, failures: list[Failure], backends: bool) -> str:
    """The table of ``failures``; of several sections, one collapsed table per section."""
    groups: dict[str, list[Failure]] = {section.title: [] for section in report.sections}
    for failure in failures:
        record = failure.record
        groups[section_title(record.platform, record.backend, record.sdk)].append(failure)
    groups = {title: found for title, found in groups.items() if found}
    if len(groups) == 1:
        return _failures_table(failures, backends)
    return "".join(
        f'<details class="group"><summary>{escape(title)}: {len(found)}</summary>'
        f"{_failures_table(found, backends)}</details>"
        for title, found in groups.items()
    )


def _failures_table(failures: list[Failure], backends: bool) -> str:
    known = any(f.known for f in failures)
    header = ["case", "verdict", "cause", "repro bundle"] + (["known issue"] if known else [])
    return _table(header, [_failure(f, backends, known) for f in failures])


def _failure(failure: Failure, backends: bool, known: bool) -> list[str]:
    """The row of a failing case: its id (and backend when the run had several) linking to
    its card, verdict, one-line cause, bundle links and known-issue mark. The whole detail
    shows on hover when the line shortened it, but for a known issue as expected: a full
    matrix has a thousand of them, and each card has it."""
    record = failure.record
    case = f'<a href="{escape(case_href(record))}">{escape(record.id)}</a>'
    if backends:
        case += f" on {escape(record.backend)}"
    if failure.bundle:
        link = escape(failure.bundle, quote=True)
        bundle = f'<a href="{link}/README.md">README</a> · <a href="{link}.tar.gz">tar.gz</a>'
    else:
        bundle = "none yet: <code>hil repro</code>"
    shortened = record.detail != failure.cause and failure.known != "as-expected"
    hover = f' title="{escape(record.detail)}"' if shortened else ""
    cause = f'<span class="cause"{hover}>{escape(failure.cause)}</span>'
    if record.flaky:
        cause += f' <span class="flaky">(flaky: {escape(flaky_text(record.flaky))})</span>'
    row = [f'<span class="nw">{case}</span>', _verdict(record.verdict, as_expected(record)), cause]
    row.append(f'<span class="nw">{bundle}</span>')
    if known:
        row.append(_known_mark(failure))
    return row


def _known_mark(failure: Failure) -> str:
    known = failure.record.known
    if not known:
        return ""
    mark = f"{escape(failure.known)}: {escape(str(known.get('reference', '')))}"
    if failure.known != "changed":
        return mark
    return f'<span class="bad">{mark} (expected {escape(str(known.get("expected", "")))})</span>'


def _overview(report: Report) -> str:
    """Operators × platforms: cases run and the most severe verdict, linking to the cases."""
    if not report.overview:
        return ""
    head = "".join(
        f"<th>{escape(h)}</th>" for h in ["operator", *(s.where for s in report.sections)]
    )
    rows = []
    for row in report.overview:
        cells = [f'<td class="op">{escape(row.op)}</td>']
        for section, cell in zip(report.sections, row.cells, strict=True):
            if cell is None:
                cells.append("<td></td>")
                continue
            cells.append(
                f'<td class="v-{escape(cell.verdict)}" title="{escape(_word(cell.verdict))}">'
                f'<a href="{escape(cell_href(section, cell.anchor))}">{escape(cell.chip)}</a></td>'
            )
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (
        '<h2 id="overview">Operators × platforms</h2>'
        f'<p class="legend">Cases per verdict ({_legend()}) and the known issues that behaved '
        "as recorded among them; a cell's colour is its most severe verdict, or the known "
        "issues' when they are the only cases that would fail the run. A cell opens the "
        "operator's first cases, on its platform's page.</p>"
        f'<table class="map"><tr>{head}</tr>{"".join(rows)}</table>'
    )


def _legend() -> str:
    """The verdicts' letters of the overview and heat-map cells, each in its colour, and the
    known issues' colour (HTML)."""
    verdicts = [
        f'<span class="chip v-{escape(v)}">{short}</span>{escape(v)}' for v, short in SHORT.items()
    ]
    known = f'<span class="chip v-{KNOWN}">V</span>{_word(KNOWN)}, by their verdict\'s letter'
    return " ".join([*verdicts, known])


def _word(verdict: str) -> str:
    """A cell's colour in words: its verdict, or what KNOWN stands for."""
    return "known issues, as expected" if verdict == KNOWN else verdict


def _heat_map(section: Section) -> str:
    """A section's documented limits × dtype, for its page: a cell opens its cases there."""
    rows = []
    ops = [row.op for row in section.rows]
    for index, row in enumerate(section.rows):
        first = index == 0 or ops[index - 1] != row.op
        span = ops.count(row.op)
        cells = [f'<td class="op" rowspan="{span}">{escape(row.op)}</td>'] if first else []
        cells.append(f"<td>{escape(row.limit.removeprefix(row.op + '/'))}</td>")
        cells += [_heat_cell(section, row, dtype) for dtype in section.dtypes]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    head = "".join(f"<th>{escape(h)}</th>" for h in ["operator", "limit", *section.dtypes])
    return f'<table class="map"><tr>{head}</tr>{"".join(rows)}</table>'


def _heat_cell(section: Section, row: Row, dtype: str) -> str:
    cases = row.cells.get(dtype, [])
    if not cases:
        return "<td></td>"
    href = escape("#" + section.anchor(row, dtype))
    colour = escape(cell_colour(cases))
    return f'<td class="v-{colour}"><a href="{href}">{_chips(chip_counts(cases))}</a></td>'


def _cards(report: Report) -> str:
    """Links to the pages of the sections (``render_case_pages``), each with its counts: a
    full matrix's heat maps made this page megabytes, its cards tens of megabytes."""
    if not report.sections:
        return ""
    items = "".join(
        f'<li><a href="{escape(case_page(s.backend, s.platform, s.sdk), quote=True)}">'
        f"{escape(s.title)}</a>: {sum(s.counts.values())} cases "
        f"{_chips(chip_counts(s.records))}</li>"
        for s in report.sections
    )
    return (
        '<h2 id="cases">Documented limits × dtype, and the cases</h2>'
        "<p>One page per platform and backend: its heat map of documented limits × dtype (a "
        f"cell opens its cases) and its case cards.</p><ul>{items}</ul>"
    )


def _chips(counts: list[tuple[str, int, bool]]) -> str:
    """Cases per verdict in the cells' letters, e.g. "3V 9C", known issues behaving as
    recorded in their own colour (``chip_counts``; HTML)."""
    return "".join(
        f'<span class="chip v-{KNOWN if known else escape(v)}" '
        f'title="{escape(v)}{", " + _word(KNOWN) if known else ""}">'
        f"{n}{escape(letter(v))}</span>"
        for v, n, known in counts
    )


def render_case_pages(report: Report) -> dict[str, str]:
    """The pages a link away from report.html, relative path -> HTML: the case cards, one
    page per section of the report, and one page per cause listing its cases."""
    pages = {
        case_page(section.backend, section.platform, section.sdk): _page(
            f"{section.title}: cases",
            '<p><a href="../report.html">npu-hil report</a></p>'
            f"<h1>{escape(section.title)}</h1>"
            '<h2 id="matrix">Documented limits × dtype</h2>'
            f'<p class="legend">Cases per verdict in each cell: {_legend()}. A cell opens its '
            f'cases below.</p>{_heat_map(section)}<h2 id="cases">Cases</h2>'
            f"{_section_cards(section)}",
        )
        for section in report.sections
    }
    for cause in report.causes:
        pages[cause_page(cause)] = _page(f"{cause.signature.key}: cases", cause_page_html(cause))
    return pages


def _page(title: str, body: str) -> str:
    """A page of its own beside report.html, with its style; ``body`` is HTML."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{_CSS}</style></head><body>",
            body,
            "</body></html>",
        ]
    )


def _section_cards(section: Section) -> str:
    by_op: dict[str, list[Row]] = {}
    for row in section.rows:
        by_op.setdefault(row.op, []).append(row)
    parts = []
    for op, rows in by_op.items():
        cases = [case for row in rows for cell in row.cells.values() for case in cell]
        counts = ", ".join(f"{n} {v}" for v, n in worst_first(cases).items())
        cells = "".join(
            _cell_details(section, row, dtype)
            for row in rows
            for dtype in section.dtypes
            if row.cells.get(dtype)
        )
        parts.append(
            f'<details class="group"><summary>{escape(op)} on {escape(section.where)}'
            f": {escape(counts)}</summary>{cells}</details>"
        )
    return "".join(parts) + "\n"


def _cell_details(section: Section, row: Row, dtype: str) -> str:
    cases = row.cells[dtype]
    counts = ", ".join(f"{n} {v}" for v, n in worst_first(cases).items())
    anchor = escape(section.anchor(row, dtype))
    return (
        f'<details class="cell" id="{anchor}"><summary>{escape(row.limit)} · {escape(dtype)}: '
        f"{escape(counts)}</summary>{''.join(_case(case) for case in cases)}</details>"
    )


def _case(record: CaseRecord) -> str:
    facts = "".join(
        f'<div class="fact">{label}: {escape(text)}</div>' for label, text in case_facts(record)
    )
    source = record.source
    details = [
        f"<div>id: {escape(record.id)}</div>",
        f"<pre>{escape(record.detail)}</pre>" if record.detail else "",
        f"<div>source: {escape(source.get('seed', ''))} {escape(source.get('section', ''))}</div>"
        f"<blockquote>{escape(source.get('text', ''))}</blockquote>"
        if source
        else "",
        _mapping("tolerance", record.tolerance),
        _mapping("versions", record.versions),
    ]
    colour = KNOWN if as_expected(record) else record.verdict
    known = KNOWN_CASE if as_expected(record) else ""
    return (
        f'<div class="case v-{escape(colour)}" id="{escape(case_anchor(record))}">'
        f"<b>{escape(record.value)}</b> ({escape(record.documented)}) "
        f'<span class="verdict">{escape(record.verdict)}</span>{known} on {escape(record.backend)}'
        f"{facts}<details><summary>detail</summary>{''.join(details)}</details></div>"
    )


def _mapping(label: str, values: dict[str, float] | dict[str, str]) -> str:
    if not values:
        return ""
    text = ", ".join(f"{key}={value}" for key, value in sorted(values.items()))
    return f"<div>{label}: {escape(text)}</div>"


def _documented_rows(report: Report) -> str:
    return documented_html(report.documented)


def _unprobed(report: Report) -> str:
    if not report.unprobed:
        return ""
    rows = [
        [
            escape(group.op),
            escape(group.prop),
            escape(", ".join(group.roles)),
            "<br>".join(escape(reason) for reason in group.reasons),
        ]
        for group in report.unprobed
    ]
    return (
        f'<details id="unprobed"><summary><b>Documented limits not probed or not tested</b> '
        f"({len(rows)} rows, for the operators that ran)</summary>"
        f"{_table(['operator', 'limit', 'roles', 'why'], rows)}</details>"
    )


def _disagreements(report: Report) -> str:
    if not report.disagreements:
        return ""
    items = "".join(
        f"<li><code>{escape(r.id)}</code> on {escape(r.platform)}/{escape(r.backend)}: "
        f"{escape(reference_summary(r))}</li>"
        for r in report.disagreements
    )
    return (
        f'<details id="disagreements"><summary><b>Host references disagree</b> '
        f"({len(report.disagreements)} cases)</summary><ul>{items}</ul></details>"
    )


def _run_details(report: Report) -> str:
    if not report.details:
        return ""
    rows = [[escape(key), escape(text)] for key, text in report.details]
    return f"<details><summary><b>Run details</b></summary>{_table(['', ''], rows)}</details>"


def _sdk_matrix(report: Report) -> str:
    """Several SDK releases in the run: per documented limit, the verdicts side by side."""
    matrix = report.sdk_matrix
    if matrix is None:
        return ""
    return "".join(
        [
            '<h2 id="sdks">SDK releases side by side</h2>',
            f"<p>{escape(judged_against(matrix))}</p>",
            _text_table(*summary_table(matrix)),
            f"<p>{escape(headline(matrix))}</p>",
            _text_table(*limit_table(matrix)),
        ]
    )


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    """A table of plain-text cells, escaped here (a cell's lines joined by <br>)."""
    cells = [["<br>".join(map(escape, cell.splitlines())) for cell in row] for row in rows]
    return _table([escape(cell) for cell in header], cells)


def _table(header: list[str], rows: list[list[str]]) -> str:
    """A table from cells that are already HTML."""
    head = "".join(f"<th>{cell}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _verdict(verdict: str, known: bool = False) -> str:
    """A verdict's word in its colour, or in the known issues' when ``known`` (as expected)."""
    return f'<span class="chip nw v-{KNOWN if known else escape(verdict)}">{escape(verdict)}</span>'


def _anchors(report: Report) -> dict[str, str]:
    """Case id -> the link to its card, for the cases of this run."""
    return {
        record.id: case_href(record)
        for section in report.sections
        for row in section.rows
        for cases in row.cells.values()
        for record in cases
    }


SECTIONS: list[Callable[[Report], str]] = [
    _header,
    _counts,
    causes_html,
    _sdk_matrix,
    _changes,
    _failures,
    _overview,
    lambda report: perf_html(report.records),
    lambda report: real_limits_html(report.probes),
    _cards,
    _documented_rows,
    _unprobed,
    _disagreements,
    _run_details,
]
