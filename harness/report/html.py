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

from jinja2 import Template
from markupsafe import Markup

from harness.judge.verdict import KINDS
from harness.report import cause_section, perf_section
from harness.report.cause_section import cause_page
from harness.report.documented_rows import documented_html
from harness.report.matrix import (
    KNOWN,
    SHORT,
    Failure,
    Report,
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
from harness.report.real_limits import real_limits_html
from harness.report.sdk_matrix import headline, judged_against, limit_table, summary_table
from harness.report.templating import environment
from harness.results.records import flaky_text


def render_html(report: Report) -> str:
    """report.html (``templates/report.html``)."""
    return _template("report.html").render(
        report=report,
        anchors=_anchors(report),
        real_limits=Markup(real_limits_html(report.probes)),
        documented=Markup(documented_html(report.documented)),
        short_value=_SHORT,
    )


_SHORT = 30  # header values longer than this (paths, versions) may wrap


def render_case_pages(report: Report) -> dict[str, str]:
    """The pages a link away from report.html, relative path -> HTML: the case cards, one
    page per section of the report, and one page per cause listing its cases."""
    page = _template("page.html")
    pages = {
        case_page(section.backend, section.platform, section.sdk): page.render(
            title=f"{section.title}: cases", section=section
        )
        for section in report.sections
    }
    for cause in report.causes:
        pages[cause_page(cause)] = page.render(title=f"{cause.signature.key}: cases", cause=cause)
    return pages


def _template(name: str) -> Template:
    """A template of the report, with what its macros read of the report's modules."""
    return environment("harness.report").get_template(
        name,
        globals={
            **cause_section.GLOBALS,
            **perf_section.GLOBALS,
            "KINDS": KINDS,
            "KNOWN": KNOWN,
            "SHORT": SHORT,
            "case_anchor": case_anchor,
            "case_facts": case_facts,
            "case_page": case_page,
            "cell_colour": cell_colour,
            "cell_href": cell_href,
            "chip_counts": chip_counts,
            "flaky_text": flaky_text,
            "headline": headline,
            "judged_against": judged_against,
            "letter": letter,
            "limit_table": limit_table,
            "not_run_counts": not_run_counts,
            "per_section": _per_section,
            "reference_summary": reference_summary,
            "summary_table": summary_table,
            "worst_first": worst_first,
        },
    )


def _per_section(report: Report, failures: list[Failure]) -> list[tuple[str, list[Failure]]]:
    """``failures`` per section of the report that has any, in the report's order."""
    groups: dict[str, list[Failure]] = {section.title: [] for section in report.sections}
    for failure in failures:
        record = failure.record
        groups[section_title(record.platform, record.backend, record.sdk)].append(failure)
    return [(title, found) for title, found in groups.items() if found]


def _anchors(report: Report) -> dict[str, str]:
    """Case id -> the link to its card, for the cases of this run."""
    return {
        record.id: case_href(record)
        for section in report.sections
        for row in section.rows
        for cases in row.cells.values()
        for record in cases
    }
