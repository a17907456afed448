"""The report's templates (``templates/``: report.html, its case and cause pages, report.md)
with what they read of the report's modules: the verdict kinds, the matrix's groupings and
links, the causes', performance, real-limits and documented-rows sections' helpers."""

from __future__ import annotations

from typing import Any

from jinja2 import Template

from harness.judge.verdict import KINDS
from harness.report import cause_section, perf_section
from harness.report.documented_rows import counts_text
from harness.report.matrix import (
    KNOWN,
    SHORT,
    Failure,
    Report,
    case_anchor,
    case_facts,
    case_page,
    cell_colour,
    cell_href,
    chip_counts,
    in_short_order,
    letter,
    letters,
    not_run_counts,
    reference_summary,
    section_title,
    worst_first,
)
from harness.report.real_limits import HEADER as LIMITS_HEADER
from harness.report.real_limits import rows as limit_rows
from harness.report.sdk_matrix import headline, judged_against, limit_table, summary_table
from harness.report.templating import environment
from harness.results.records import flaky_text


def template(name: str) -> Template:
    """The report's template ``name``."""
    return environment("harness.report").get_template(name, globals=GLOBALS)


def per_section(report: Report, failures: list[Failure]) -> list[tuple[str, list[Failure]]]:
    """``failures`` per section of the report that has any, in the report's order."""
    groups: dict[str, list[Failure]] = {section.title: [] for section in report.sections}
    for failure in failures:
        record = failure.record
        groups[section_title(record.platform, record.backend, record.sdk)].append(failure)
    return [(title, found) for title, found in groups.items() if found]


GLOBALS: dict[str, Any] = {
    **cause_section.GLOBALS,
    **perf_section.GLOBALS,
    "KINDS": KINDS,
    "KNOWN": KNOWN,
    "LIMITS_HEADER": LIMITS_HEADER,
    "SHORT": SHORT,
    "case_anchor": case_anchor,
    "case_facts": case_facts,
    "case_page": case_page,
    "cell_colour": cell_colour,
    "cell_href": cell_href,
    "chip_counts": chip_counts,
    "counts_text": counts_text,
    "flaky_text": flaky_text,
    "headline": headline,
    "in_short_order": in_short_order,
    "judged_against": judged_against,
    "letter": letter,
    "letters": letters,
    "limit_rows": limit_rows,
    "limit_table": limit_table,
    "not_run_counts": not_run_counts,
    "per_section": per_section,
    "reference_summary": reference_summary,
    "summary_table": summary_table,
    "worst_first": worst_first,
}
