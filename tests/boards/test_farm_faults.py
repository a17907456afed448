"""A farm under faults with two xdist workers: a dead exporter, a place whose board is down, a
board that hangs mid-run, a coordinator restart and a killed run, against a real labgrid
coordinator, exporters and loopback sshd boards on 127.0.0.1 (tests/fakes/labgrid_farm.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import yaml
from tests.boards.test_farm import boards_folder, finish, run_suite
from tests.fakes.labgrid_farm import Farm, PowerSwitch
from tests.fakes.sshd import SELECTION, SshServer, suite_command, wait_until, write_sysroot
from tests.helpers import paths

from harness.results.journal import read_records
from harness.results.records import BOARD_LOG


def test_a_dead_exporter_costs_its_worker_only_and_the_run_finishes_on_the_healthy_place(
    two_exporters: tuple[Farm, list[SshServer]], tmp_path: Path
) -> None:
    coordinator, servers = two_exporters
    coordinator.stop_exporter("exp-a")  # rk3562-a's host lost power
    folder = boards_folder(coordinator, servers, tmp_path, tags={"soc": "rk3562"}, wait=60)
    code, output = finish(run_suite(tmp_path, folder, "-n", "2"))
    assert code == 0, output  # every case passed: nothing failed but the place
    records = read_records(tmp_path / "results")
    assert sorted(r.id for r in records) == sorted(SELECTION)
    assert {r.backend for r in records} == {"rk3562-b"}
    assert "the run goes on without worker gw1" in output
    assert "rk3562-a: its resources are not exported (exporter gone?)" in output
    assert "1 of 2 workers started" in output
    assert coordinator.acquired() == [] and coordinator.reservations().strip() == ""


def test_a_place_whose_board_is_down_is_skipped_for_another_matching_place(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path
) -> None:
    coordinator, servers = farm
    folder = boards_folder(coordinator, servers, tmp_path, tags={"soc": "rk3562"}, wait=60)
    servers[0].stop()  # rk3562-a is leasable, but its board does not answer
    code, output = finish(run_suite(tmp_path, folder, "-n", "2"))
    assert code == 0, output  # not exit 6: rk3562-b matches the tags and is free
    records = read_records(tmp_path / "results")
    assert sorted(r.id for r in records) == sorted(SELECTION)
    assert {r.backend for r in records} == {"rk3562-b"}
    assert "labgrid place rk3562-a: unreachable" in output
    assert coordinator.acquired() == [] and coordinator.reservations().strip() == ""


class Terminal:
    """What a run writes on its terminal (stdout and stderr), read as it comes: each line with
    the moment it arrived."""

    def __init__(self, run: subprocess.Popen[str]) -> None:
        self.run = run
        self.lines: list[tuple[float, str]] = []
        self._arrived = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read, args=(stream,), daemon=True)
            for stream in (run.stdout, run.stderr)
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            with self._arrived:
                self.lines.append((time.monotonic(), line.rstrip("\n")))
                self._arrived.notify_all()

    def first(self, wanted: Callable[[str], bool], timeout: float) -> tuple[float, str] | None:
        """The first line ``wanted`` accepts, waiting up to ``timeout`` for it."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                found = next((item for item in self.lines if wanted(item[1])), None)
                left = deadline - time.monotonic()
                if found is not None or left <= 0 or self.run.poll() is not None:
                    return found
                self._arrived.wait(min(left, 1.0))

    def finish(self) -> tuple[int, str]:
        self.run.wait(timeout=900)
        for reader in self._readers:
            reader.join(timeout=60)
        return self.run.returncode, "\n".join(line for _, line in self.lines)


