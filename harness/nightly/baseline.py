"""A previous run as the baseline of this one (``--baseline DIR``).

Verdicts are compared case by case and SDK by SDK (``record_key``). A failing verdict the
baseline had too is old news and does not fail the run; a run fails on new failures (failing,
and the baseline did not run the case on that SDK) and regressions (failing, and the baseline
had another verdict). Fixed cases (failing in the baseline, not now) are listed as
improvements.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from harness.results.journal import read_verdicts
from harness.results.records import CaseRecord, record_key

VerdictChange = tuple[str, str, str]  # case, baseline verdict, this run's verdict


@dataclass
class Comparison:
    new_failures: list[str] = field(default_factory=list)  # failing; not in the baseline
    regressions: list[VerdictChange] = field(default_factory=list)  # failing; was not, or else
    fixed: list[VerdictChange] = field(default_factory=list)  # failing before, not now
    changed: list[VerdictChange] = field(default_factory=list)  # other verdict changes
    new_cases: int = 0  # not in the baseline and not failing
    unchanged: int = 0

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
        latest: dict[str, tuple[str, dict[str, Any]]] | None = None,
    ) -> None:
        """Read the baseline's journal (raises JournalError); ``failing``: the verdicts
        that fail a run. ``latest``: the baseline's record_key -> (verdict, timing) read
        elsewhere (a run from the history store), ``path`` then only naming it."""
        # run.json names it; hil report may run elsewhere
        self.path = os.path.abspath(path) if latest is None else str(path)
        self.failing = failing
        # record_key -> verdict, and -> timing for the timed records: a baseline may be large
        latest = read_verdicts(path) if latest is None else latest
        self.verdicts = {key: verdict for key, (verdict, _) in latest.items()}
        self.timings = {key: perf for key, (_, perf) in latest.items() if perf}

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
        return comparison
