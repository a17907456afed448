"""The report's "Causes" section, first after the verdict counts: the run's failures and the
document's findings grouped by cause (``harness.report.causes``).

One row per cause: its key, status, how many cases (and how many of them known issues, as
expected), the platforms, operators, dtypes and SDKs it appears on, a one-line reading, one
example case with its repro bundle. In report.md the cases are collapsed below the table; in
report.html they are a link away, on a page of the cause's own (``cause_page``, beside the
case pages): listed inline, a full matrix's thousand failing cases made the page megabytes.
The causes that fail the run are shown open; those whose every case is a known issue behaving
as recorded (failing verdicts the run excuses, in the known issues' colour) and the
document's findings (doc drift, limits confirmed or rewritten) collapsed. Against a
baseline, the failing causes it did not have are marked new and the ones it had that this run
has not are listed as gone.
"""

from __future__ import annotations

import shlex
import textwrap
from collections.abc import Callable
from html import escape

from harness.report.causes import Cause, CauseChanges, as_expected
from harness.report.matrix import CASE_PAGES, KNOWN, Report, case_href, section_title
from harness.results.records import CaseRecord

READING_WIDTH = 160  # characters of a cause's reading in report.md's table
HTML_READING_WIDTH = 72  # in report.html's, one line; the whole reading on hover
KNOWN_CASE = " (known issue, as expected)"  # a case the known issues expect, on its line
KNOWN_TITLE = "Known issues, as expected"  # the causes whose every case is one
_COLUMNS = ["cause", "status", "cases", "known", "platforms", "operators", "dtypes", "SDKs"]


def _reading(cause: Cause) -> str:
    return textwrap.shorten(cause.signature.reading(), READING_WIDTH, placeholder=" ...")


def _summary(causes: list[Cause]) -> str:
    """ "3 causes over 46 cases" """
    cases = sum(len(cause.records) for cause in causes)
    return f"{_count(len(causes), 'cause')} over {_count(cases, 'case')}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


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


