"""The terminal summary: this process's verdicts and the warnings its cases raised, counted
as their reports arrive (also on the xdist controller, which receives the workers'), the
boards that were down, and the repro bundles of the failures written as the session ends.
The run policy adds its own sections (``harness.plugin.run_policy``)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.judge.verdict import VERDICTS
from harness.plugin.boards import assigned
from harness.plugin.outcome import PUBLIC_MODULE
from harness.targets.selection import fallback_note
from harness.text import printable
from harness.vendors import Recipes, layer_aliases
from harness.vendors.base import Vendor

SUMMARY_NAME = "npu-hil-summary"


class Summary:
    """The run's tally and its summary: a plugin object of the run configuration
    (``harness.plugin.configure.RunConfig.summary``), registered before the run policy's."""

    def __init__(self, config: pytest.Config, vendor: Vendor) -> None:
        self.config = config
        self.vendor = vendor  # the run's: its recipe draws the bundles' arrays
        self.verdicts: Counter[str] = Counter()  # this process's verdicts
        # verdict -> [cases whose record holds warnings, warnings]
        self.case_warnings: dict[str, list[int]] = {}
        self.known_changed: list[str] = []  # the cases whose known issue changed

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        verdict = properties.get("verdict")
        if verdict and (report.when == "call" or (report.when == "setup" and report.failed)):
            self.verdicts[str(verdict)] += 1
            count = int(str(properties.get("warnings", 0)))
            if count:
                cases = self.case_warnings.setdefault(str(verdict), [0, 0])
                cases[0] += 1
                cases[1] += count
            if properties.get("known") == "changed":
                self.known_changed.append(str(properties.get("case")))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        downs = [a.down for a in assigned(self.config) if a.down]
        if downs:
            terminalreporter.section("npu-hil boards down", red=True)
            for down in downs:
                terminalreporter.write_line(fallback_note(down))
        if not self.verdicts:
            return
        terminalreporter.section("npu-hil verdicts")
        width = max(map(len, VERDICTS))
        for verdict in VERDICTS:
            terminalreporter.write_line(f"{verdict:{width}} {self.verdicts.get(verdict, 0)}")
        results = self.config.getoption("results")
        terminalreporter.write_line(f"results: {results} (hil report {results})")
        self._warnings_summary(terminalreporter, results)

    def _warnings_summary(self, terminalreporter: Any, results: str) -> None:
        """One line per kind of warning, with counts and where to read each one."""
        lines = []
        if self.verdicts.get("doc-drift"):
            lines.append(
                f"doc-drift: {self.verdicts['doc-drift']} cases pass with a warning (a "
                f"documented limit not enforced): each in {results}/report.md, or -W "
                f"default::{PUBLIC_MODULE}.DocDriftWarning here"
            )
        if self.known_changed:
            lines.append(
                f"known issue changed: {len(self.known_changed)} cases: listed under npu-hil "
                "known issues (--strict-known fails them)"
            )
        for verdict in VERDICTS:
            if verdict in self.case_warnings:
                cases, count = self.case_warnings[verdict]
                lines.append(
                    f"{verdict}: {cases} cases raised {count} warnings while running: in their "
                    f'records ("warnings" in {results}/journal.jsonl) and report cards'
                )
        if lines:
            terminalreporter.section("npu-hil warnings")
            for line in lines:
                terminalreporter.write_line(line)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput") or not self.verdicts:
            return
        from harness.report.bundle import make_bundles_for_failures

        results = Path(session.config.getoption("results"))
        try:
            make_bundles_for_failures(results, layer_aliases(), Recipes(self.vendor))
        except OSError as exc:  # a full disk, say: the journal and case folders are what count
            print(printable(f"npu-hil: no repro bundles written: {exc}"), file=sys.stderr)