def test_a_hung_board_is_on_the_terminal_as_it_happens_and_its_lost_case_keeps_board_and_log(
    sshd_factory: Callable[[], SshServer], tmp_path: Path
) -> None:
    server = sshd_factory()
    switch = PowerSwitch([server])  # labgrid's simplerest power switch, answered here
    coordinator = Farm(tmp_path / "farm")
    hung: list[psutil.Process] = []
    try:
        coordinator.export({"board-a": server}, power=switch)
        coordinator.place("rk3562-a", "board-a", soc="rk3562")
        coordinator.client("-p", "rk3562-a", "add-match", "exp/board-a/NetworkPowerPort")
        folder = boards_folder(coordinator, [server], tmp_path, place="rk3562-a", recovery_wait=120)
        board_file = folder / "farm-rk3562.yaml"
        document = yaml.safe_load(board_file.read_text())
        document["test_faults"] = {SELECTION[1]: "hang"}  # the case on the board as it hangs
        board_file.write_text(yaml.safe_dump(document, sort_keys=False))
        # one xdist worker: its lines reach the terminal through the controller
        terminal = Terminal(
            run_suite(tmp_path, folder, "-n", "1", "--hil-batch", "1", "--hil-timeout", "60")
        )
        journal = tmp_path / "results" / "journal.jsonl"
        assert wait_until(lambda: journal.is_file() and journal.read_text().count("\n") >= 1, 300)
        assert server.process is not None
        listener = psutil.Process(server.process.pid)
        hung += [listener, *listener.children(recursive=True)]
        for process in hung:  # the board hangs: nothing on it answers any more
            process.suspend()
        hung_at = time.monotonic()
        said = terminal.first(lambda line: "[gw0] board rk3562-a: no answer" in line, 300)
        power_cycled = list(switch.switched)
        code, output = terminal.finish()
    finally:
        for process in hung:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        coordinator.stop()
        switch.stop()
    assert said is not None, output
    assert said[1].startswith("npu-hil: [gw0] board rk3562-a: no answer"), said
    assert power_cycled == [], output  # said while it happened, before the recovery began
    assert "power-cycling its labgrid place, then checking it every 2 s" in output
    print(f"first line {said[0] - hung_at:.1f} s after the board hung: {said[1]}")
    assert code == 1, output  # the one case lost is an infra error
    assert switch.switched == [(0, 0), (0, 1)], output
    records = {r.id: r for r in read_records(tmp_path / "results")}
    lost = records[SELECTION[1]]
    assert lost.verdict == "infra-error" and lost.backend == "rk3562-a", lost
    assert "was power-cycled through its labgrid place and answered again after" in lost.detail
    kernel_log = (tmp_path / "results" / lost.artifacts / BOARD_LOG).read_text()
    assert kernel_log.startswith("# read once the power-cycled board answered again"), kernel_log
    for case in (SELECTION[0], *SELECTION[2:]):
        assert records[case].backend == "rk3562-a" and records[case].verdict != "infra-error"


def test_a_lease_lost_mid_run_leaves_the_lost_case_on_its_board_with_its_kernel_log(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path
) -> None:
    coordinator, servers = farm
    folder = boards_folder(coordinator, servers, tmp_path, tags={"soc": "rk3562"})
    coordinator.client("-p", "rk3562-b", "acquire")  # by hand: the run leases rk3562-a
    board_file = folder / "farm-rk3562.yaml"
    document = yaml.safe_load(board_file.read_text())
    document["test_faults"] = {SELECTION[1]: "hang"}  # times out on the board (a kernel log)
    board_file.write_text(yaml.safe_dump(document, sort_keys=False))
    run = run_suite(tmp_path, folder, "--hil-batch", "1", "--hil-timeout", "20")
    journal = tmp_path / "results" / "journal.jsonl"
    assert wait_until(lambda: journal.is_file() and journal.read_text().count("\n") >= 1, 300)
    coordinator.restart_coordinator()  # it forgets every acquisition: rk3562-b is free again
    coordinator.client("-p", "rk3562-a", "acquire")  # and someone takes rk3562-a at once
    code, output = finish(run)
    assert code == 1, output  # the case of the lost lease: an infra error
    records = {r.id: r for r in read_records(tmp_path / "results")}
    lost = records[SELECTION[1]]
    assert lost.verdict == "infra-error", lost
    assert "leased again: labgrid place rk3562-b runs the next cases" in lost.detail, lost.detail
    assert lost.backend == "rk3562-a"  # where it ran, not the place leased after it
    kernel_log = (tmp_path / "results" / lost.artifacts / BOARD_LOG).read_text()
    assert kernel_log.startswith("# board kernel log"), kernel_log
    assert {records[case].backend for case in SELECTION[2:]} == {"rk3562-b"}
    coordinator.client("-p", "rk3562-a", "release")
    assert coordinator.acquired() == [] and coordinator.reservations().strip() == ""


def test_a_killed_runs_report_says_it_was_cut_short_and_which_cases_never_ran(
    sshd: SshServer, tmp_path: Path
) -> None:
    folder = tmp_path / "boards"
    sshd.board_file(
        folder, sysroot=str(write_sysroot(tmp_path / "sysroot")), test_faults={SELECTION[1]: "hang"}
    )
    run = subprocess.Popen(
        suite_command(tmp_path, folder, "results", "--hil-batch", "1", "--hil-timeout", "300"),
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    journal = tmp_path / "results" / "journal.jsonl"
    try:
        assert wait_until(lambda: journal.is_file() and journal.read_text().count("\n") >= 1, 300)
    finally:
        os.killpg(run.pid, signal.SIGKILL)  # as a CI runner stops a job: the whole tree
        run.wait(timeout=60)
    hil = Path(sys.executable).with_name("hil")
    done = subprocess.run(
        [str(hil), "report", str(tmp_path / "results")], capture_output=True, text=True,
        timeout=300, env={**os.environ, "PYTHONPATH": str(paths.ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = (tmp_path / "results" / "report.md").read_text()
    said = "the run did not end (killed, or still running): 3 of its 4 selected cases never ran: "
    assert said in report, report[:3000]
    line = report[report.index(said) :].splitlines()[0]
    shown = [case.replace("[", r"\[").replace("]", r"\]") for case in SELECTION]  # Markdown
    assert all(case in line for case in shown[1:]) and shown[0] not in line, line
    assert "cut short" in (tmp_path / "results" / "report.html").read_text()
