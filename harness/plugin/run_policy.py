"""The run policy in a pytest run (``RunPolicy``): the known issues, baseline, history store,
tier, shard and performance gate of the run, what the executor's stages and
``check_verdict`` ask of them (``mark``, ``timeout_for``, ``excuse``, ``slower``,
``changed``), and the policy's own hooks: the slow tier and the shard at collection,
progress lines, the end-of-run summary of known issues, flaky cases, baseline changes,
cases left out and timeouts, and the run written into the history store at its end
(``harness.policy.flaky``).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.cases.case import Case
from harness.history.location import StoreError, shown
from harness.history.runinfo import HISTORY_KEY, configuration, history_entry
from harness.judge.verdict import FAILING_VERDICTS
from harness.policy import perf
from harness.policy.baseline import Baseline
from harness.policy.flaky import LAST, RunHistory
from harness.policy.known_issues import (
    AS_EXPECTED,
    CHANGED,
    KnownIssues,
    KnownIssuesError,
    load_known_issues,
)
from harness.policy.progress import Progress
from harness.policy.shards import Shard, parse_shard, selection_digest, split
from harness.policy.tiers import estimated_cost, slow_reason
from harness.report.cut_short import ENDED_KEY, SELECTED_KEY
from harness.results.journal import (
    JournalError,
    read_records,
    read_run_metadata,
)
from harness.results.records import CaseRecord, case_key, flaky_text, record_key
from harness.results.runs import SHARD_KEY, this_run, update_run, vendor_of
from harness.text import printable
from harness.vendors import layer_aliases
from harness.vendors.base import Vendor

PLUGIN_NAME = "npu-hil-policy"
OFF = "off"
VENDOR = "vendor"  # --known-issues vendor: the known issues the run's vendor ships
TIMED_OUT = "timed out"  # how the targets' infra-error details begin a timeout
DESELECTED_OUTPUT = "npu_hil_deselected"  # an xdist worker's workeroutput: its deselected ids


def _item_case_id(item: Any) -> str:
    """The case id of a collected item: its ``hil_case`` parameter's, without the SDK that
    ``--sdk`` adds to the node id; else the node id's parameter."""
    case = getattr(getattr(item, "callspec", None), "params", {}).get("hil_case")
    # an empty suite (test_models.py without --models) parametrizes with pytest's NOTSET
    return case.id if isinstance(case, Case) else _case_id(item.nodeid)


def _item_key(item: Any) -> str:
    """What tells collected cases apart: the case id, and its SDK under ``--sdk``."""
    sdk = getattr(getattr(item, "callspec", None), "params", {}).get("hil_sdk", "")
    return case_key(_item_case_id(item), sdk)