def _grouped(causes: list[Cause]) -> tuple[list[Cause], list[Cause], list[Cause]]:
    """The causes that fail the run, those wholly known issues as expected, the findings."""
    return (
        [cause for cause in causes if cause.fails_run],
        [cause for cause in causes if cause.failing and not cause.fails_run],
        [cause for cause in causes if not cause.failing],
    )


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
    failing, known, findings = _grouped(causes)
    lines = ["## Causes", ""]
    lines.append(f"Failing: {_summary(failing)}." if failing else "Failing: none.")
    lines.append("")
    if changes:
        lines += [_against(changes), ""]
        lines += [f"- gone: {md_escape(cause.line())}" for cause in changes.gone]
        lines += [""] if changes.gone else []
    lines += _markdown_table(failing, md_escape, _new(changes))
    for title, folded in ((KNOWN_TITLE, known), ("The document's findings", findings)):
        if folded:
            lines += [
                f"<details><summary>{title}: {_summary(folded)}</summary>",
                "",
                *_markdown_table(folded, md_escape, _new(changes)),
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
    """One line of totals, then one table row per cause, each a line: its count and reading
    link to its page of cases (``cause_page``)."""
    causes, changes = report.causes, _changes(report)
    if not causes and not (changes and changes.gone):
        return ""
    failing, known, findings = _grouped(causes)
    total = f"Failing: {_summary(failing)}." if failing else "Failing: none."
    line = f'<span class="{"bad" if failing else "ok"}">{total}</span>'
    if known:
        line += f' <span class="v-{KNOWN}">{KNOWN_TITLE}: {_summary(known)}.</span>'
    if changes:
        line += (
            f' <span class="{"bad" if changes.new else "ok"}">{escape(_against(changes))}</span>'
        )
    parts = ['<h2 id="causes">Causes</h2>', f"<p>{line}</p>"]
    if changes and changes.gone:
        gone = "".join(f"<li>gone: {escape(cause.line())}</li>" for cause in changes.gone)
        parts.append(f"<ul>{gone}</ul>")
    parts.append(_html_table(failing, _new(changes)) if failing else "")
    for title, folded in ((KNOWN_TITLE, known), ("The document's findings", findings)):
        if folded:
            parts.append(
                f"<details><summary>{title}: {_summary(folded)}</summary>"
                f"{_html_table(folded, _new(changes))}</details>"
            )
    return "".join(parts)


def _html_table(causes: list[Cause], new: set[str]) -> str:
    head = "".join(f"<th>{escape(name)}</th>" for name in [*_COLUMNS, "reading", "example"])
    rows = []
    for cause in causes:
        key, status, cases, known, platforms, _, *others = (
            escape(text) for text in _facts(cause, new)
        )
        ops = escape(_first(cause.values("op")))
        page = escape(cause_page(cause), quote=True)
        cells = [
            f'<td class="nw"><code id="{escape(cause.signature.key)}">{key}</code></td>',
            f'<td><span class="chip nw v-{_colour(cause)}">{status}</span></td>',
            f'<td class=n><a href="{page}">{cases}</a></td>',
            f"<td class=n>{known}</td>",
            f'<td class="list">{platforms}</td>',
            f'<td class="list">{ops}</td>',
            *(f"<td>{text}</td>" for text in others),
            f"<td>{_html_reading(cause, page)}</td>",
            f"<td>{_html_example(cause, '')}</td>",
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f'<table class="causes"><tr>{head}</tr>{"".join(rows)}</table>'


def _colour(cause: Cause) -> str:
    """A cause's status chip colour: its status's, or the known issues' when it fails no run."""
    return KNOWN if cause.failing and not cause.fails_run else escape(cause.signature.status)


HTML_OPERATORS = 8  # a cause's operators in report.html's row; all of them on its page


def _first(values: list[str]) -> str:
    """ "Add, Clip, ... and 40 more" """
    more = len(values) - HTML_OPERATORS
    return ", ".join(values[:HTML_OPERATORS]) + (f" and {more} more" if more > 0 else "")


def _html_reading(cause: Cause, page: str) -> str:
    """The reading (the whole one on hover), linking to the cause's page of cases."""
    reading = escape(textwrap.shorten(cause.signature.reading(), HTML_READING_WIDTH))
    return (
        f'<a class="cause" href="{page}" title="{escape(cause.signature.reading())}">{reading}</a>'
    )


def _html_example(cause: Cause, up: str) -> str:
    """The example case and its bundle; ``up``: the way from the page to report.html's
    folder ("" on report.html, "../" on a cause page)."""
    example = cause.example
    case = f'<a href="{escape(_from(up, case_href(example)))}">{escape(example.id)}</a>'
    if not cause.bundle:
        return f"{case} · no bundle yet: <code>hil repro</code>"
    link = escape(up + cause.bundle, quote=True)
    return f'{case} · <a href="{link}/README.md">README</a> · <a href="{link}.tar.gz">tar.gz</a>'


def _from(up: str, href: str) -> str:
    """A link of report.html (``case_href``) as the page ``up`` from its folder writes it."""
    return href.removeprefix(f"{CASE_PAGES}/") if up else href


def cause_page(cause: Cause) -> str:
    """The page listing a cause's cases, relative to report.html."""
    return f"{CASE_PAGES}/{cause.signature.key}.html"


def cause_page_html(cause: Cause) -> str:
    """The body of ``cause_page``: the cause's facts, then its cases per platform, backend and
    SDK, each linking to its card."""
    key = cause.signature.key
    facts = [
        [escape(name), escape(", ".join(cause.values(field)))]
        for name, field in (("platforms", "platform"), ("operators", "op"), ("dtypes", "dtype"))
    ]
    facts += [
        ["SDKs", escape(", ".join(cause.values("sdk")))],
        ["reading", escape(cause.signature.reading())],
        ["example", _html_example(cause, "../")],
    ]
    rows = "".join(f"<tr><th>{name}</th><td>{text}</td></tr>" for name, text in facts)
    by_section: dict[str, list[CaseRecord]] = {}
    for record in cause.records:
        title = section_title(record.platform, record.backend, record.sdk)
        by_section.setdefault(title, []).append(record)
    known = f", {cause.known} known issues as expected" if cause.known else ""
    parts = [
        f'<p><a href="../report.html#{escape(key)}">npu-hil report</a></p>',
        f'<h1><code>{escape(key)}</code>: <span class="chip nw v-{_colour(cause)}">'
        f"{escape(cause.signature.status)}</span> in {_count(len(cause.records), 'case')}"
        f"{known}</h1>",
        f"<table>{rows}</table>",
    ]
    for title, records in sorted(by_section.items()):
        items = "".join(
            f'<li><a href="{escape(_from("../", case_href(r)))}">{escape(r.id)}</a>'
            f"{KNOWN_CASE if as_expected(r) else ''}</li>"
            for r in records
        )
        parts.append(f"<h2>{escape(title)}: {len(records)}</h2><ul>{items}</ul>")
    return "".join(parts)
