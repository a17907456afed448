"""report.md: the same content as report.html, for merge requests and terminals.

The page is ``SECTIONS`` in order, each a function of the ``Report`` returning lines, as in
``harness.report.html``: run header, verdict counts, changes against the baseline, failing
cases; then per platform and backend a compact matrix (cases per verdict in each cell), the
case cards and the reference lists inside ``<details>`` (collapsed where Markdown is rendered,
plain text in a terminal).
"""

from __future__ import annotations

import html
import re
import shlex
from collections.abc import Callable

from harness.report.cause_section import causes_markdown
from harness.report.causes import as_expected
from harness.report.documented_rows import documented_markdown
from harness.report.matrix import (
    SHORT,
    Failure,
    Report,
    Row,
    Section,
    case_facts,
    in_short_order,
    letters,
    not_run_counts,
    reference_summary,
)
from harness.report.perf_section import perf_markdown
from harness.report.real_limits import real_limits_markdown
from harness.report.sdk_matrix import headline, judged_against, limit_table, summary_table
from harness.results.records import CaseRecord, flaky_text
from harness.text import printable

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_escape(text: object) -> str:
    """Text from records made inert in Markdown: no HTML, no emphasis/links/table breaks, no
    terminal escapes or control characters (report.md is read in terminals too)."""
    escaped = html.escape(" ".join(printable(str(text)).split()), quote=False)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", escaped)


def render_markdown(report: Report) -> str:
    lines = ["# npu-hil report", ""]
    for section in SECTIONS:
        lines += section(report)
    return "\n".join(lines).rstrip("\n") + "\n"


def _header(report: Report) -> list[str]:
    return [
        "| " + " | ".join(md_escape(key) for key, _ in report.header) + " |",
        "|" + "---|" * len(report.header),
        "| " + " | ".join(md_escape(text) for _, text in report.header) + " |",
        "",
    ]


def _counts(report: Report) -> list[str]:
    lines = ["## Verdicts", "", "| verdict | cases | known, as expected |", "|---|---:|---:|"]
    lines += [
        f"| {verdict} | {count} | {report.known.get(verdict, 0) or ''} |"
        for verdict, count in report.counts.items()
    ]
    lines += [f"| **total** | {sum(report.counts.values())} | {sum(report.known.values())} |", ""]
    if report.left_out:
        lines += [
            f"<details><summary>Left out: {len(report.left_out)} of a slower tier "
            "(--tier full runs them)</summary>",
            "",
            *(f"- {md_escape(case_id)}: {md_escape(why)}" for case_id, why in report.left_out),
            "",
            "</details>",
            "",
        ]
    if report.models_not_run:
        lines += [
            f"<details><summary>Models not run: {len(report.models_not_run)} "
            f"({not_run_counts(report)})</summary>",
            "",
            *(f"- {md_escape(name)}: {md_escape(why)}" for name, why in report.models_not_run),
            "",
            "</details>",
            "",
        ]
    return lines


def _changes(report: Report) -> list[str]:
    lines = ["## Changes against the baseline", ""]
    baseline = report.baseline
    if baseline is None:
        return [*lines, "No baseline: --baseline DIR compares with a run.", ""]
    if baseline.summary is None:
        return [
            *lines,
            f"Baseline {md_escape(baseline.path)} unreadable: {md_escape(baseline.problem)}",
            "",
        ]
    lines += [f"Against {md_escape(baseline.path)}: {md_escape(baseline.summary.line())}.", ""]
    if baseline.verdicts:
        lines += ["| case | baseline | now |", "|---|---|---|"]
        lines += [
            f"| {md_escape(c.case_id)} | {md_escape(c.old or '(not in the baseline)')} | "
            f"{md_escape(c.new)} |"
            for c in baseline.verdicts
        ]
        lines.append("")
    return lines


def _failures(report: Report) -> list[str]:
    lines = ["## Failing cases", ""]
    if not report.failures:
        return [*lines, "None.", ""]
    new = [f for f in report.failures if f.known != "as-expected"]
    expected = [f for f in report.failures if f.known == "as-expected"]
    lines += [_failure(failure) for failure in new] or ["None besides known issues."]
    if expected:
        lines += [
            "",
            f"<details><summary>Known issues, as expected: {len(expected)}</summary>",
            "",
            *(_failure(failure) for failure in expected),
            "",
            "</details>",
        ]
    return [*lines, ""]


def _failure(failure: Failure) -> str:
    record = failure.record
    where = md_escape(record.backend)
    text = f"- {md_escape(record.id)} on {where}: **{record.verdict}**: {md_escape(failure.cause)}"
    if record.known:
        text += f" (known issue {md_escape(failure.known)}: "
        text += f"{md_escape(record.known.get('reference', ''))})"
    if record.flaky:
        text += f" (flaky: {flaky_text(record.flaky)})"
    if failure.bundle:
        return f"{text} ([bundle]({failure.bundle}/README.md), [tar.gz]({failure.bundle}.tar.gz))"
    return f"{text} (no bundle yet: hil repro RESULTS {md_escape(shlex.quote(record.id))})"


