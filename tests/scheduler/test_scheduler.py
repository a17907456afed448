"""The session scheduler: growing batches, records in order, and faults in mid-batch.

Real parts: the operator cases, the CaseExecutor, the simulator (with the shared result cache)
and a loopback board whose runner is killed while a batch is on it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from tests.fakes.sshd import runner_processes
from tests.helpers.declared import MODELS
from tests.helpers.paths import SUITE

from harness.boards.inventory import Board
from harness.cases.case import Case
from harness.cases.operators import operator_cases
from harness.pipeline import CaseExecutor, Stages
from harness.results.journal import read_records
from harness.scheduler import BatchSizes, Scheduler
from harness.targets.job import Job
from harness.vendors.rknn.board import RknnBoardTarget
from harness.vendors.rknn.documents.operators import seed_catalogue
from harness.vendors.rknn.model_io.checks import JUDGE
from harness.vendors.rknn.toolkit.convert import Conversion, ConversionCache
from harness.vendors.rknn.toolkit.simulator import SimCache, SimulatorPool
from harness.vendors.rknn.toolkit.simulator import cache as sim_cache

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("rknn") is None, reason="rknn-toolkit2 is not installed"
)
# shared and warm (HIL_CACHE, else ~/.cache/npu-hil/sim): these cases are cheap
SIM_CACHE = sim_cache.CACHE.directory()


def pow_cases(count: int) -> list[Case]:
    cases = [c for c in operator_cases(seed_catalogue(), MODELS).cases if c.op == "Pow"]
    return [c for c in cases if c.dtype == "float16"][:count]


@pytest.fixture
def simulator() -> Iterator[SimulatorPool]:
    with SimulatorPool(timeout_s=120, cache=SimCache(SIM_CACHE)) as pool:
        yield pool


def run_in_order(scheduler: Scheduler, cases: list[Case]) -> list[str]:
    """What the plugin does: each test asks for its case, naming the ones after it."""
    return [scheduler.record(case, cases[i + 1 :]).id for i, case in enumerate(cases)]


def test_batch_sizes_start_small_double_and_restart_after_trouble() -> None:
    sizes = BatchSizes(largest=10)
    assert [sizes.take() for _ in range(5)] == [2, 4, 8, 10, 10]
    sizes.trouble()
    assert sizes.take() == 2
    assert BatchSizes(largest=1).take() == 1
    with pytest.raises(ValueError, match="at least 1, got 0"):
        BatchSizes(largest=0)


def test_cases_run_in_growing_batches_and_are_journaled_in_order(
    simulator: SimulatorPool, tmp_path: Path
) -> None:
    cases = pow_cases(7)
    executor = CaseExecutor(tmp_path, simulator, Stages(judge=JUDGE))
    scheduler = Scheduler(executor.execute_many, BatchSizes(largest=4))
    assert run_in_order(scheduler, cases) == [case.id for case in cases]
    assert scheduler.batches == [2, 4, 1]
    assert [record.id for record in read_records(tmp_path)] == [case.id for case in cases]


def test_with_batch_size_one_each_case_runs_alone(simulator: SimulatorPool, tmp_path: Path) -> None:
    cases = pow_cases(3)
    scheduler = Scheduler(CaseExecutor(tmp_path, simulator).execute_many, BatchSizes(1))
    assert run_in_order(scheduler, cases) == [case.id for case in cases]
    assert scheduler.batches == [1, 1, 1]


def test_a_case_that_cannot_be_built_fails_alone(simulator: SimulatorPool, tmp_path: Path) -> None:
    good = pow_cases(3)
    broken = dataclasses.replace(good[1], id="rk3562/Nope/float16/x", op="Nope")
    cases = [good[0], broken, good[2]]
    scheduler = Scheduler(CaseExecutor(tmp_path, simulator).execute_many, BatchSizes(4, first=3))
    assert scheduler.record(cases[0], cases[1:]).id == good[0].id
    with pytest.raises(ValueError, match="unknown operator 'Nope'"):
        scheduler.record(broken, cases[2:])
    assert scheduler.record(cases[2]).id == good[2].id
    assert scheduler.batches == [3, 1]  # the case after the broken one ran again
    assert [record.id for record in read_records(tmp_path)] == [good[0].id, good[2].id]


def test_a_runner_killed_mid_batch_costs_only_the_case_in_flight(
    loopback_board: Board, board_cache: ConversionCache, tmp_path: Path
) -> None:
    cases = pow_cases(6)
    victim = cases[2].id  # the second batch has 4 cases: this one and three after it
    killed: list[int] = []

    def kill_runner(case_id: str) -> None:
        if case_id == victim and not killed:
            for process in runner_processes(loopback_board.workdir):
                killed.append(process.pid)
                psutil.Process(process.pid).kill()

    with RknnBoardTarget(loopback_board, cache=board_cache, on_case_started=kill_runner) as board:
        executor = CaseExecutor(tmp_path, board, Stages(judge=JUDGE))
        scheduler = Scheduler(executor.execute_many, BatchSizes(largest=4))
        assert run_in_order(scheduler, cases) == [case.id for case in cases]
    assert killed
    assert scheduler.batches == [2, 4]
    records = {record.id: record for record in read_records(tmp_path)}
    assert list(records) == [case.id for case in cases]
    # The runner dies while the victim (or, if the victim was quicker than the kill, the case
    # after it) is on the board, or between the two: at most that one case is lost, and the
    # rest of the batch runs on a new runner.
    lost = [record for record in records.values() if record.verdict == "infra-error"]
    assert [record.id for record in lost] in ([], [victim], [cases[3].id])
    assert all("runner exited during the batch" in record.detail for record in lost)
    assert {record.backend for record in records.values()} == {"loopback"}


def run_suite(tmp_path: Path, cases: list[Case], *args: str, **env: str) -> str:
    node_ids = [f"{SUITE}::test_documented_limit[{case.id}]" for case in cases]
    command = [sys.executable, "-m", "pytest", *node_ids, "-p", "no:cacheprovider", "-v"]
    command += ["--results", str(tmp_path / "results"), "--boards", str(tmp_path), *args]
    run = subprocess.run(
        command,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )
    return run.stdout + run.stderr


def test_through_pytest_a_hang_mid_batch_is_the_only_error(tmp_path: Path) -> None:
    cases = pow_cases(3)  # one batch of three: the middle case hangs in the simulator
    hang = f"hang:{cases[1].id}"
    cache = str(tmp_path / "sim-cache")  # the shared cache would answer without the worker
    output = run_suite(
        tmp_path, cases, "--hil-batch", "3", "--hil-timeout", "5", "--hil-cache", cache,
        NPU_HIL_SIM_FAULT=hang,
    )  # fmt: skip
    assert "2 passed, 1 error" in output, output
    records = {record.id: record for record in read_records(tmp_path / "results")}
    assert list(records) == [case.id for case in cases]
    assert records[cases[1].id].verdict == "infra-error"
    assert "timed out after 5 s" in records[cases[1].id].detail
    assert records[cases[0].id].verdict != "infra-error" != records[cases[2].id].verdict


def test_under_xdist_each_case_runs_once(tmp_path: Path) -> None:
    cases = pow_cases(6)
    output = run_suite(tmp_path, cases, "-n", "2", "--hil-cache", str(SIM_CACHE))
    assert "1 failed, 5 passed" in output, output  # values=0 is a documented violation
    assert "created: 2/2 workers" in output, output
    journaled = [record.id for record in read_records(tmp_path / "results")]
    assert sorted(journaled) == sorted(case.id for case in cases)  # none twice, none lost


class RecordingCache(ConversionCache):
    """A real conversion cache that notes each convert_many call: its cases, which were hits."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.calls: list[list[tuple[str, bool]]] = []

    def convert_many(self, requests: Sequence[Job]) -> list[Conversion]:
        conversions = super().convert_many(requests)
        self.calls.append(
            [(r.case_id, c.cached) for r, c in zip(requests, conversions, strict=True)]
        )
        return conversions


def test_the_next_batch_is_converted_while_the_board_runs_this_one(
    loopback_board: Board, tmp_path: Path
) -> None:
    # without their controls, which would be converted first (tests/cases/test_controls.py)
    cases = [replace(case, control=None) for case in pow_cases(6)]
    cache = RecordingCache(tmp_path / "conversions")
    with RknnBoardTarget(loopback_board, cache=cache) as board:
        executor = CaseExecutor(tmp_path / "results", board, Stages(judge=JUDGE))
        scheduler = Scheduler(executor.execute_many, BatchSizes(largest=4), executor.prefetch)
        assert run_in_order(scheduler, cases) == [case.id for case in cases]
    assert scheduler.batches == [2, 4]
    second = [case.id for case in cases[2:]]
    first, prefetched, found = cache.calls
    assert [case_id for case_id, _ in first] == [case.id for case in cases[:2]]
    assert [case_id for case_id, _ in prefetched] == second  # converted during the first batch
    assert not all(cached for _, cached in prefetched)  # (two cases may share one model)
    assert found == [(case_id, True) for case_id in second]  # the second batch finds them all
    records = read_records(tmp_path / "results")
    assert [record.id for record in records] == [case.id for case in cases]
    assert all(record.backend == "loopback" for record in records)
