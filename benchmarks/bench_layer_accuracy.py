"""Benchmark: what per-layer accuracy costs, npu-hil's exposed tensors against the toolkit's own
``accuracy_analysis``.

    python benchmarks/bench_layer_accuracy.py                  # rk3588, int8, 3 rounds
    python benchmarks/bench_layer_accuracy.py --platform rv1106 --rounds 5

One small int8 network (Conv, Relu, Conv, Relu, MaxPool, Conv, Sigmoid on 1x8x32x32), each
measurement in a fresh process, the simulator result cache off:

- run: ``hil run MODEL --quantize DIR`` (the model passes, so no per-layer run);
- run+layers: the same with ``--layers`` (one more build and simulation, every float tensor
  exposed as an output and compared with the host reference);
- toolkit: rknn-toolkit2 alone, load_onnx / build (int8) / init_runtime / inference, the floor
  of one run;
- toolkit+analysis: load_onnx / build (int8) / accuracy_analysis on the simulator (the
  toolkit's fp32 and quantized snapshots per layer, its own reference, not the host's).

Prints every round side by side, then the medians and the ratios run+layers/run and
toolkit+analysis/toolkit. Not a test: it prints numbers.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.user_models import float_model  # noqa: E402

SHAPE = [1, 8, 32, 32]

# The toolkit alone, in a fresh process: argv model, platform, dataset.txt, input .npy, mode.
TOOLKIT = """
import sys, tempfile
import numpy as np
from rknn.api import RKNN
model, platform, dataset, sample, mode = sys.argv[1:6]
rknn = RKNN(verbose=False)
rknn.config(target_platform=platform)
assert rknn.load_onnx(model=model) == 0
assert rknn.build(do_quantization=True, dataset=dataset) == 0
if mode == "analysis":
    with tempfile.TemporaryDirectory() as snapshots:
        assert rknn.accuracy_analysis(inputs=[sample], output_dir=snapshots) == 0
else:
    assert rknn.init_runtime() == 0
    rknn.inference(inputs=[np.load(sample)], data_format="nchw")
rknn.release()
"""


HIL = "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"


def network() -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def weight(name: str, out: int, channels: int, kernel: int) -> onnx.TensorProto:
        values = rng.uniform(-0.3, 0.3, [out, channels, kernel, kernel]).astype(np.float32)
        return numpy_helper.from_array(values, name)

    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p", "w3"], ["c3"], name="conv3"),
        helper.make_node("Sigmoid", ["c3"], ["y"], name="sigmoid"),
    ]  # fmt: skip
    constants = [weight("w1", 16, 8, 3), weight("w2", 16, 16, 3), weight("w3", 8, 16, 1)]
    return float_model(
        nodes, "layers", list(SHAPE), {"y": None}, constants=constants, opset=13, ir_version=8
    )


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):  # hil run: 1 is a failing model, still timed
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="rk3588")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    names = ("run", "run+layers", "toolkit", "toolkit+analysis")
    rounds: dict[str, list[float]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="npu-hil-bench-layers-") as tmp:
        work = Path(tmp)
        model = work / "layers.onnx"
        onnx.save(network(), model)
        sample = work / "calibration" / "0" / "x.npy"
        sample.parent.mkdir(parents=True)
        np.save(sample, np.random.default_rng(1).uniform(-1, 1, SHAPE).astype(np.float32))
        dataset = work / "dataset.txt"
        dataset.write_text(f"{sample}\n")
        hil = [sys.executable, "-c", HIL, "run", str(model), "--platform", args.platform]
        hil += ["--quantize", str(sample.parent.parent), "--hil-cache", "off"]
        toolkit = [sys.executable, "-c", TOOLKIT, str(model), args.platform, str(dataset)]
        for number in range(args.rounds):
            results = work / f"results-{number}"
            rounds["run"].append(timed([*hil, "--results", f"{results}-run"]))
            rounds["run+layers"].append(timed([*hil, "--results", f"{results}-l", "--layers"]))
            rounds["toolkit"].append(timed([*toolkit, str(sample), "inference"]))
            rounds["toolkit+analysis"].append(timed([*toolkit, str(sample), "analysis"]))
    print(f"{args.platform}, int8, 7-node network on {SHAPE}, simulator, result cache off")
    print(f"{'round':>6}" + "".join(f"{name:>18}" for name in names))
    for number in range(args.rounds):
        print(f"{number + 1:>6}" + "".join(f"{rounds[name][number]:18.1f}" for name in names))
    median = {name: statistics.median(values) for name, values in rounds.items()}
    print(f"{'median':>6}" + "".join(f"{median[name]:18.1f}" for name in names))
    print(
        f"run+layers / run: {median['run+layers'] / median['run']:.2f}   "
        f"toolkit+analysis / toolkit: {median['toolkit+analysis'] / median['toolkit']:.2f}"
    )


if __name__ == "__main__":
    main()
