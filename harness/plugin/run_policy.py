"""The run policy in a pytest run (``RunPolicy``): the known issues, baseline, history store,
tier, shard and performance gate of the run, what the executor's stages and
``check_verdict`` ask of them (``mark``, ``timeout_for``, ``excuse``, ``slower``,
``changed``), and the policy's own hooks, each delegating to its module: the slow tier and the
shard at collection (``policy_selection``), progress lines (``progress_lines``), the
end-of-run summary (``policy_summary``), and the run written into the history store at its
end (``history_store``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from harness.history.location import StoreError
from harness.history.runinfo import HISTORY_KEY, configuration, history_entry
from harness.judge.verdict import FAILING_VERDICTS
from harness.plugin.history_store import last_baseline, not_stored_text, open_history, stored_text
from harness.plugin.policy_selection import (
    case_id,
    item_case_id,
    item_key,
    keep_shard,
    leave_out_slow,
)
from harness.plugin.policy_summary import known_issue_changed, write_summary
from harness.plugin.progress_lines import ProgressLines
from harness.plugin.run_inputs import check_resumed_vendor, folder_baseline, run_known_issues
from harness.policy import perf
from harness.policy.baseline import Baseline
from harness.policy.flaky import LAST
from harness.policy.known_issues import (
    AS_EXPECTED,
)
from harness.policy.shards import Shard, parse_shard
from harness.policy.tiers import slow_reason
from harness.report.cut_short import ENDED_KEY, SELECTED_KEY
from harness.results.journal import (
    JournalError,
    read_records,
    read_run_metadata,
)
from harness.results.records import CaseRecord, flaky_text, record_key
from harness.results.runs import this_run, update_run
from harness.text import printable
from harness.vendors.base import Vendor

PLUGIN_NAME = "npu-hil-policy"
DESELECTED_OUTPUT = "npu_hil_deselected"  # an xdist worker's workeroutput: its deselected ids


class RunPolicy:
    """The run's policy (``harness.policy``) as one pytest run applies it; kept in the run
    configuration (``harness.plugin.configure.RunConfig.policy``) and registered as the
    plugin object of the policy's own hooks."""

    def __init__(self, config: pytest.Config, vendor: Vendor, platform: str) -> None:
        """``vendor``: the run's, whose file ``--known-issues vendor`` names and whose runs
        alone are a baseline; ``platform``: ``--platform`` as given (or the default), the
        history store's configuration. The options were checked
        (``harness.plugin.options.check_options``)."""
        option = config.getoption
        config.addinivalue_line("markers", "slow: a case of the slow tier (--tier full runs it)")
        self.config = config
        self.results = Path(option("results"))
        self.tier: str = option("tier")
        self.budget: float = option("case_budget")
        self.strict_known: bool = option("strict_known")
        self.slow_timeout: float = option("slow_timeout")
        self.platform = platform
        self.vendor = vendor.name
        if option("resume"):
            check_resumed_vendor(self.results, self.vendor)
        self.shard: Shard | None = None
        if option("shard") is not None:
            try:
                self.shard = parse_shard(option("shard"))
            except ValueError as exc:
                raise pytest.UsageError(f"--shard {exc}") from None
        self.known = run_known_issues(option("known_issues"), vendor.known_issues)
        self.history = open_history(config)
        self.flaky_ok: bool = option("flaky_ok")
        self.controller = not hasattr(config, "workerinput")
        # --collect-only runs and writes nothing: no history entry (a new run id, the
        # checkout's revision), no baseline to judge against
        collecting = config.option.collectonly
        self.history_entry = {} if collecting else self._history_entry()
        self.baseline = None if collecting else self._baseline(option("baseline"))
        self.perf = perf.perf_request(config)
        threshold = perf.threshold(config)
        self.latency = perf.PerfJudge(self.baseline, threshold) if self.baseline else None
        self.lines = ProgressLines(config, option("progress_every"))
        self.ran: dict[str, None] = {}  # identities of the records this run judged
        # ids of the cases -k, -m, the tier or the shard left out: entries naming only these
        # are not stale (under xdist the workers deselect and send them to the controller as
        # they finish: DESELECTED_OUTPUT)
        self.deselected: set[str] = set()
        self.stored = ""  # how writing the run into the history store went
        self.journal: list[CaseRecord] | None = None  # the journal as the run ended, once read

    def run_metadata(self) -> dict[str, Any]:
        return {
            "tier": self.tier,
            "baseline": self.baseline.path if self.baseline else None,
            "known_issues": self.known.path if self.known else None,
            "left_out": [],
            HISTORY_KEY: self.history_entry,
        }

    def _history_entry(self) -> dict[str, str]:
        """run.json's history entry: the controller makes it, the workers read it."""
        option = self.config.getoption
        if not self.controller:
            return dict(self._this_run_metadata().get(HISTORY_KEY, {}))
        job = configuration(
            self.platform,
            option("sdk"),
            str(option("backend")),
            self.tier,
            str(self.shard or ""),
        )
        return history_entry(self.results, bool(option("resume")), job)

    def _baseline(self, value: str | None) -> Baseline | None:
        if value == LAST:
            return last_baseline(self.history, self.history_entry, self.vendor)
        return folder_baseline(value, self.vendor)

    # -- what check_verdict asks

    def mark(self, record: CaseRecord) -> CaseRecord:
        """The record with its known-issues mark and its latency against the baseline
        (before it is journaled)."""
        record = self.known.mark(record) if self.known else record
        if record.verdict in FAILING_VERDICTS and not record.known:
            record = self.history.mark(record)
        return self.latency.judge(record) if self.latency else record

    def timeout_for(self, case: Any) -> float | None:
        """A slow-tier case's own time limit (``--slow-timeout``); None: ``--hil-timeout``."""
        return self.slow_timeout if slow_reason(case.id, self.budget) else None

    def excuse(self, record: CaseRecord) -> str | None:
        """Why a case whose verdict would fail it does not fail the run, or None."""
        known = record.known
        if known and known["status"] == AS_EXPECTED:
            return f"known issue {known['reference']}"
        if record.flaky and self.flaky_ok:
            return f"flaky: {flaky_text(record.flaky)}, --flaky-ok"
        return self.baseline.excuse(record) if self.baseline else None

    def slower(self, record: CaseRecord) -> tuple[str, str | None] | None:
        """A confirmed performance regression: (why, the known issue that covers it or
        None); None when the record is not one."""
        why = perf.slower(record)
        if why is None:
            return None
        entry = self.known.slowdown_entry(record) if self.known else None
        return why, (f"known issue {entry.reference}" if entry else None)

    def changed(self, record: CaseRecord) -> str | None:
        return known_issue_changed(record)

    # -- pytest hooks

    @pytest.hookimpl(trylast=True)  # after -k and -m have deselected
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[Any]) -> None:
        left_out = leave_out_slow(config, items, self.budget) if self.tier != "full" else []
        shard = keep_shard(config, items, self.shard) if self.shard else {}
        cases = [item for item in items if item.get_closest_marker("hil_case")]
        self.lines.expect([case_id(item.nodeid) for item in cases])
        # One process records what it left out: the controller, or xdist's first worker
        # (the controller collects nothing and wrote run.json before the workers started).
        # --collect-only runs nothing and writes nothing.
        if config.option.collectonly:
            return
        if self.controller or config.workerinput.get("workerid") == "gw0":  # type: ignore[attr-defined]
            selected = [item_key(item) for item in cases]  # what a cut-short run never ran
            entries = {"left_out": left_out, SELECTED_KEY: selected, **shard}
            update_run(self.results, entries, self.config.getoption("append"))

    def pytest_deselected(self, items: list[Any]) -> None:
        self.deselected.update(
            item_case_id(item) for item in items if item.get_closest_marker("hil_case")
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """An xdist worker finished: the cases it deselected are the controller's too (each
        worker collects and deselects the whole selection; one that died sent none)."""
        self.deselected.update(getattr(node, "workeroutput", {}).get(DESELECTED_OUTPUT, []))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.lines.progress.total:
            # the controller sees node ids only: a generated case's carries its id
            cases = [case_id(nodeid) for nodeid in ids if case_id(nodeid) != nodeid]
            self.lines.expect(cases)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        if self.controller:
            self.lines.case_started(case_id(nodeid))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        case = dict(report.user_properties).get("case")
        if case:
            self.ran[str(case)] = None

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if self.controller:
            self.lines.case_finished(case_id(nodeid))

    @pytest.hookimpl(trylast=True)  # after the verdict counts
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.controller or self.config.option.collectonly:  # nothing ran: nothing stale
            return
        try:
            left_out = self._this_run_metadata().get("left_out", [])
            records = self._this_run()
        except JournalError as exc:
            terminalreporter.write_line(printable(f"npu-hil: cannot summarise the run: {exc}"))
            return
        write_summary(terminalreporter, self, records, left_out)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the run into the history store, from its results folder (the journal); the
        terminal summary, printed after every sessionfinish hook, ends saying how that went.
        An xdist worker sends its deselected cases instead (``pytest_testnodedown``)."""
        if not self.controller:
            self.config.workeroutput[DESELECTED_OUTPUT] = sorted(self.deselected)  # type: ignore[attr-defined]
        if self.controller and not self.config.option.collectonly:
            self._ended(int(session.exitstatus))
        if not self.controller or self.config.option.collectonly or not self.ran:
            self.history.close()
            return
        if self.history.on:
            try:
                self.journal = read_records(self.results)  # the summary reads them too
                if self.config.getoption("append"):  # this run's records, as its own run
                    meta = self._this_run_metadata()
                    written = self.history.write(self.results, self._this_run(), meta)
                else:
                    written = self.history.write(self.results, self.journal)
            except (StoreError, JournalError, OSError) as exc:
                self.stored = not_stored_text(self.results, exc)
            else:
                self.stored = stored_text(self.history, written)
        self.history.close()

    # -- helpers

    def _ended(self, status: int) -> None:
        """run.json says the run ended, and how (a killed run's never does)."""
        try:
            if read_run_metadata(self.results):  # a run stopped before run.json has none
                update_run(
                    self.results, {ENDED_KEY: {"exit": status}}, self.config.getoption("append")
                )
        except (JournalError, OSError) as exc:
            print(printable(f"npu-hil: {self.results}: run.json not completed: {exc}"),
                  file=sys.stderr)  # fmt: skip

    def _this_run_metadata(self) -> dict[str, Any]:
        """This run's run.json entries: the folder's, or with --append the last appended."""
        return this_run(read_run_metadata(self.results), self.config.getoption("append"))

    def _this_run(self) -> list[CaseRecord]:
        """This run's records, from the journal (which may hold earlier runs' too)."""
        journal = self.journal
        if journal is None:
            journal = read_records(self.results, allow_empty=True)
        return [r for r in journal if record_key(r) in self.ran]
