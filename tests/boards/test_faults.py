"""Faults injected for real on a loopback board: a dead server, a killed runner, a hang, a
stopped (wedged) runner, an output corrupted in transit, and hostile names everywhere."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import psutil
from tests.fakes.sshd import SshServer, onnx_model, runner_processes, wait_until

from harness.boards.inventory import Board
from harness.targets.job import Job
from harness.targets.observation import Observation
from harness.vendors.rknn.board import RknnBoardTarget
from harness.vendors.rknn.toolkit.convert import ConversionCache

RNG = np.random.default_rng(11)
SLOW = (1, 16, 256, 256)  # the stand-in needs ~0.4 s to build this: a fault lands mid-case


def case(case_id: str, shape: tuple[int, ...] = (1, 3, 4, 4)) -> Job:
    x = RNG.standard_normal(shape).astype(np.float32)
    return Job(
        model=onnx_model("Relu", shape), inputs=[x], target_platform="rk3562", case_id=case_id
    )


def assert_correct(observation: Observation, request: Job) -> None:
    assert observation.infra_error is None, observation.infra_error
    assert observation.outputs is not None
    np.testing.assert_allclose(observation.outputs[0], np.maximum(request.inputs[0], 0), atol=2e-3)


def runner_pids(board: Board) -> list[int]:
    return [process.pid for process in runner_processes(board.workdir)]


def gone(pids: list[int]) -> bool:
    return not any(psutil.pid_exists(pid) for pid in pids)


def test_a_dropped_connection_is_reestablished_and_the_case_retried_once(
    loopback_board: Board, sshd: SshServer, board_cache: ConversionCache
) -> None:
    requests = [case("before"), case("victim", SLOW), case("after")]
    old_runners: list[int] = []

    def drop_server(case_id: str) -> None:
        if case_id == "victim" and not old_runners:
            old_runners.extend(runner_pids(loopback_board))
            sshd.stop()  # listener and session processes killed: the connection dies
            sshd.start()

    with RknnBoardTarget(loopback_board, cache=board_cache, on_case_started=drop_server) as target:
        observations = target.run_batch(requests)
        assert target.down is None
    for observation, request in zip(observations, requests, strict=True):
        assert_correct(observation, request)
    assert "retried once after: board loopback: SSH connection lost" in observations[1].log
    assert "retried" not in observations[0].log + observations[2].log
    assert len(old_runners) == 1
    assert wait_until(lambda: gone(old_runners)), "the orphaned runner did not exit by itself"
    assert runner_processes(loopback_board.workdir) == []


def test_a_board_that_stays_down_is_marked_down_and_fails_fast(
    loopback_board: Board, sshd: SshServer, board_cache: ConversionCache
) -> None:
    requests = [case("before"), case("victim", SLOW), case("after")]

    def kill_server(case_id: str) -> None:
        if case_id == "victim":
            sshd.stop()

    target = RknnBoardTarget(
        loopback_board, cache=board_cache, reconnect_s=2, on_case_started=kill_server
    )
    with target:
        before, victim, after = target.run_batch(requests)
        assert_correct(before, requests[0])
        assert target.down is not None and "cannot connect" in target.down
        for lost in (victim, after):
            assert lost.infra_error is not None
            assert lost.infra_error.startswith("board loopback is down: ")
            assert lost.backend == "loopback" and lost.outputs is None
        started = time.monotonic()
        later = target.run(case("later"))
        assert time.monotonic() - started < 1.0
        assert later.infra_error == victim.infra_error
    assert wait_until(lambda: runner_processes(loopback_board.workdir) == [])


def test_a_killed_runner_costs_one_case_and_a_new_runner_takes_over(
    loopback_board: Board, board_cache: ConversionCache
) -> None:
    requests = [case("before"), case("victim", SLOW), case("after")]
    pids: dict[str, list[int]] = {}

    def kill_runner(case_id: str) -> None:
        pids[case_id] = runner_pids(loopback_board)
        if case_id == "victim":
            for pid in pids[case_id]:
                psutil.Process(pid).kill()

    with RknnBoardTarget(loopback_board, cache=board_cache, on_case_started=kill_runner) as target:
        before, victim, after = target.run_batch(requests)
    assert_correct(before, requests[0])
    assert_correct(after, requests[2])
    assert victim.infra_error is not None and victim.outputs is None
    assert "runner exited during the batch" in victim.infra_error
    assert "killed by a signal" in victim.infra_error
    assert len(pids["victim"]) == 1 and pids["after"] != pids["victim"]
    assert runner_processes(loopback_board.workdir) == []


def test_a_hanging_case_times_out_on_the_board_and_costs_only_itself(
    loopback_board: Board, board_cache: ConversionCache
) -> None:
    requests = [case("before"), case("hangs"), case("after")]
    # A host grace far beyond the case timeout: only the board-side deadline can end the hang.
    with RknnBoardTarget(
        loopback_board, cache=board_cache, timeout_s=3, host_grace_s=120
    ) as target:
        before, hung, after = target.run_batch(requests, test_faults={"hangs": "hang"})
    assert hung.infra_error is not None
    assert "no result within the case timeout on the board" in hung.infra_error
    assert hung.failed_stage is None and hung.outputs is None
    assert_correct(before, requests[0])
    assert_correct(after, requests[2])
    assert runner_processes(loopback_board.workdir) == []


def test_a_wedged_runner_is_caught_by_the_host_timeout_and_killed(
    loopback_board: Board, board_cache: ConversionCache
) -> None:
    requests = [case("wedges"), case("after")]
    wedged: list[int] = []

    def remember(case_id: str) -> None:
        if case_id == "wedges":
            wedged.extend(runner_pids(loopback_board))

    with RknnBoardTarget(
        loopback_board, cache=board_cache, timeout_s=2, host_grace_s=2, on_case_started=remember
    ) as target:
        stopped, after = target.run_batch(requests, test_faults={"wedges": "wedge"})
    assert stopped.infra_error is not None and "host-side timeout" in stopped.infra_error
    assert "runner killed" in stopped.infra_error
    assert_correct(after, requests[1])
    assert len(wedged) == 1 and wait_until(lambda: gone(wedged), timeout=5)


def test_an_output_corrupted_in_transit_is_caught_by_its_checksum(
    loopback_board: Board, board_cache: ConversionCache
) -> None:
    requests = [case("before"), case("corrupted"), case("after")]
    pids: list[list[int]] = []
    with RknnBoardTarget(
        loopback_board,
        cache=board_cache,
        on_case_started=lambda _: pids.append(runner_pids(loopback_board)),
    ) as target:
        before, corrupted, after = target.run_batch(
            requests, test_faults={"corrupted": "corrupt-output"}
        )
    assert corrupted.infra_error is not None
    assert "output 0 corrupted in transit: sha256" in corrupted.infra_error
    assert corrupted.outputs is None and corrupted.failed_stage is None
    assert_correct(before, requests[0])
    assert_correct(after, requests[2])
    assert pids[0] == pids[1] == pids[2]  # framing intact: no restart needed


def test_hostile_work_directory_and_case_ids_are_only_data(
    loopback_board: Board, board_cache: ConversionCache, tmp_path: Path
) -> None:
    hostile = "work dir 'q' \"dq\"; touch PWNED1; $(touch PWNED2) `touch PWNED3` & | > x"
    workdir = tmp_path / hostile / "-n"
    board = dataclasses.replace(loopback_board, workdir=str(workdir))
    ids = ["a; touch PWNED4", "$(touch PWNED5)", "`touch PWNED6`", "' \" \\ \n", "-rf /"]
    requests = [case(case_id) for case_id in ids]
    started: list[str] = []
    with RknnBoardTarget(board, cache=board_cache, on_case_started=started.append) as target:
        observations = target.run_batch(requests, test_faults={ids[1]: "corrupt-output"})
        assert Path(workdir, ".hil-lock").is_dir()
    assert started == ids
    assert observations[1].infra_error is not None
    for index in (0, 2, 3, 4):
        assert_correct(observations[index], requests[index])
    assert not workdir.exists()
    for folder in (tmp_path, tmp_path / hostile, Path.home(), Path("/")):
        assert not list(folder.glob("PWNED*"))
