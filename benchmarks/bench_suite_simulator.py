"""Benchmark: the operator suite on the simulator against the floor of calling the toolkit.

Three runs over the same cases, each in a fresh process so import costs count alike:

- floor: one process imports rknn-toolkit2 once and, for every case's ready-made model and
  inputs, does RKNN() / config / load_onnx / build / init_runtime / inference / release;
- cold: the harness (model generation, reference, simulator worker, comparison, verdict,
  journal, artifacts) with an empty result cache;
- warm: the same again with the cache the cold run filled.

Prints seconds, cases per second and the ratios cold/floor (target <= 1.5) and cold/warm
(target >= 10). Not a test: run it by hand, e.g.

    python benchmarks/bench_suite_simulator.py                 # the whole rk3562 suite
    python benchmarks/bench_suite_simulator.py --ops Pow Expand  # a quicker subset
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from harness.cases.case import Case
from harness.cases.operators import operator_cases
from harness.catalogue.operators import load_operators
from harness.models import build_model
from harness.pipeline import CaseExecutor, request_for
from harness.vendors.rknn.simulator import SimCache, SimulatorPool
from harness.vendors.rknn.toolkit import write_dataset


def select(ops: list[str] | None) -> list[Case]:
    return operator_cases(load_operators(), ops=ops).cases


def prepare_floor(cases: list[Case], folder: Path) -> None:
    """The floor's input: each case's model, inputs and dataset, ready on disk."""
    for index, case in enumerate(cases):
        built = build_model(case.op, case.params, case.seed)
        request = request_for(case, built)
        case_dir = folder / f"{index:04d}"
        case_dir.mkdir(parents=True)
        (case_dir / "model.onnx").write_bytes(built.onnx_bytes)
        for i, array in enumerate(built.inputs):
            np.save(case_dir / f"input_{i}.npy", array)
        if request.dataset:
            write_dataset(request.dataset, case_dir)
        (case_dir / "target").write_text(case.platform)


def run_floor(folder: Path) -> None:
    from rknn.api import RKNN

    devnull = os.open(os.devnull, os.O_WRONLY)
    for case_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        os.chdir(case_dir)
        inputs = [np.load(p) for p in sorted(case_dir.glob("input_*.npy"))]
        quantize = (case_dir / "dataset.txt").exists()
        saved = os.dup(1), os.dup(2)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        rknn = RKNN(verbose=True)
        try:  # like the harness, a case the toolkit rejects stops at the failing call
            rknn.config(target_platform=(case_dir / "target").read_text())
            if (
                rknn.load_onnx(model="model.onnx") == 0
                and rknn.build(
                    do_quantization=quantize, dataset="dataset.txt" if quantize else None
                )
                == 0
                and rknn.init_runtime() == 0
            ):
                rknn.inference(inputs=inputs, data_format="nchw")
        except ValueError:
            pass  # the toolkit raises ValueError for the models it refuses
        finally:
            rknn.release()
            for fd, saved_fd in ((1, saved[0]), (2, saved[1])):
                os.dup2(saved_fd, fd)
                os.close(saved_fd)


def run_harness(ops: list[str] | None, results: Path, cache: Path) -> None:
    cases = select(ops)
    with SimulatorPool(workers=1, timeout_s=1200, cache=SimCache(cache)) as pool:
        executor = CaseExecutor(results, pool)
        for case in cases:
            executor.execute(case)


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, __file__, *args], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", nargs="*", help="operators to include (default: all)")
    parser.add_argument("--mode", choices=("floor", "harness"), help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    ops_args = ["--ops", *args.ops] if args.ops else []
    if args.mode == "floor":
        run_floor(args.dir)
        return
    if args.mode == "harness":
        run_harness(args.ops, args.dir / f"results-{time.monotonic_ns()}", args.dir / "cache")
        return

    cases = select(args.ops)
    with tempfile.TemporaryDirectory(prefix="npu-hil-bench-") as tmp:
        work = Path(tmp)
        prepare_floor(cases, work / "floor")
        floor = timed(["--mode", "floor", "--dir", str(work / "floor")])
        cold = timed(["--mode", "harness", "--dir", str(work), *ops_args])
        warm = timed(["--mode", "harness", "--dir", str(work), *ops_args])
    n = len(cases)
    print(f"{n} cases of the rk3562 operator suite on the rknn-toolkit2 simulator")
    print(f"{'run':8}{'seconds':>10}{'cases/s':>10}")
    for name, seconds in (("floor", floor), ("cold", cold), ("warm", warm)):
        print(f"{name:8}{seconds:10.1f}{n / seconds:10.2f}")
    print(f"cold / floor = {cold / floor:.2f}  (target <= 1.5)")
    print(f"cold / warm  = {cold / warm:.1f}  (target >= 10)")


if __name__ == "__main__":
    main()
