"""The report's "Causes" section, first after the verdict counts: the run's failures and the
document's findings grouped by cause (``harness.report.causes``).

One row per cause: its key, status, how many cases (and how many of them known issues, as
expected), the platforms, operators, dtypes and SDKs it appears on, a one-line reading, one
example case with its repro bundle; the cases themselves collapsed below the table. Failing
causes are shown open; the document's findings (doc drift, limits confirmed or rewritten)
collapsed. Against a baseline, the failing causes it did not have are marked new and the
ones it had that this run has not are listed as gone.
"""

from __future__ import annotations

import shlex
import textwrap
from collections.abc import Callable
from html import escape

from harness.report.causes import Cause, CauseChanges
from harness.report.matrix import Report, case_anchor
from harness.results.records import CaseRecord

READING_WIDTH = 160  # characters of a cause's reading in the table; the whole one on hover
_COLUMNS = ["cause", "status", "cases", "known", "platforms", "operators", "dtypes", "SDKs"]


def _reading(cause: Cause) -> str:
    return textwrap.shorten(cause.signature.reading(), READING_WIDTH, placeholder=" ...")


def _summary(causes: list[Cause]) -> str:
    """ "3 causes over 46 cases" """
    cases = sum(len(cause.records) for cause in causes)
    return f"{len(causes)} cause{'' if len(causes) == 1 else 's'} over {cases} cases"


def _facts(cause: Cause, new: set[str]) -> list[str]:
    """The plain-text cells of a cause's row, in ``_COLUMNS`` order; ``new``: the keys of the
    causes the baseline did not have."""
    key = cause.signature.key
    return [
        f"{key} (new)" if key in new else key,
        cause.signature.status,
        str(len(cause.records)),
        str(cause.known or ""),
        *(", ".join(cause.values(field)) for field in ("platform", "op", "dtype", "sdk")),
    ]


def _new(changes: CauseChanges | None) -> set[str]:
    return {cause.signature.key for cause in changes.new} if changes else set()


def _against(changes: CauseChanges) -> str:
    """ "Against the baseline: 1 new, 2 gone, 13 in both." """
    return (
        f"Against the baseline: {len(changes.new)} new, {len(changes.gone)} gone, "
        f"{changes.kept} in both."
    )


def _changes(report: Report) -> CauseChanges | None:
    """The failing causes against the baseline, when the run has one."""
    return report.baseline.causes if report.baseline else None


def causes_markdown(report: Report, md_escape: Callable[[object], str]) -> list[str]:
    causes, changes = report.causes, _changes(report)
    if not causes and not (changes and changes.gone):
        return []
    failing = [cause for cause in causes if cause.failing]
    findings = [cause for cause in causes if not cause.failing]
    lines = ["## Causes", ""]
    lines.append(f"Failing: {_summary(failing)}." if failing else "Failing: none.")
    lines.append("")
    if changes:
        lines += [_against(changes), ""]
        lines += [f"- gone: {md_escape(cause.line())}" for cause in changes.gone]
        lines += [""] if changes.gone else []
    lines += _markdown_table(failing, md_escape, _new(changes))
    if findings:
        lines += [
            f"<details><summary>The document's findings: {_summary(findings)}</summary>",
            "",
            *_markdown_table(findings, md_escape, set()),
            "</details>",
            "",
        ]
    return lines


def _markdown_table(
    causes: list[Cause], md_escape: Callable[[object], str], new: set[str]
) -> list[str]:
    if not causes:
        return []
    header = [*_COLUMNS, "reading", "example"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for cause in causes:
        cells = [md_escape(text) for text in _facts(cause, new)]
        cells += [md_escape(_reading(cause)), _markdown_example(cause, md_escape)]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for cause in causes:
        lines += [
            f"<details><summary>{md_escape(cause.signature.key)}: "
            f"{len(cause.records)} cases</summary>",
            "",
            *(f"- {md_escape(r.id)} ({md_escape(_where(r))})" for r in cause.records),
            "",
            "</details>",
            "",
        ]
    return lines


def _markdown_example(cause: Cause, md_escape: Callable[[object], str]) -> str:
    example = md_escape(cause.example.id)
    if cause.bundle:
        return f"{example} ([bundle]({cause.bundle}/README.md), [tar.gz]({cause.bundle}.tar.gz))"
    return f"{example} (hil repro RESULTS {md_escape(shlex.quote(cause.example.id))})"


def _where(record: CaseRecord) -> str:
    on_sdk = f", SDK {record.sdk}" if record.sdk else ""
    return f"{record.backend}{on_sdk}"


def causes_html(report: Report) -> str:
    causes, changes = report.causes, _changes(report)
    if not causes and not (changes and changes.gone):
        return ""
    failing = [cause for cause in causes if cause.failing]
    findings = [cause for cause in causes if not cause.failing]
    parts = ['<h2 id="causes">Causes</h2>']
    if failing:
        parts.append(f'<p class="bad">Failing: {_summary(failing)}.</p>')
    else:
        parts.append('<p class="ok">Failing: none.</p>')
    if changes:
        style = "bad" if changes.new else "ok"
        parts.append(f'<p class="{style}">{escape(_against(changes))}</p>')
        gone = "".join(f"<li>gone: {escape(cause.line())}</li>" for cause in changes.gone)
        parts.append(f"<ul>{gone}</ul>" if gone else "")
    parts.append(_html_table(failing, _new(changes)) if failing else "")
    if findings:
        parts.append(
            f"<details><summary>The document's findings: {_summary(findings)}</summary>"
            f"{_html_table(findings, set())}</details>"
        )
    return "".join(parts)


def _html_table(causes: list[Cause], new: set[str]) -> str:
    head = "".join(f"<th>{escape(name)}</th>" for name in [*_COLUMNS, "reading", "example"])
    rows = []
    for cause in causes:
        key, status, *others = (escape(text) for text in _facts(cause, new))
        anchor = escape(cause.signature.key)
        cells = [
            f'<code id="{anchor}">{key}</code>',
            f'<span class="chip nw v-{status}">{status}</span>',
            *others,
            f'<span class="cause" title="{escape(cause.signature.reading())}">'
            f"{escape(_reading(cause))}</span>{_html_cases(cause)}",
            _html_example(cause),
        ]
        cells[2:4] = [f"<td class=n>{cell}</td>" for cell in cells[2:4]]  # cases, known
        rows.append(
            "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in cells) + "</tr>"
        )
    return f'<table class="causes"><tr>{head}</tr>{"".join(rows)}</table>'


def _html_cases(cause: Cause) -> str:
    items = "".join(
        f'<li><a href="#{escape(case_anchor(r))}">{escape(r.id)}</a> ({escape(_where(r))})</li>'
        for r in cause.records
    )
    return f"<details><summary>{len(cause.records)} cases</summary><ul>{items}</ul></details>"


def _html_example(cause: Cause) -> str:
    example = cause.example
    case = f'<a href="#{escape(case_anchor(example))}">{escape(example.id)}</a>'
    if not cause.bundle:
        return f'{case}<br><span class="nw">no bundle yet: <code>hil repro</code></span>'
    link = escape(cause.bundle, quote=True)
    return (
        f'{case}<br><span class="nw"><a href="{link}/README.md">README</a> · '
        f'<a href="{link}.tar.gz">tar.gz</a></span>'
    )
