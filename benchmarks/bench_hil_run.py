"""Benchmark: ``hil run`` on real architectures against the floor of the toolkit alone.

For each architecture of ``tests/helpers/architectures.py`` (ResNet-18, MobileNetV2, a
YOLO-style detector; 1x3x32x32, opset 13) and each build (rk3588 float16, rk3588 int8, rv1106
int8, both int8 builds calibrated on the same 16 seeded samples), two runs, each in a fresh
process so import costs count alike:

- floor: the process imports rknn-toolkit2 and does RKNN(verbose=True) / config / load_onnx /
  build / init_runtime / inference / release on the model, its input and the calibration set,
  as the harness asks the toolkit (``toolkit.calls.toolkit_calls``);
- hil: ``hil run MODEL --platform P [--quantize DIR]`` into a fresh results folder with the
  simulator result cache off: preparation, host references, the simulator worker, comparison,
  verdict, journal, case folder, report.

Both run with Python's compiled modules kept (``PYTHONDONTWRITEBYTECODE`` unset), as an
installation has them: compiling the harness's modules afresh in every process costs a second.

Each of ``--rounds`` rounds runs every pair; it prints each pair's wall-clock and CPU seconds
(of every process of the run, the toolkit's worker included) side by side with the share of
the machine's cores that were busy, then per architecture and build the medians and the ratio
hil/floor (target <= 1.3), in wall-clock and in CPU seconds, which a machine busy with other
work changes far less. Not a test: run it by hand, e.g.

    python benchmarks/bench_hil_run.py                      # all nine pairs, 1 round
    python benchmarks/bench_hil_run.py --arch resnet18 --build rk3588-float16 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.architectures import ARCHITECTURES, SHAPE  # noqa: E402

# build -> (platform, int8)
BUILDS = {
    "rk3588-float16": ("rk3588", False),
    "rk3588-int8": ("rk3588", True),
    "rv1106-int8": ("rv1106", True),
}
SAMPLES = 16
HIL = "import sys; from harness.cli import main; sys.exit(main())"


def prepare(folder: Path, arch: str) -> None:
    """The model, one input and the calibration set (a folder per sample, and the toolkit's
    dataset.txt listing them), in ``folder``."""
    folder.mkdir(parents=True)
    onnx.save(ARCHITECTURES[arch](), folder / "model.onnx")
    rng = np.random.default_rng(0)
    np.save(folder / "input.npy", rng.uniform(-1, 1, SHAPE).astype(np.float32))
    lines = []
    for index in range(SAMPLES):
        sample = folder / "calibration" / f"{index:02d}"
        sample.mkdir(parents=True)
        np.save(sample / "input.npy", rng.uniform(-1, 1, SHAPE).astype(np.float32))
        lines.append(str(sample / "input.npy"))
    (folder / "dataset.txt").write_text("\n".join(lines) + "\n")


def run_floor(folder: Path, platform: str, quantize: bool) -> None:
    """The toolkit alone: one build and simulated inference, its output silenced."""
    from rknn.api import RKNN

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.chdir(folder)
    rknn = RKNN(verbose=True)
    rknn.config(target_platform=platform)
    if rknn.load_onnx(model="model.onnx") != 0:
        raise SystemExit("load_onnx failed")
    dataset = "dataset.txt" if quantize else None
    if rknn.build(do_quantization=quantize, dataset=dataset) != 0:
        raise SystemExit("build failed")
    if rknn.init_runtime() != 0:
        raise SystemExit("init_runtime failed")
    rknn.inference(inputs=[np.load("input.npy")], data_format="nchw")
    rknn.release()


def timed(command: list[str]) -> tuple[float, float, float]:
    """Seconds of one run in a fresh process, the CPU seconds of its processes and the share
    of the machine's cores busy meanwhile."""
    from bench_board_suite import busy_jiffies  # not in the floor's process: it imports more

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "benchmarks")])}
    # modules compiled once, as an installation leaves them (not again in every process)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cpu, (busy, total), start = _children_cpu(), busy_jiffies(), time.perf_counter()
    run = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    (busy_end, total_end), used = busy_jiffies(), _children_cpu() - cpu
    if run.returncode not in (0, 1):  # 1: the model failed its judgement, still a full run
        raise SystemExit(f"{' '.join(command)}: exit status {run.returncode}\n{run.stdout!r}")
    return seconds, used, (busy_end - busy) / max(total_end - total, 1)


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def one_round(work: Path, pairs: list[tuple[str, str]], round_no: int) -> dict[str, tuple]:
    measured = {}
    for arch, build in pairs:
        platform, quantize = BUILDS[build]
        folder = work / arch
        floor = [sys.executable, __file__, "--floor", str(folder), platform]
        floor += ["--quantize"] if quantize else []
        hil = [sys.executable, "-c", HIL, "run", str(folder / "model.onnx"), "--platform"]
        hil += [platform, "--hil-cache", "off", "--inputs", str(folder / "inputs")]
        hil += ["--results", str(work / f"results-{round_no}-{arch}-{build}")]
        hil += ["--quantize", str(folder / "calibration")] if quantize else []
        measured[f"{arch} {build}"] = (timed(floor), timed(hil))
        (f_s, f_cpu, f_busy), (h_s, h_cpu, h_busy) = measured[f"{arch} {build}"]
        print(
            f"round {round_no} {arch:14} {build:15} floor {f_s:6.1f} s ({f_cpu:6.1f} CPU s, "
            f"{f_busy:4.0%} busy)  hil {h_s:6.1f} s ({h_cpu:6.1f} CPU s, {h_busy:4.0%} busy)  "
            f"hil/floor {h_s / f_s:.2f}",
            flush=True,
        )
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", nargs="+", choices=sorted(ARCHITECTURES), default=None)
    parser.add_argument("--build", nargs="+", choices=sorted(BUILDS), default=None)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--floor", nargs=2, metavar=("DIR", "PLATFORM"), help=argparse.SUPPRESS)
    parser.add_argument("--quantize", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor:
        run_floor(Path(args.floor[0]), args.floor[1], args.quantize)
        return
    archs, builds = args.arch or list(ARCHITECTURES), args.build or list(BUILDS)
    pairs = [(arch, build) for arch in archs for build in builds]
    with tempfile.TemporaryDirectory(prefix="bench-hil-run-") as tmp:
        work = Path(tmp)
        for arch in archs:
            prepare(work / arch, arch)
            # hil run is given the floor's input, so both simulate the same data
            (work / arch / "inputs").mkdir()
            os.link(work / arch / "input.npy", work / arch / "inputs" / "input.npy")
        rounds = [one_round(work, pairs, number) for number in range(1, args.rounds + 1)]
    print(f"\nmedians of {args.rounds} round(s): wall-clock s and CPU s, hil/floor (target <= 1.3)")
    print(
        f"{'architecture':14} {'build':15} {'floor':>7} {'hil':>7} {'ratio':>6}   "
        f"{'floor CPU':>9} {'hil CPU':>8} {'ratio':>6}"
    )
    for arch, build in pairs:
        key = f"{arch} {build}"
        floor_s = median(r[key][0][0] for r in rounds)
        hil_s = median(r[key][1][0] for r in rounds)
        floor_cpu = median(r[key][0][1] for r in rounds)
        hil_cpu = median(r[key][1][1] for r in rounds)
        print(
            f"{arch:14} {build:15} {floor_s:7.1f} {hil_s:7.1f} {hil_s / floor_s:6.2f}   "
            f"{floor_cpu:9.1f} {hil_cpu:8.1f} {hil_cpu / floor_cpu:6.2f}"
        )


if __name__ == "__main__":
    main()
