"""A previous run as the baseline of this one (``--baseline DIR``).

Verdicts are compared case by case and SDK by SDK (``record_key``). A failing verdict the
baseline had too is old news and does not fail the run; a run fails on new failures (failing,
and the baseline did not run the case on that SDK) and regressions (failing, and the baseline
had another verdict). Fixed cases (failing in the baseline, not now) are listed as
improvements. Failures are also counted by cause (``harness.report.causes``): a failing cause
this run has and the baseline had not is new, one the baseline had on cases this run ran and
this run has not is gone. A baseline is a run of this run's vendor: another vendor's, or one
that names no vendor (written before runs recorded theirs), is refused
(``harness.results.runs.check_same_vendor``).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.report.causes import Signature, signature
from harness.results.journal import read_latest, read_run_metadata
from harness.results.records import CaseRecord, record_key
from harness.results.runs import check_same_vendor, vendor_of

VerdictChange = tuple[str, str, str]  # case, baseline verdict, this run's verdict


@dataclass
class Comparison:
    new_failures: list[str] = field(default_factory=list)  # failing; not in the baseline
    regressions: list[VerdictChange] = field(default_factory=list)  # failing; was not, or else
    fixed: list[VerdictChange] = field(default_factory=list)  # failing before, not now
    changed: list[VerdictChange] = field(default_factory=list)  # other verdict changes
    new_cases: int = 0  # not in the baseline and not failing
    unchanged: int = 0
    # failing causes (signature key, reading, cases): this run's not in the baseline, and the
    # baseline's on cases this run ran that this run has not
    new_causes: list[tuple[str, str, int]] = field(default_factory=list)
    gone_causes: list[tuple[str, str, int]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "new": len(self.new_failures) + len(self.regressions),
            "fixed": len(self.fixed),
            "changed": len(self.changed),
            "unchanged": self.unchanged,
            "not in baseline": self.new_cases,
        }


class Baseline:
    def __init__(
        self,
        path: str | os.PathLike[str],
        failing: tuple[str, ...],
        aliases: Mapping[str, str] | None = None,
        *,
        latest: dict[str, tuple[str, dict[str, Any]]] | None = None,
        vendor: str = "",
    ) -> None:
        """Read the baseline's journal (raises JournalError, also for a run of a vendor other
        than ``vendor``, this run's: "" for a run that names none, as a test's or a
        benchmark's journal); ``failing``: the verdicts that fail a run. ``latest``:
        the baseline's record_key -> (verdict, timing) read elsewhere (a run of ``vendor``
        from the history store, which keeps no causes), ``path`` then only naming it;
        ``aliases``: the vendors' layer renames, for the causes."""
        # run.json names it; hil report may run elsewhere
        self.path = os.path.abspath(path) if latest is None else str(path)
        self.failing = failing
        self.aliases = aliases
        # record_key -> verdict, timing for the timed records and cause for the failing ones:
        # a baseline may be large
        if latest is None:
            read = read_latest(path, lambda r: (r.verdict, r.perf, self._cause(r), r.vendor))
            meta = read_run_metadata(path)
            found = {key: value[:3] for key, value in read.items()}
            of = vendor_of([meta], (value[3] for value in read.values()), self.path)
            check_same_vendor(of, self.path, vendor, "this run")
        else:
            found = {key: (verdict, perf, None) for key, (verdict, perf) in latest.items()}
        self.verdicts = {key: verdict for key, (verdict, _, _) in found.items()}
        self.timings = {key: perf for key, (_, perf, _) in found.items() if perf}
        self.causes = {key: cause for key, (_, _, cause) in found.items() if cause}

    def _cause(self, record: CaseRecord) -> Signature | None:
        return signature(record, self.aliases) if record.verdict in self.failing else None

    def excuse(self, record: CaseRecord) -> str | None:
        """Why a failing ``record`` does not fail the run: the baseline failed the same way."""
        if self.verdicts.get(record_key(record)) != record.verdict:
            return None
        return f"{record.verdict} in the baseline too ({self.path})"

    def compare(self, records: list[CaseRecord]) -> Comparison:
        """This run's ``records`` against the baseline's records of the same cases."""
        comparison = Comparison()
        for record in records:
            before = self.verdicts.get(record_key(record))
            if before is None:
                if record.verdict in self.failing:
                    comparison.new_failures.append(record.id)
                else:
                    comparison.new_cases += 1
            elif before == record.verdict:
                comparison.unchanged += 1
            else:
                old, new = before, record.verdict
                if new in self.failing:
                    comparison.regressions.append((record.id, old, new))
                elif old in self.failing:
                    comparison.fixed.append((record.id, old, new))
                else:
                    comparison.changed.append((record.id, old, new))
        self._compare_causes(records, comparison)
        return comparison

    def _compare_causes(self, records: list[CaseRecord], comparison: Comparison) -> None:
        now = Counter(cause for cause in map(self._cause, records) if cause)
        ran = {record_key(record) for record in records}
        before = Counter(cause for key, cause in self.causes.items() if key in ran)
        known = set(self.causes.values())
        comparison.new_causes = [
            (cause.key, cause.reading(), n) for cause, n in now.items() if cause not in known
        ]
        comparison.gone_causes = [
            (cause.key, cause.reading(), n) for cause, n in before.items() if cause not in now
        ]