def _case_id(nodeid: str) -> str:
    """The case id of a generated case's node id (its parameter), else the node id."""
    name = nodeid.rpartition("::")[2]
    _head, bracket, rest = name.partition("[")
    return rest[:-1] if bracket and rest.endswith("]") else nodeid


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
        self.every: int = option("progress_every")
        self.slow_timeout: float = option("slow_timeout")
        self.platform = platform
        self.vendor = vendor.name
        if option("resume"):
            _check_resumed_vendor(self.results, self.vendor)
        self.shard: Shard | None = None
        if option("shard") is not None:
            try:
                self.shard = parse_shard(option("shard"))
            except ValueError as exc:
                raise pytest.UsageError(f"--shard {exc}") from None
        self.known = _known_issues(option("known_issues"), vendor.known_issues)
        try:
            self.history = RunHistory(option("hil_db"))
        except StoreError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.flaky_ok: bool = option("flaky_ok")
        if not self.history.on and (self.flaky_ok or option("baseline") == LAST):
            raise pytest.UsageError(
                f"--flaky-ok and --baseline {LAST} read the history store: --hil-db is off"
            )
        self.controller = not hasattr(config, "workerinput")
        # --collect-only runs and writes nothing: no history entry (a new run id, the
        # checkout's revision), no baseline to judge against
        collecting = config.option.collectonly
        self.history_entry = {} if collecting else self._history_entry()
        self.baseline = None if collecting else self._baseline(option("baseline"))
        self.perf = perf.perf_request(config)
        threshold = perf.threshold(config)
        self.latency = perf.PerfJudge(self.baseline, threshold) if self.baseline else None
        self.progress = Progress()
        self.started = time.monotonic()
        self.ran: dict[str, None] = {}  # identities of the records this run judged
        # ids of the cases -k, -m, the tier or the shard left out: entries naming only these
        # are not stale (under xdist the workers deselect and send them to the controller as
        # they finish: DESELECTED_OUTPUT)
        self.deselected: set[str] = set()
        self.live = sys.stdout.isatty() and not os.environ.get("CI")
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
        if value != LAST:
            return _baseline(value, self.vendor)
        try:
            return self.history.last_baseline(
                self.history_entry.get("configuration", ""),
                self.vendor,
                self.history_entry.get("run", ""),
                FAILING_VERDICTS,
            )
        except StoreError as exc:
            raise pytest.UsageError(f"--baseline {LAST}: {exc}") from None

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
        known = record.known
        if not known or known["status"] != CHANGED:
            return None
        return (
            f"known issue changed: {record.id} is {record.verdict}, "
            f"{known['expected']} expected ({known['reference']})"
        )

    # -- pytest hooks

    @pytest.hookimpl(trylast=True)  # after -k and -m have deselected
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[Any]) -> None:
        left_out: list[dict[str, str]] = []
        if self.tier != "full":
            kept, slow = [], []
            for item in items:
                reason = slow_reason(_item_case_id(item), self.budget)
                if reason and item.get_closest_marker("hil_case"):
                    left_out.append({"id": _case_id(item.nodeid), "reason": reason})
                    slow.append(item)
                else:
                    kept.append(item)
            if slow:
                config.hook.pytest_deselected(items=slow)
                items[:] = kept
        shard = self._keep_shard(config, items) if self.shard else {}
        cases = [item for item in items if item.get_closest_marker("hil_case")]
        self.progress = Progress.of([_case_id(item.nodeid) for item in cases])
        # One process records what it left out: the controller, or xdist's first worker
        # (the controller collects nothing and wrote run.json before the workers started).
        # --collect-only runs nothing and writes nothing.
        if config.option.collectonly:
            return
        if self.controller or config.workerinput.get("workerid") == "gw0":  # type: ignore[attr-defined]
            selected = [_item_key(item) for item in cases]  # what a cut-short run never ran
            entries = {"left_out": left_out, SELECTED_KEY: selected, **shard}
            update_run(self.results, entries, self.config.getoption("append"))

    def _keep_shard(self, config: pytest.Config, items: list[Any]) -> dict[str, Any]:
        """Deselect the items of the other shards; this shard's run.json entry."""
        assert self.shard is not None
        keys = [_item_key(item) for item in items]
        ids = {_item_key(item): _item_case_id(item) for item in items}
        parts = split(keys, lambda key: estimated_cost(ids[key]).seconds, self.shard.count)
        mine = set(parts[self.shard.index - 1])
        others = [item for item, key in zip(items, keys, strict=True) if key not in mine]
        if others:
            config.hook.pytest_deselected(items=others)
            items[:] = [item for item, key in zip(items, keys, strict=True) if key in mine]
        entry = {"index": self.shard.index, "count": self.shard.count, "cases": len(items)}
        return {SHARD_KEY: {**entry, "selection": selection_digest(keys)}}

    def pytest_deselected(self, items: list[Any]) -> None:
        self.deselected.update(
            _item_case_id(item) for item in items if item.get_closest_marker("hil_case")
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """An xdist worker finished: the cases it deselected are the controller's too (each
        worker collects and deselects the whole selection; one that died sent none)."""
        self.deselected.update(getattr(node, "workeroutput", {}).get(DESELECTED_OUTPUT, []))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.progress.total:
            # the controller sees node ids only: a generated case's carries its id
            cases = [_case_id(nodeid) for nodeid in ids if _case_id(nodeid) != nodeid]
            self.progress = Progress.of(cases)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        case = _case_id(nodeid)
        if case not in self.progress.pending or not self.controller:
            return
        if self.live and self.every and self.config.get_verbosity() <= 0:
            line = printable(self.progress.line(time.monotonic() - self.started, case))
            self._reporter().rewrite(line[: self._width()], erase=True)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        case = dict(report.user_properties).get("case")
        if case:
            self.ran[str(case)] = None

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if not self.controller or _case_id(nodeid) not in self.progress.pending:
            return
        self.progress.finished(_case_id(nodeid))
        done = self.progress.done
        if not self.live and self.every and (done % self.every == 0 or not self.progress.pending):
            reporter = self._reporter()
            reporter.ensure_newline()  # pytest starts the file's name again after our line
            if reporter._tw.width_of_current_line:  # -q: after the progress characters
                reporter._tw.line()
            reporter._tw.line(self.progress.line(time.monotonic() - self.started))

    @pytest.hookimpl(trylast=True)  # after the verdict counts
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.controller or self.config.option.collectonly:  # nothing ran: nothing stale
            return

        def write(text: str) -> None:
            _write(terminalreporter, text)

        try:
            left_out = self._this_run_metadata().get("left_out", [])
            records = self._this_run()
        except JournalError as exc:
            write(f"npu-hil: cannot summarise the run: {exc}")
            return
        if self.shard:
            write(f"npu-hil: shard {self.shard} of the selected cases (--shard)")
        if left_out:
            terminalreporter.section("npu-hil slow tier left out")
            write(f"{len(left_out)} slow case(s) not run (--tier full runs them):")
            for item in left_out:
                write(f"  {item['id']}: {item['reason']}")
        timeouts = [r for r in records if r.verdict == "infra-error" and TIMED_OUT in r.detail]
        if timeouts:
            terminalreporter.section("npu-hil timeouts")
            for record in timeouts:
                write(f"{record.id}: {record.duration_s:.0f} s elapsed: {record.detail}")
        if self.known:
            self._known_summary(terminalreporter, records, self.known)
        flaky = [record for record in records if record.flaky]
        if flaky:
            terminalreporter.section("npu-hil flaky")
            fails = "do not fail the run (--flaky-ok)" if self.flaky_ok else "fail the run"
            write(f"{len(flaky)} failing case(s) flap in the history store; they {fails}:")
            for record in flaky:
                assert record.flaky is not None
                write(f"  {record.id} ({record.verdict}): {flaky_text(record.flaky)}")
        if self.baseline:
            self._baseline_summary(terminalreporter, records, self.baseline)
        if self.stored:
            write(self.stored)

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
                self.stored = (
                    f"npu-hil: history store: this run was not written ({exc}); the journal "
                    f"has it: hil history import {self.results}"
                )
            else:
                self.stored = (
                    f"npu-hil: history store {shown(self.history.location)}: run "
                    f"{written.run}, {written.added + written.updated} records written"
                )
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

    def _reporter(self) -> Any:
        return self.config.pluginmanager.get_plugin("terminalreporter")

    def _width(self) -> int:
        return max(20, int(self._reporter()._tw.fullwidth) - 1)

    def _this_run_metadata(self) -> dict[str, Any]:
        """This run's run.json entries: the folder's, or with --append the last appended."""
        return this_run(read_run_metadata(self.results), self.config.getoption("append"))

    def _this_run(self) -> list[CaseRecord]:
        """This run's records, from the journal (which may hold earlier runs' too)."""
        journal = self.journal
        if journal is None:
            journal = read_records(self.results, allow_empty=True)
        return [r for r in journal if record_key(r) in self.ran]

    def _known_summary(self, reporter: Any, records: list[CaseRecord], known: KnownIssues) -> None:
        marked = [record for record in records if record.known]
        changed = [record for record in marked if record.known["status"] == CHANGED]  # type: ignore[index]
        stale = known.stale(records, self.deselected)
        unselected = known.not_selected(records, self.deselected)
        elsewhere = known.elsewhere(records, self.deselected)
        reporter.section("npu-hil known issues")
        _write(
            reporter,
            f"{_shown(known.path)}: {len(marked) - len(changed)} as expected, "
            f"{len(changed)} changed, {len(stale)} stale entr{'y' if len(stale) == 1 else 'ies'}"
            + (f", {unselected} for cases not selected" if unselected else "")
            + (f", {elsewhere} for other platforms" if elsewhere else ""),
        )
        for record in changed:
            _write(reporter, f"changed: {self.changed(record)}")
        for entry in stale:
            _write(reporter, f"stale (matched no case of this run): {entry.label()}")

    def _baseline_summary(
        self, reporter: Any, records: list[CaseRecord], baseline: Baseline
    ) -> None:
        comparison = baseline.compare(records)
        reporter.section("npu-hil against the baseline")
        counts = ", ".join(f"{name} {count}" for name, count in comparison.counts().items())
        _write(reporter, f"{baseline.path}: {counts}")
        for case_id in comparison.new_failures:
            _write(reporter, f"new failure: {case_id}")
        for case_id, old, new in comparison.regressions:
            _write(reporter, f"regression: {case_id}: {old} -> {new}")
        for case_id, old, new in comparison.fixed:
            _write(reporter, f"fixed: {case_id}: {old} -> {new}")
        for case_id, old, new in comparison.changed:
            _write(reporter, f"changed: {case_id}: {old} -> {new}")
        for kind, found in (("new", comparison.new_causes), ("gone", comparison.gone_causes)):
            for key, reading, cases in found:
                _write(reporter, f"{kind} cause {key} ({cases} cases): {reading}")
        for line in perf.summary_lines(records):
            _write(reporter, line)


def _shown(path: str) -> str:
    """``path`` relative to the working directory when it lies below it (the shipped file in
    a checkout), else as given."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _write(reporter: Any, text: str) -> None:
    """A summary line: case ids, known-issues references and notes, record details and file
    names may all hold terminal escapes."""
    reporter.write_line(printable(text))


def _known_issues(value: str, shipped: Path | None) -> KnownIssues | None:
    if value == OFF:
        return None
    if value == VENDOR:
        if shipped is None:
            raise pytest.UsageError(f"--known-issues {VENDOR}: the vendor ships no known issues")
        value = str(shipped)
    try:
        return load_known_issues(value)
    except KnownIssuesError as exc:
        raise pytest.UsageError(printable(f"--known-issues: {exc}")) from None


def _check_resumed_vendor(results: Path, vendor: str) -> None:
    """A usage error when ``--resume`` continues another vendor's run: its records and this
    run's would be one run of two vendors."""
    try:
        before = vendor_of([read_run_metadata(results)], (), str(results))
    except JournalError as exc:
        raise pytest.UsageError(printable(f"--resume: {exc}")) from None
    if before and before != vendor:
        raise pytest.UsageError(
            printable(
                f"--resume: {results} holds a run of vendor {before}; this run's vendor is "
                f"{vendor}: a run has one vendor. Give a new folder (--results DIR)"
            )
        )


def _baseline(value: str | None, vendor: str) -> Baseline | None:
    if value is None:
        return None
    try:
        return Baseline(value, FAILING_VERDICTS, aliases=layer_aliases(), vendor=vendor)
    except (JournalError, OSError) as exc:
        raise pytest.UsageError(printable(f"--baseline {value}: {exc}")) from None  # its journal
