"""report.md: the same content as report.html, for merge requests and terminals."""

from __future__ import annotations

import html
import re
import shlex

from harness.report.io_section import io_markdown
from harness.report.matrix import Failure, Report, Section, case_facts, reference_summary
from harness.report.sdk_matrix import (
    SdkMatrix,
    headline,
    judged_against,
    limit_table,
    summary_table,
)
from harness.results.records import CaseRecord
from harness.text import printable

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_escape(text: object) -> str:
    """Text from records made inert in Markdown: no HTML, no emphasis/links/table breaks, no
    terminal escapes or control characters (report.md is read in terminals too)."""
    escaped = html.escape(" ".join(printable(str(text)).split()), quote=False)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", escaped)


def render_markdown(report: Report) -> str:
    lines = ["# npu-hil report", "", "## Run", "", "| | |", "|---|---|"]
    lines += [f"| {md_escape(key)} | {md_escape(value)} |" for key, value in report.summary]
    lines += ["", "## Verdicts", "", "| verdict | cases |", "|---|---:|"]
    lines += [f"| {verdict} | {count} |" for verdict, count in report.counts.items()]
    lines += [f"| **total** | {sum(report.counts.values())} |", ""]
    lines += _sdk_matrix(report.sdk_matrix)
    for section in report.sections:
        lines += _section(section)
    lines += io_markdown(report.io, md_escape)
    if report.unprobed:
        lines += ["## Documented limits not probed", "", "| limit | why |", "|---|---|"]
        lines += [f"| {md_escape(limit)} | {md_escape(why)} |" for limit, why in report.unprobed]
        lines.append("")
    lines += ["## Failing cases", ""]
    lines += [_failure(failure) for failure in report.failures] or ["None."]
    if report.disagreements:
        lines += ["", "## Host references disagree", ""]
        lines += [_disagreement(record) for record in report.disagreements]
    return "\n".join(lines) + "\n"


def _section(section: Section) -> list[str]:
    counts = ", ".join(f"{verdict} {n}" for verdict, n in section.counts.items() if n)
    lines = [
        f"## {md_escape(section.title)}",
        "",
        f"Verdicts: {counts}.",
        "",
        "| operator | limit | " + " | ".join(md_escape(d) for d in section.dtypes) + " |",
        "|---|---|" + "---|" * len(section.dtypes),
    ]
    for row in section.rows:
        cells = ["<br>".join(_case(r) for r in row.cells.get(d, [])) for d in section.dtypes]
        lines.append(
            f"| {md_escape(row.op)} | {md_escape(row.limit)} | " + " | ".join(cells) + " |"
        )
    return [*lines, ""]


def _sdk_matrix(matrix: SdkMatrix | None) -> list[str]:
    if matrix is None:
        return []
    return [
        "## SDK releases side by side",
        "",
        judged_against(matrix),
        "",
        *_table(*summary_table(matrix)),
        headline(matrix),
        "",
        *_table(*limit_table(matrix)),
    ]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table of plain-text cells (a cell's lines joined by <br>), then a blank line."""
    lines = ["| " + " | ".join(map(md_escape, header)) + " |", "|" + "---|" * len(header)]
    lines += [
        "| " + " | ".join("<br>".join(map(md_escape, cell.splitlines())) for cell in row) + " |"
        for row in rows
    ]
    return [*lines, ""]


def _case(record: CaseRecord) -> str:
    facts = [
        f"{md_escape(record.value)} ({md_escape(record.documented)}): "
        f"**{md_escape(record.verdict)}** on {md_escape(record.backend)}"
    ]
    facts += [f"{label}: {md_escape(text)}" for label, text in case_facts(record)]
    return " · ".join(facts)


def _disagreement(record: CaseRecord) -> str:
    where = f"{md_escape(record.platform)}/{md_escape(record.backend)}"
    return f"- {md_escape(record.id)} on {where}: {md_escape(reference_summary(record))}"


def _failure(failure: Failure) -> str:
    record = failure.record
    where = f"{md_escape(record.platform)}/{md_escape(record.backend)}"
    text = f"- {md_escape(record.id)}: **{record.verdict}** on {where}: {md_escape(record.detail)}"
    if failure.bundle:
        return f"{text} ([bundle]({failure.bundle}/README.md), [tar.gz]({failure.bundle}.tar.gz))"
    return f"{text} (no bundle yet: hil repro RESULTS {md_escape(shlex.quote(record.id))})"
