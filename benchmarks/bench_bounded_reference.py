"""What computing a user's model's host references in a child process costs
(``harness.models.bounded_reference``): the references of ordinary models computed here and
in a forked child, side by side.

    python benchmarks/bench_bounded_reference.py              # 15 rounds each
    python benchmarks/bench_bounded_reference.py --rounds 40

For each model, the median wall and CPU times of ``host_references`` in this process and of
``references_within`` (fork, compute, pickle the outputs back, reap), and their ratios; then
the fixed cost alone. Not a test: it prints numbers.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from harness.cases.user_models import model_case
from harness.modelfiles.prepare import prepare
from harness.models import BuiltModel, build_model
from harness.models.bounded_reference import references_within
from harness.models.reference import host_references

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' model builder, as the board benchmarks do

from tests.helpers.user_models import float_model  # noqa: E402


def _model(
    nodes: list[onnx.NodeProto], shape: list[int], weights: list[onnx.TensorProto] | None = None
) -> onnx.ModelProto:
    return float_model(nodes, "bench", list(shape), {"y": None}, constants=weights)


def models() -> dict[str, onnx.ModelProto]:
    rng = np.random.default_rng(0)
    conv_w = numpy_helper.from_array(rng.standard_normal((32, 16, 3, 3), np.float32), "w")
    blocks = [  # a small network: eight Conv+Relu blocks
        numpy_helper.from_array(rng.standard_normal((16, 16, 3, 3), np.float32), f"w{index}")
        for index in range(8)
    ]
    nodes, previous = [], "x"
    for index in range(8):
        out = "y" if index == 7 else f"r{index}"
        nodes += [
            helper.make_node("Conv", [previous, f"w{index}"], [f"c{index}"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", [f"c{index}"], [out]),
        ]
        previous = out
    return {
        "Relu 1x8": _model([helper.make_node("Relu", ["x"], ["y"])], [1, 8]),
        "Conv 1x16x64x64": _model(
            [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
            [1, 16, 64, 64],
            [conv_w],
        ),
        "8 x (Conv+Relu) 1x16x56x56": _model(nodes, [1, 16, 56, 56], blocks),
    }


def built(model: onnx.ModelProto, name: str) -> BuiltModel:
    prepared = prepare(model, name, f"{name}.onnx")
    case, specs = model_case(prepared, "rk3562", "float16")
    return build_model(case.op, case.params, case.seed, specs)


def medians(call: Callable[[], object], rounds: int) -> tuple[float, float]:
    """The median wall time and CPU time (this process and its reaped children) of ``call``,
    in milliseconds: on a loaded machine the wall time of a fork holds the wait for the
    child's turn on a CPU, its CPU time does not."""
    walls, cpus = [], []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), _cpu()
        call()
        walls.append(time.perf_counter() - wall)
        cpus.append(_cpu() - cpu)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def _cpu() -> float:
    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; medians in ms")
    columns = ("wall here", "child", "ratio", "CPU here", "child", "ratio")
    print(f"{'model':28} " + " ".join(f"{column:>9}" for column in columns))
    for name, model in models().items():
        item = built(model, name)
        known = host_references(item)  # warm: imports, kernels
        here = medians(functools.partial(host_references, item), args.rounds)
        child = medians(
            functools.partial(references_within, host_references, item, 600.0, name), args.rounds
        )
        print(
            f"{name:28} {here[0]:9.2f} {child[0]:9.2f} {child[0] / here[0]:9.2f} "
            f"{here[1]:9.2f} {child[1]:9.2f} {child[1] / max(here[1], 1e-9):9.2f}"
        )
    # the fixed part: fork, an answer already known pickled back, reap
    fork = medians(lambda: references_within(lambda _: known, item, 600.0, "known"), args.rounds)
    print(f"{'(fork and reap alone)':28} {'':9} {fork[0]:9.2f} {'':9} {'':9} {fork[1]:9.2f}")


if __name__ == "__main__":
    main()
