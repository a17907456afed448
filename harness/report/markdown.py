"""report.md: the same content as report.html, for merge requests and terminals.

The page is the template ``templates/report.md`` (not autoescaped: the text of records goes
through ``md_escape``, its ``md``), its sections in order, each a macro writing lines, as in
``harness.report.html``: run header, verdict counts, changes against the baseline, failing
cases; then per platform and backend a compact matrix (cases per verdict in each cell), the
case cards and the reference lists inside ``<details>`` (collapsed where Markdown is rendered,
plain text in a terminal).
"""

from __future__ import annotations

import html
import re

from harness.report import cause_section, perf_section
from harness.report.documented_rows import documented_markdown
from harness.report.matrix import (
    SHORT,
    Report,
    case_facts,
    in_short_order,
    letters,
    not_run_counts,
    reference_summary,
)
from harness.report.real_limits import real_limits_markdown
from harness.report.sdk_matrix import headline, judged_against, limit_table, summary_table
from harness.report.templating import environment
from harness.results.records import flaky_text
from harness.text import printable

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_escape(text: object) -> str:
    """Text from records made inert in Markdown: no HTML, no emphasis/links/table breaks, no
    terminal escapes or control characters (report.md is read in terminals too)."""
    escaped = html.escape(" ".join(printable(str(text)).split()), quote=False)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", escaped)


def render_markdown(report: Report) -> str:
    """report.md (``templates/report.md``)."""
    text = (
        environment("harness.report")
        .get_template(
            "report.md",
            globals={
                **cause_section.GLOBALS,
                **perf_section.GLOBALS,
                "SHORT": SHORT,
                "case_facts": case_facts,
                "flaky_text": flaky_text,
                "headline": headline,
                "in_short_order": in_short_order,
                "judged_against": judged_against,
                "letters": letters,
                "limit_table": limit_table,
                "md": md_escape,
                "not_run_counts": not_run_counts,
                "reference_summary": reference_summary,
                "summary_table": summary_table,
            },
        )
        .render(
            report=report,
            real_limits=_lines(real_limits_markdown(report.probes, md_escape)),
            documented=_lines(documented_markdown(report.documented, md_escape)),
        )
    )
    return text.rstrip("\n") + "\n"


def _lines(lines: list[str]) -> str:
    """A section some other module writes as lines, as the template takes it."""
    return "".join(f"{line}\n" for line in lines)
