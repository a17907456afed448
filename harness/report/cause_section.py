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

The section is written by the report's templates (``templates/causes.html``, and the
``causes`` macro of ``templates/report.md``) from what this module works out: ``CausesView``
and the helpers in ``GLOBALS``.
"""

from __future__ import annotations

import shlex
import textwrap
from dataclasses import dataclass
from typing import Any

from harness.report.causes import Cause, CauseChanges, as_expected
from harness.report.matrix import CASE_PAGES, KNOWN, Report, case_href, section_title
from harness.results.records import CaseRecord

READING_WIDTH = 160  # characters of a cause's reading in report.md's table
HTML_READING_WIDTH = 72  # in report.html's, one line; the whole reading on hover
HTML_OPERATORS = 8  # a cause's operators in report.html's row; all of them on its page
KNOWN_CASE = " (known issue, as expected)"  # a case the known issues expect, on its line
KNOWN_TITLE = "Known issues, as expected"  # the causes whose every case is one
COLUMNS = ["cause", "status", "cases", "known", "platforms", "operators", "dtypes", "SDKs"]


@dataclass(frozen=True)
class CausesView:
    """The section of one report: the causes that fail the run, those wholly known issues as
    expected, the findings, and the failing causes against the baseline (None without
    one)."""

    failing: list[Cause]
    known: list[Cause]
    findings: list[Cause]
    changes: CauseChanges | None

    @property
    def new(self) -> set[str]:
        """The keys of the failing causes the baseline did not have."""
        return {cause.signature.key for cause in self.changes.new} if self.changes else set()


def causes_view(report: Report) -> CausesView | None:
    """The section's causes, or None when it has nothing to show."""
    causes = report.causes
    changes = report.baseline.causes if report.baseline else None
    if not causes and not (changes and changes.gone):
        return None
    return CausesView(
        [cause for cause in causes if cause.fails_run],
        [cause for cause in causes if cause.failing and not cause.fails_run],
        [cause for cause in causes if not cause.failing],
        changes,
    )


def summary(causes: list[Cause]) -> str:
    """ "3 causes over 46 cases" """
    cases = sum(len(cause.records) for cause in causes)
    return f"{count(len(causes), 'cause')} over {count(cases, 'case')}"


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def facts(cause: Cause, new: set[str]) -> list[str]:
    """The plain-text cells of a cause's row, in ``COLUMNS`` order; ``new``: the keys of the
    causes the baseline did not have."""
    key = cause.signature.key
    return [
        f"{key} (new)" if key in new else key,
        cause.signature.status,
        str(len(cause.records)),
        str(cause.known or ""),
        *(", ".join(cause.values(field)) for field in ("platform", "op", "dtype", "sdk")),
    ]


def against(changes: CauseChanges) -> str:
    """ "Against the baseline: 1 new, 2 gone, 13 in both." """
    return (
        f"Against the baseline: {len(changes.new)} new, {len(changes.gone)} gone, "
        f"{changes.kept} in both."
    )


def reading(cause: Cause, width: int = READING_WIDTH) -> str:
    """The cause's reading shortened to ``width`` characters."""
    return textwrap.shorten(cause.signature.reading(), width, placeholder=" ...")


def where(record: CaseRecord) -> str:
    on_sdk = f", SDK {record.sdk}" if record.sdk else ""
    return f"{record.backend}{on_sdk}"


def colour(cause: Cause) -> str:
    """A cause's status chip colour: its status's, or the known issues' when it fails no run."""
    return KNOWN if cause.failing and not cause.fails_run else cause.signature.status


def first_operators(values: list[str]) -> str:
    """ "Add, Clip, ... and 40 more" """
    more = len(values) - HTML_OPERATORS
    return ", ".join(values[:HTML_OPERATORS]) + (f" and {more} more" if more > 0 else "")


def from_page(up: str, href: str) -> str:
    """A link of report.html (``case_href``) as the page ``up`` from its folder writes it
    ("" on report.html, "../" on a cause page)."""
    return href.removeprefix(f"{CASE_PAGES}/") if up else href


def cause_page(cause: Cause) -> str:
    """The page listing a cause's cases, relative to report.html."""
    return f"{CASE_PAGES}/{cause.signature.key}.html"


def by_section(cause: Cause) -> list[tuple[str, list[CaseRecord]]]:
    """A cause's cases per platform, backend and SDK, by title."""
    found: dict[str, list[CaseRecord]] = {}
    for record in cause.records:
        title = section_title(record.platform, record.backend, record.sdk)
        found.setdefault(title, []).append(record)
    return sorted(found.items())


# What the templates of the section read of this module
GLOBALS: dict[str, Any] = {
    "COLUMNS": COLUMNS,
    "HTML_READING_WIDTH": HTML_READING_WIDTH,
    "KNOWN_CASE": KNOWN_CASE,
    "KNOWN_TITLE": KNOWN_TITLE,
    "against": against,
    "as_expected": as_expected,
    "by_section": by_section,
    "case_href": case_href,
    "cause_page": cause_page,
    "causes_view": causes_view,
    "colour": colour,
    "count": count,
    "facts": facts,
    "first_operators": first_operators,
    "from_page": from_page,
    "quote": shlex.quote,
    "reading": reading,
    "summary": summary,
    "where": where,
}