def _overview(report: Report) -> list[str]:
    if not report.overview:
        return []
    columns = [section.where for section in report.sections]
    lines = [
        "## Operators × platforms",
        "",
        "Cases per verdict (the letters of the limits × dtype tables below), and the known "
        "issues that behaved as recorded among them.",
        "",
        "| operator | " + " | ".join(md_escape(c) for c in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for row in report.overview:
        cells = ["" if c is None else c.chip for c in row.cells]
        lines.append(f"| {md_escape(row.op)} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _matrices(report: Report) -> list[str]:
    if not report.sections:
        return []
    legend = ", ".join(f"{short} {verdict}" for verdict, short in SHORT.items())
    lines = ["## Documented limits × dtype", ""]
    lines += [f"Cases per verdict in each cell: {legend}; (n known): known issues among them.", ""]
    for section in report.sections:
        lines += _matrix(section)
    return lines


def _matrix(section: Section) -> list[str]:
    lines = [
        f"### {md_escape(section.title)}",
        "",
        "| operator | limit | " + " | ".join(md_escape(d) for d in section.dtypes) + " |",
        "|---|---|" + "---|" * len(section.dtypes),
    ]
    for row in section.rows:
        cells = [_cell(row.cells.get(dtype, [])) for dtype in section.dtypes]
        lines.append(
            f"| {md_escape(row.op)} | {md_escape(row.limit)} | " + " | ".join(cells) + " |"
        )
    return [*lines, ""]


def _cell(cases: list[CaseRecord]) -> str:
    known = sum(map(as_expected, cases))
    return letters(in_short_order(cases)) + (f" ({known} known)" if known else "")


def _cards(report: Report) -> list[str]:
    lines: list[str] = []
    for section in report.sections:
        by_op: dict[str, list[Row]] = {}
        for row in section.rows:
            by_op.setdefault(row.op, []).append(row)
        for op, rows in by_op.items():
            lines += [
                f"<details><summary>{md_escape(op)} on {md_escape(section.where)}: cases</summary>",
                "",
            ]
            for row in rows:
                for dtype in section.dtypes:
                    lines += [
                        f"- {md_escape(row.limit)} · {md_escape(dtype)}: {_case(case)}"
                        for case in row.cells.get(dtype, [])
                    ]
            lines += ["", "</details>", ""]
    return ["## Cases", "", *lines] if lines else []


def _case(record: CaseRecord) -> str:
    facts = [
        f"{md_escape(record.value)} ({md_escape(record.documented)}): "
        f"**{md_escape(record.verdict)}** on {md_escape(record.backend)}"
    ]
    facts += [f"{label}: {md_escape(text)}" for label, text in case_facts(record)]
    return " · ".join(facts)


def _documented_rows(report: Report) -> list[str]:
    return documented_markdown(report.documented, md_escape)


def _unprobed(report: Report) -> list[str]:
    if not report.unprobed:
        return []
    lines = [
        "<details><summary>Documented limits not probed or not tested "
        f"({len(report.unprobed)} rows, for the operators that ran)</summary>",
        "",
        "| operator | limit | roles | why |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {md_escape(g.op)} | {md_escape(g.prop)} | {md_escape(', '.join(g.roles))} | "
        + "<br>".join(md_escape(reason) for reason in g.reasons)
        + " |"
        for g in report.unprobed
    ]
    return [*lines, "", "</details>", ""]


def _disagreements(report: Report) -> list[str]:
    if not report.disagreements:
        return []
    lines = ["## Host references disagree", ""]
    lines += [
        f"- {md_escape(r.id)} on {md_escape(r.platform)}/{md_escape(r.backend)}: "
        f"{md_escape(reference_summary(r))}"
        for r in report.disagreements
    ]
    return [*lines, ""]


def _sdk_matrix(report: Report) -> list[str]:
    """Several SDK releases in the run: per documented limit, the verdicts side by side."""
    matrix = report.sdk_matrix
    if matrix is None:
        return []
    return [
        "## SDK releases side by side",
        "",
        judged_against(matrix),
        "",
        *_text_table(*summary_table(matrix)),
        headline(matrix),
        "",
        *_text_table(*limit_table(matrix)),
    ]


def _text_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table of plain-text cells (a cell's lines joined by <br>), then a blank line."""
    lines = ["| " + " | ".join(map(md_escape, header)) + " |", "|" + "---|" * len(header)]
    lines += [
        "| " + " | ".join("<br>".join(map(md_escape, cell.splitlines())) for cell in row) + " |"
        for row in rows
    ]
    return [*lines, ""]


def _run_details(report: Report) -> list[str]:
    if not report.details:
        return []
    lines = ["<details><summary>Run details</summary>", "", "| | |", "|---|---|"]
    lines += [f"| {md_escape(key)} | {md_escape(text)} |" for key, text in report.details]
    return [*lines, "", "</details>", ""]


SECTIONS: list[Callable[[Report], list[str]]] = [
    _header,
    _counts,
    lambda report: causes_markdown(report, md_escape),
    _sdk_matrix,
    _changes,
    _failures,
    _overview,
    lambda report: perf_markdown(report.records, md_escape),
    lambda report: real_limits_markdown(report.probes, md_escape),
    _matrices,
    _cards,
    _documented_rows,
    _unprobed,
    _disagreements,
    _run_details,
]
