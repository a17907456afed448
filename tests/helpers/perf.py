"""Timed runs: on a loopback board with a fake sysfs, and journals of timed runs."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from tests.fakes.sshd import SshServer, write_sysroot
from tests.fakes.sysfs import write_sysfs
from tests.helpers.cli import hil
from tests.helpers.paths import SUITE
from tests.helpers.records import make_record

from harness.boards.inventory import load_board
from harness.results.journal import Journal, write_run_metadata
from harness.results.latency import Threshold, latency_change
from harness.results.records import CaseRecord
from harness.targets.timing import timing_record
from harness.vendors.rknn.runtimes import RUNTIMES


def board_with_sysfs(sshd: SshServer, tmp_path: Path, **fields: object):  # type: ignore[no-untyped-def]
    sysroot = write_sysfs(write_sysroot(tmp_path / "sysroot"))
    path = sshd.board_file(tmp_path / "boards", sysroot=str(sysroot), **fields)
    return load_board(path, RUNTIMES), sysroot


CASES = [
    "rk3562/Pow/float16/values=2",
    "rk3562/Pow/float16/values=4",
    "rk3562/Expand/float16/typical",
]


def run_suite(
    tmp_path: Path, boards: Path, results: str, *args: str
) -> subprocess.CompletedProcess[str]:
    node_ids = [f"{SUITE}::test_documented_limit[{case_id}]" for case_id in CASES]
    command = [sys.executable, "-m", "pytest", *node_ids, "-p", "no:cacheprovider"]
    command += ["--results", str(tmp_path / results), "--hil-cache", "off", "--backend", "board"]
    command += ["--hil-conversion-cache", str(tmp_path / "conversions"), "--boards", str(boards)]
    command += ["--perf", "--perf-warmup", "1", "--perf-runs", "9", *args]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)


LAYERS = [
    {"name": "conv_1", "op": "Conv", "target": "NPU", "time_us": 812.0},
    {"name": "pow_7", "op": "Pow", "target": "CPU", "time_us": 2390.0},
    {"name": "relu_2", "op": "Relu", "target": "NPU", "time_us": 35.0},
]


def timed(case_id: str, median_ms: float, **perf: object) -> CaseRecord:
    """A board record timed around ``median_ms`` (+-2%)."""
    samples = [median_ms / 1e3 * factor for factor in (0.98, 0.99, 1.0, 1.0, 1.01, 1.02, 1.03)]
    raw = {"clock": "wall", "warmup": 3, "samples_s": samples, **perf}
    return make_record(case_id, backend="board-a", perf=timing_record(raw))


def judged(record: CaseRecord, old: CaseRecord) -> CaseRecord:
    change = latency_change(old.perf, record.perf, Threshold()).to_json()
    return dataclasses.replace(record, perf={**record.perf, "baseline": change})


def timed_run(tmp_path: Path) -> Path:
    """A baseline and a run against it: one case 2x slower, one faster, the rest the same, a
    model with a per-layer table, and a case on the simulator (no timing)."""
    names = [f"rk3562/Expand/float16/h={n}" for n in range(6)]
    old = [timed(name, 4.0 + index) for index, name in enumerate(names)]
    new = [timed(name, 4.0 + index) for index, name in enumerate(names)]
    new[2] = timed(names[2], 2 * 6.0)
    new[4] = timed(names[4], 0.5 * 8.0)
    new[5] = timed(names[5], 9.0, layers=LAYERS)
    results, baseline = tmp_path / "results", tmp_path / "baseline"
    now = [judged(n, o) for n, o in zip(new, old, strict=True)]
    for folder, records in ((baseline, old), (results, now)):
        journal = Journal(folder)
        for record in records:
            journal.append(record)
        write_run_metadata(folder, {"platform": "rk3562"})
    sim = make_record("rk3562/Pow/float16/values=2", perf={"unavailable": "no timing on sim"})
    Journal(results).append(sim)
    write_run_metadata(results, {"platform": "rk3562", "baseline": str(baseline)})
    assert hil(["report", str(results)]) == 0
    return results
