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

from harness.report.matrix import Report
from harness.report.pages import template
from harness.text import printable

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_escape(text: object) -> str:
    """Text from records made inert in Markdown: no HTML, no emphasis/links/table breaks, no
    terminal escapes or control characters (report.md is read in terminals too)."""
    escaped = html.escape(" ".join(printable(str(text)).split()), quote=False)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", escaped)


def render_markdown(report: Report) -> str:
    """report.md (``templates/report.md``)."""
    return template("report.md").render(report=report, md=md_escape).rstrip("\n") + "\n"
