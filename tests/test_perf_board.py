"""Timing on a loopback board (``--perf``): real sshd, real runner, a fake sysfs for the clocks.

The stand-in's timed inference is a simulated NPU latency (a sleep; its "slow" and "noisy"
test faults stretch it), so these tests hold on a loaded machine.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sshd import SshServer, onnx_model, write_sysroot
from sysfs import CPU0, NPU, TEMP, write_sysfs

from harness.boards.inventory import load_board
from harness.targets.job import Job
from harness.targets.timing import PerfRequest, timing_record
from harness.vendors.rknn.board import BoardBackend
from harness.vendors.rknn.convert import ConversionCache
from harness.vendors.rknn.runtimes import RUNTIMES

RNG = np.random.default_rng(11)


def relu_job(case_id: str, perf: PerfRequest | None) -> Job:
    x = RNG.standard_normal((1, 3, 4, 4)).astype(np.float32)
    return Job(onnx_model("Relu"), [x], "rk3562", case_id=case_id, perf=perf)


def board_with_sysfs(sshd: SshServer, tmp_path: Path, **fields: object):  # type: ignore[no-untyped-def]
    sysroot = write_sysfs(write_sysroot(tmp_path / "sysroot"))
    path = sshd.board_file(tmp_path / "boards", sysroot=str(sysroot), **fields)
    return load_board(path, RUNTIMES), sysroot


def test_timed_runs_record_statistics_clock_and_conditions(
    sshd: SshServer, tmp_path: Path, board_cache: ConversionCache
) -> None:
    board, sysroot = board_with_sysfs(sshd, tmp_path, test_faults={"slow": "slow"})
    perf = PerfRequest(warmup=2, runs=7, cap_s=5)
    jobs = [relu_job("plain", perf), relu_job("slow", perf), relu_job("untimed", None)]
    with BoardBackend(board, cache=board_cache) as backend:
        plain, slow, untimed = backend.run_batch(jobs)
    assert plain.outputs is not None and plain.infra_error is None
    record = timing_record(plain.perf)
    assert record["clock"] == "wall" and record["runs"] == 7 and record["warmup"] == 2
    assert record["min_s"] <= record["median_s"] <= record["p90_s"] <= max(record["samples_s"])
    assert record["min_s"] >= 0.004  # the stand-in's simulated latency
    before = record["conditions"]["before"]
    assert before["npu_freq"] == "600000000" and before["npu_governor"] == "rknpu_ondemand"
    assert before["cpu0_governor"] == "schedutil" and before["soc_temp"] == "45000"
    assert before["ddr_freq"] == "1560000000"
    assert record["clocks_changed"] == []
    assert timing_record(slow.perf)["median_s"] > 1.6 * record["median_s"]
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
