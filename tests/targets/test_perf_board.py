"""Timing on a loopback board (``--perf``): real sshd, real runner, a fake sysfs for the clocks.

The stand-in's timed inference is a simulated NPU latency (a sleep; its "slow" and "noisy"
test faults stretch it), so these tests hold on a loaded machine.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from tests.fakes.sshd import SshServer, onnx_model, write_sysroot
from tests.fakes.sysfs import CPU0, NPU, TEMP, write_sysfs
from tests.helpers.paths import SUITE
from tests.helpers.perf import CASES, board_with_sysfs, run_suite
from tests.helpers.records import make_record

from harness.boards.inventory import load_board
from harness.cli import main
from harness.results.journal import Journal, read_records
from harness.targets.job import Job
from harness.targets.timing import JobTiming, timing_record
from harness.vendors.rknn.board import RknnBoardTarget
from harness.vendors.rknn.runners.runner_session import runner_module
from harness.vendors.rknn.runtimes import RUNTIMES
from harness.vendors.rknn.toolkit.convert import ConversionCache

RNG = np.random.default_rng(11)


def relu_job(case_id: str, perf: JobTiming | None) -> Job:
    x = RNG.standard_normal((1, 3, 4, 4)).astype(np.float32)
    return Job(onnx_model("Relu"), [x], "rk3562", case_id=case_id, perf=perf)


def test_timed_runs_record_statistics_clock_and_conditions(
    sshd: SshServer, tmp_path: Path, board_cache: ConversionCache
) -> None:
    board, sysroot = board_with_sysfs(sshd, tmp_path, test_faults={"slow": "slow"})
    perf = JobTiming(warmup=2, runs=7, cap_s=5)
    jobs = [relu_job("plain", perf), relu_job("slow", perf), relu_job("untimed", None)]
    with RknnBoardTarget(board, cache=board_cache) as target:
        plain, slow, untimed = target.run_batch(jobs)
    assert plain.outputs is not None and plain.infra_error is None
    record = timing_record(plain.perf)
    # the stand-in's own clock: the NPU time it simulates (a loaded host cannot move it)
    assert record["clock"] == "simulated" and record["runs"] == 7 and record["warmup"] == 2
    assert record["min_s"] <= record["median_s"] <= record["p90_s"] <= max(record["samples_s"])
    assert record["min_s"] >= 0.004  # the stand-in's simulated latency
    before = record["conditions"]["before"]
    assert before["npu_freq"] == "600000000" and before["npu_governor"] == "rknpu_ondemand"
    assert before["cpu0_governor"] == "schedutil" and before["soc_temp"] == "45000"
    assert before["ddr_freq"] == "1560000000"
    assert record["clocks_changed"] == []
    assert timing_record(slow.perf)["median_s"] == pytest.approx(2 * record["median_s"])
    assert untimed.perf == {} and untimed.outputs is not None
    assert (sysroot / NPU / "cur_freq").exists() and (sysroot / CPU0).is_dir()
    assert (sysroot / TEMP).exists()


def test_a_clock_that_changes_during_the_timed_runs_marks_the_run() -> None:
    perf = {
        "clock": "wall",
        "samples_s": [0.01, 0.012, 0.011],
        "conditions_before": {"npu_freq": "600000000", "soc_temp": "45000"},
        "conditions_after": {"npu_freq": "300000000", "soc_temp": "61000"},
    }
    record = timing_record(perf)
    assert record["clocks_changed"] == ["npu_freq"]  # a temperature is a reading, not a clock
    assert record["median_s"] == 0.011 and record["mad_s"] == 0.001


def judged(results: Path) -> dict[str, dict[str, object]]:
    """Case id -> its ``perf.baseline`` judgement."""
    return {r.id: r.perf["baseline"] for r in read_records(results)}


def test_a_run_against_itself_has_no_regression_and_a_2x_slower_case_has_exactly_one(
    sshd: SshServer, tmp_path: Path
) -> None:
    _, sysroot = board_with_sysfs(sshd, tmp_path)
    boards = tmp_path / "boards"
    first = run_suite(tmp_path, boards, "base")
    assert first.returncode == 0, first.stdout + first.stderr
    records = read_records(tmp_path / "base")
    assert sorted(r.id for r in records) == sorted(CASES)
    for record in records:  # every case timed, on the board, by the wall clock
        assert record.perf["runs"] == 9 and record.perf["clock"] == "simulated", record.perf
        assert record.perf["conditions"]["before"]["npu_freq"] == "600000000"
    baseline = ["--baseline", str(tmp_path / "base")]
    for repetition in range(5):
        again = run_suite(tmp_path, boards, f"again{repetition}", *baseline)
        assert again.returncode == 0, again.stdout + again.stderr
        verdicts = {j["verdict"] for j in judged(tmp_path / f"again{repetition}").values()}
        assert verdicts <= {"unchanged", "improvement"}, verdicts
        assert "latency: 0 regression" in again.stdout

    sshd.board_file(boards, sysroot=str(sysroot), test_faults=dict.fromkeys(CASES, "noisy"))
    noisy = run_suite(tmp_path, boards, "noisy", *baseline)
    assert noisy.returncode == 0, noisy.stdout + noisy.stderr
    assert "latency: 0 regression" in noisy.stdout

    sshd.board_file(boards, sysroot=str(sysroot), test_faults={CASES[2]: "slow"})
    slow = run_suite(tmp_path, boards, "slow", *baseline)
    assert slow.returncode == 1, slow.stdout + slow.stderr
    assert "latency: 1 regression" in slow.stdout
    verdicts = judged(tmp_path / "slow")
    assert [case for case, j in verdicts.items() if j["verdict"] == "regression"] == [CASES[2]]
    assert verdicts[CASES[2]]["confirmed"] is True  # the re-run was slower too
    assert "1 failed" in slow.stdout

    # a known issue with verdict perf-regression excuses it (xfail), and nothing else
    known = tmp_path / "known.yaml"
    known.write_text(
        f"known_issues:\n  - cases: [{CASES[2]!r}]\n    verdict: perf-regression\n"
        "    reference: RK-77\n    note: slower since the fault\n"
    )
    excused = run_suite(tmp_path, boards, "excused", *baseline, "--known-issues", str(known))
    assert excused.returncode == 0, excused.stdout + excused.stderr
    assert "1 xfailed" in excused.stdout and "latency: 1 regression" in excused.stdout


def test_hil_run_perf_times_a_model_on_a_board_and_says_the_simulator_cannot(
    sshd: SshServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "relu.onnx"
    model.write_bytes(onnx_model("Relu"))
    results = ["--results", str(tmp_path / "sim"), "--hil-cache", "off"]
    assert main(["run", str(model), *results, "--perf", "--perf-runs", "5"]) == 0
    said = capsys.readouterr().out
    assert "timing: no timing: no timing on the simulator" in said
    [record] = read_records(tmp_path / "sim")
    assert set(record.perf) == {"unavailable"}

    board, _ = board_with_sysfs(sshd, tmp_path)
    on_board = ["--boards", str(board.source), "--results", str(tmp_path / "board")]
    command = ["run", str(model), *on_board, "--perf", "--perf-runs", "5", "--layers-perf"]
    assert main(command) == 0
    said = capsys.readouterr().out
    assert "timing: median" in said and "over 5 runs after 3 warm-up, clock simulated" in said
    assert "no per-layer times: rknn-toolkit-lite2 exposes no per-layer times" in said
    [record] = read_records(tmp_path / "board")
    assert record.perf["runs"] == 5 and record.backend == "loopback"


def test_hil_run_refuses_bad_timing_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "relu.onnx"
    model.write_bytes(onnx_model("Relu"))
    assert main(["run", str(model), "--layers-perf", "--results", str(tmp_path)]) == 2
    assert "--layers-perf needs --perf" in capsys.readouterr().err
    assert main(["run", str(model), "--perf", "--perf-runs", "0", "--results", str(tmp_path)]) == 2
    assert "timed runs at least 1 (got 0)" in capsys.readouterr().err


def read(sysroot: Path, name: str) -> str:
    return (sysroot / NPU / name).read_text().strip()


def test_the_npu_clock_is_pinned_for_the_runs_and_restored_after(
    sshd: SshServer, tmp_path: Path, board_cache: ConversionCache
) -> None:
    board, sysroot = board_with_sysfs(sshd, tmp_path)
    perf = JobTiming(warmup=0, runs=3, cap_s=5, pin_npu="max")
    with RknnBoardTarget(board, cache=board_cache) as target:
        [observation] = target.run_batch([relu_job("pinned", perf)])
        # pinned while the session lasts: the userspace governor at the top frequency
        assert read(sysroot, "governor") == "userspace"
        assert read(sysroot, "userspace/set_freq") == "1000000000"
    record = timing_record(observation.perf)
    assert record["pinned"] == {"npu_freq": "1000000000", "how": "userspace"}
    assert record["conditions"]["before"]["npu_governor"] == "userspace"
    # restored when the session closed
    assert read(sysroot, "governor") == "rknpu_ondemand"
    assert (read(sysroot, "min_freq"), read(sysroot, "max_freq")) == ("300000000", "1000000000")


def test_without_a_userspace_governor_min_and_max_pin_the_clock(
    sshd: SshServer, tmp_path: Path, board_cache: ConversionCache
) -> None:
    sysroot = write_sysfs(write_sysroot(tmp_path / "sysroot"), userspace=False)
    board = load_board(sshd.board_file(tmp_path / "boards", sysroot=str(sysroot)), RUNTIMES)
    perf = JobTiming(warmup=0, runs=2, cap_s=5, pin_npu="600000000")
    with RknnBoardTarget(board, cache=board_cache) as target:
        [observation] = target.run_batch([relu_job("pinned", perf)])
        assert (read(sysroot, "min_freq"), read(sysroot, "max_freq")) == ("600000000",) * 2
    assert observation.perf["pinned"] == {"npu_freq": "600000000", "how": "min=max"}
    assert (read(sysroot, "min_freq"), read(sysroot, "max_freq")) == ("300000000", "1000000000")
    assert read(sysroot, "governor") == "rknpu_ondemand"


def test_a_board_without_the_npu_devfreq_node_says_so_and_still_times(
    sshd: SshServer, tmp_path: Path, board_cache: ConversionCache
) -> None:
    board, sysroot = board_with_sysfs(sshd, tmp_path)
    shutil.rmtree(sysroot / NPU)
    perf = JobTiming(warmup=0, runs=2, cap_s=5, pin_npu="max")
    with RknnBoardTarget(board, cache=board_cache) as target:
        [observation] = target.run_batch([relu_job("unpinned", perf)])
    assert observation.perf["pinned"] == {"refused": f"no NPU devfreq folder at {sysroot}/{NPU}"}
    record = timing_record(observation.perf)
    assert record["runs"] == 2 and record["conditions"]["before"]["npu_freq"] == "unreadable"


def test_bad_timing_options_stop_the_run_before_collection(tmp_path: Path) -> None:
    for option, value, said in (
        ("--perf-runs", "0", "timed runs at least 1 (got 0)"),
        ("--perf-pin-npu", "fast", "pin the NPU to a frequency in Hz or max, not 'fast'"),
        ("--perf-k", "-2", "k and percent must be 0 or more"),
    ):
        command = [sys.executable, "-m", "pytest", str(SUITE), "--collect-only", "-q"]
        command += ["--backend", "sim", "--results", str(tmp_path / "r"), "--perf"]
        command += ["--baseline", str(tmp_path / "base"), option, value]
        Journal(tmp_path / "base").append(make_record("x"))
        run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert run.returncode == 4 and said in run.stderr, run.stderr


class Sleeper:
    """A runtime whose inference takes ``seconds`` of wall time (``own``: and says so)."""

    def __init__(self, seconds: float, own: bool) -> None:
        self.seconds = seconds
        self.run_duration_s: float | None = None
        self.own = own

    def inference(self, inputs: list[np.ndarray], data_format: str) -> list[np.ndarray]:
        time.sleep(self.seconds)
        if self.own:
            self.run_duration_s = self.seconds / 1000  # its own clock, whatever the host did
        return inputs


def test_the_runner_times_by_the_wall_clock_unless_the_runtime_has_its_own(
    tmp_path: Path,
) -> None:
    timed_runs = runner_module().timed_runs
    case = {"data_format": "nchw", "conditions": {"soc_temp": str(tmp_path / "missing")}}
    perf = {"warmup": 1, "runs": 4, "cap_s": 5.0}
    wall = timed_runs(Sleeper(0.01, own=False), [], case, perf)
    assert wall["clock"] == "wall" and len(wall["samples_s"]) == 4
    assert min(wall["samples_s"]) >= 0.01
    assert wall["conditions_before"] == {"soc_temp": "unreadable"}
    own = timed_runs(Sleeper(0.01, own=True), [], case, perf)
    assert own["clock"] == "simulated" and own["samples_s"] == [0.00001] * 4
    capped = timed_runs(Sleeper(0.02, own=False), [], case, {**perf, "cap_s": 0.05})
    assert capped["capped"] and 2 <= len(capped["samples_s"]) < 4
