"""report.html: one self-contained file (inline CSS, no scripts, no external assets).

Every string that came from a record or run.json goes through ``html.escape``.
"""

from __future__ import annotations

from html import escape

from harness.report.io_section import io_html
from harness.report.matrix import Failure, Report, Section, case_facts, reference_summary
from harness.report.sdk_matrix import (
    SdkMatrix,
    headline,
    judged_against,
    limit_table,
    summary_table,
)
from harness.results.records import CaseRecord

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #bbb; padding: 4px 8px; vertical-align: top; text-align: left; }
th { background: #f0f0f0; }
.case { border-radius: 4px; padding: 3px 6px; margin: 2px 0; font-size: 90%; }
.case .verdict { font-weight: bold; }
.case .fact { color: #444; }
details { margin-top: 2px; }
summary { cursor: pointer; color: #555; }
pre { white-space: pre-wrap; margin: 2px 0; }
.v-confirmed { background: #d4edda; }
.v-limit-confirmed { background: #d1ecf1; }
.v-doc-drift { background: #fff3cd; }
.v-violation { background: #f8d7da; }
.v-wrong-result { background: #f1b0b7; }
.v-reference-disagreement { background: #e8daef; }
.v-infra-error { background: #e2e3e5; }
"""


def render_html(report: Report) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>npu-hil report</title>',
        f"<style>{_CSS}</style></head><body>",
        "<h1>npu-hil report</h1>",
        "<h2>Run</h2>",
        _table(["", ""], [[escape(key), escape(value)] for key, value in report.summary]),
        "<h2>Verdicts</h2>",
        _counts(report.counts),
        *_sdk_matrix(report.sdk_matrix),
    ]
    parts += [_section(section) for section in report.sections]
    parts.append(io_html(report.io))
    if report.unprobed:
        parts.append("<h2>Documented limits not probed</h2>")
        rows = [[escape(limit), escape(why)] for limit, why in report.unprobed]
        parts.append(_table(["limit", "why"], rows))
    parts.append("<h2>Failing cases</h2>")
    if report.failures:
        parts.append("<ul>" + "".join(_failure(f) for f in report.failures) + "</ul>")
    else:
        parts.append("<p>None.</p>")
    if report.disagreements:
        parts.append("<h2>Host references disagree</h2>")
        parts.append("<ul>" + "".join(_disagreement(r) for r in report.disagreements) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _table(header: list[str], rows: list[list[str]]) -> str:
    """A table from cells that are already HTML."""
    head = "".join(f"<th>{cell}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _counts(counts: dict[str, int]) -> str:
    rows = [
        [f'<span class="v-{verdict}">{verdict}</span>', str(n)] for verdict, n in counts.items()
    ]
    rows.append(["<b>total</b>", str(sum(counts.values()))])
    return _table(["verdict", "cases"], rows)


def _section(section: Section) -> str:
    title = f"<h2>{escape(section.title)}</h2>"
    rows = [
        [escape(row.op), escape(row.limit)]
        + [
            "".join(_case(record) for record in row.cells.get(dtype, []))
            for dtype in section.dtypes
        ]
        for row in section.rows
    ]
    header = ["operator", "limit", *(escape(dtype) for dtype in section.dtypes)]
    return title + _counts(section.counts) + _table(header, rows)


def _sdk_matrix(matrix: SdkMatrix | None) -> list[str]:
    if matrix is None:
        return []
    return [
        "<h2>SDK releases side by side</h2>",
        f"<p>{escape(judged_against(matrix))}</p>",
        _text_table(*summary_table(matrix)),
        f"<p>{escape(headline(matrix))}</p>",
        _text_table(*limit_table(matrix)),
    ]


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    """A table of plain-text cells, escaped here (a cell's lines joined by <br>)."""
    cells = [["<br>".join(map(escape, cell.splitlines())) for cell in row] for row in rows]
    return _table([escape(cell) for cell in header], cells)


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
    return (
        f'<div class="case v-{escape(record.verdict)}">'
        f"<b>{escape(record.value)}</b> ({escape(record.documented)}) "
        f'<span class="verdict">{escape(record.verdict)}</span> on {escape(record.backend)}'
        f"{facts}<details><summary>detail</summary>{''.join(details)}</details></div>"
    )


def _mapping(label: str, values: dict[str, float] | dict[str, str]) -> str:
    if not values:
        return ""
    text = ", ".join(f"{key}={value}" for key, value in sorted(values.items()))
    return f"<div>{label}: {escape(text)}</div>"


def _disagreement(record: CaseRecord) -> str:
    return (
        f"<li><code>{escape(record.id)}</code> on {escape(record.platform)}/"
        f"{escape(record.backend)}: {escape(reference_summary(record))}</li>"
    )


def _failure(failure: Failure) -> str:
    record = failure.record
    text = (
        f"<code>{escape(record.id)}</code>: <b>{escape(record.verdict)}</b> on "
        f"{escape(record.platform)}/{escape(record.backend)}: {escape(record.detail)}"
    )
    if failure.bundle:
        link = escape(failure.bundle, quote=True)
        text += f' (<a href="{link}/README.md">bundle</a>, <a href="{link}.tar.gz">tar.gz</a>)'
    else:
        text += " (no bundle yet: <code>hil repro RESULTS_DIR CASE_ID</code>)"
    return f"<li>{text}</li>"
