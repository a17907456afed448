"""report.html: one self-contained file (inline CSS, no scripts, no external assets), rendered
from the package's templates (``templates/report.html``, ``page.html``, ``macros.html`` and the
style, ``report.css``).

The page is its sections in order, each a macro of the ``Report`` in ``report.html``: what
matters first (run header, verdict counts, causes, changes against the baseline, failing
cases), then the operators × platforms overview, the links to the platform pages and the
collapsed reference lists. A platform's heat map and case cards are a link away, one page per
platform and backend, as are a cause's cases (``render_case_pages``, under ``report-cases/``),
so a full matrix's page stays small: an overview cell links to its operator's first cell there
(``Row.anchor``), a failing case to its card (``case_anchor``); browsers open the collapsed
``<details>`` holding a linked element. Adding a section is one macro and one entry in the
template's list of sections.

The templates are autoescaped: every string that came from a record or run.json is escaped
where it is written, and every link goes through the ``href`` filter
(``harness.report.templating``).
"""

from __future__ import annotations

from harness.report.cause_section import cause_page
from harness.report.matrix import Report, case_href, case_page
from harness.report.pages import template


def render_html(report: Report) -> str:
    """report.html (``templates/report.html``)."""
    return template("report.html").render(
        report=report,
        anchors=_anchors(report),
        short_value=_SHORT,
    )


_SHORT = 30  # header values longer than this (paths, versions) may wrap


def render_case_pages(report: Report) -> dict[str, str]:
    """The pages a link away from report.html, relative path -> HTML: the case cards, one
    page per section of the report, and one page per cause listing its cases."""
    page = template("page.html")
    pages = {
        case_page(section.backend, section.platform, section.sdk): page.render(
            title=f"{section.title}: cases", section=section
        )
        for section in report.sections
    }
    for cause in report.causes:
        pages[cause_page(cause)] = page.render(title=f"{cause.signature.key}: cases", cause=cause)
    return pages


def _anchors(report: Report) -> dict[str, str]:
    """Case id -> the link to its card, for the cases of this run."""
    return {
        record.id: case_href(record)
        for section in report.sections
        for row in section.rows
        for cases in row.cells.values()
        for record in cases
    }
