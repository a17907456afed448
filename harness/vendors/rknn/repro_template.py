"""Reproduce one npu-hil case with rknn-toolkit2 alone: needs python3, numpy and rknn-toolkit2.

    python3 reproduce.py                                   # the toolkit's simulator
    python3 reproduce.py --target rk3562 --device-id ID    # a board (adb device id)

Builds model.onnx with the configuration in toolkit.json (the dataset in dataset.txt for
int8), runs it on inputs/*.npy, compares with reference/*.npy and prints max abs error, cosine
and where the build placed each op. The toolkit's own output goes to reproduce.log.
Exit status: 0 when the outputs match the reference within the recorded tolerance, 1 otherwise.

(npu-hil copies this file verbatim into every repro bundle; it must not import npu-hil.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
LOG = "reproduce.log"
# npu-hil's defaults per dtype, used when case.json records no tolerance.
DEFAULT_TOLERANCE = {
    "float16": {"atol": 1e-2, "rtol": 1e-2, "atol_steps": 0.0, "min_cosine": 0.999},
    "int8": {"atol": 0.0, "rtol": 0.0, "atol_steps": 4.0, "min_cosine": 0.98},
}
IO_LAYERS = ("InputOperator", "OutputOperator")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", help="board platform, e.g. rk3562 (default: simulator)")
    parser.add_argument("--device-id", help="adb device id of the board")
    args = parser.parse_args(argv)
    if args.device_id and not args.target:
        parser.error("--device-id needs --target (without a target the simulator runs)")
    os.chdir(HERE)  # toolkit.json and dataset.txt hold paths relative to this folder
    toolkit = json.loads(Path("toolkit.json").read_text(encoding="utf-8"))
    case = json.loads(Path("case.json").read_text(encoding="utf-8"))
    inputs, reference = load_arrays("inputs"), load_arrays("reference")
    print(f"case {case['id']}: {case['op']} {case['dtype']} on {toolkit['target_platform']}")
    print(f"documented: {case['documented']} ({case['limit']} = {case['value']})")
    print(f"recorded: {case['verdict']} on {case['backend']}: {case['detail']}")
    with redirected_output(LOG):
        outputs, failure = run_toolkit(toolkit, inputs, args.target, args.device_id)
    print(f"placement now: {summarise(parse_layers(Path(LOG).read_text(errors='replace')))}")
    print(f"placement recorded: {summarise(case.get('placement', []))}")
    print(f"toolkit log: {LOG}")
    if failure:
        print(f"FAILED: {failure}")
        return 1
    tolerance = case.get("tolerance") or DEFAULT_TOLERANCE.get(case["dtype"], {})
    return 0 if compare(outputs, reference, tolerance) else 1


def load_arrays(folder: str) -> list[np.ndarray]:
    """``<index>_<name>.npy`` files in index order."""
    paths = sorted(Path(folder).glob("*.npy"), key=lambda path: int(path.name.split("_")[0]))
    return [np.load(path) for path in paths]


@contextlib.contextmanager
def redirected_output(path: str) -> Iterator[None]:
    """Send stdout and stderr of this process, C++ library included, to ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    with open(path, "wb") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def run_toolkit(
    toolkit: dict[str, Any], inputs: list[np.ndarray], target: str | None, device_id: str | None
) -> tuple[list[np.ndarray], str]:
    """The toolkit call sequence npu-hil used; returns (outputs, failure message or "")."""
    from rknn.api import RKNN

    rknn = RKNN(verbose=True)
    try:
        rknn.config(target_platform=toolkit["target_platform"], **toolkit.get("config", {}))
        if rknn.load_onnx(model="model.onnx") != 0:
            return [], "load_onnx failed (see the log)"
        dataset = toolkit.get("dataset") or None
        if rknn.build(do_quantization=bool(toolkit["do_quantization"]), dataset=dataset) != 0:
            return [], "build failed (see the log)"
        ret = (
            rknn.init_runtime(target=target, device_id=device_id) if target else rknn.init_runtime()
        )
        if ret != 0:
            return [], "init_runtime failed (see the log)"
        data_format = toolkit.get("inference", {}).get("data_format", "nchw")
        outputs = rknn.inference(inputs=inputs, data_format=data_format)
        if outputs is None:
            return [], "inference returned no outputs (see the log)"
        return [np.asarray(out) for out in outputs], ""
    except Exception as exc:  # the toolkit raises freely; report it like a failed call
        return [], f"{type(exc).__name__}: {exc}"
    finally:
        rknn.release()


def parse_layers(log: str) -> list[dict[str, str]]:
    """Rows of the last "Network Layer Information Table" in a verbose toolkit log."""
    layers: list[dict[str, str]] = []
    columns: list[str] = []
    for line in log.splitlines():
        text = line.split("] ", 1)[1] if line.startswith("D RKNN: [") else line
        if "Network Layer Information Table" in text:
            layers, columns = [], []
        elif not columns and "OpType" in text and "Target" in text:
            columns = text.split()
        elif columns and text.split() and text.split()[0].isdigit():
            cells = text.split()
            row = {name: cells[i] for i, name in enumerate(columns) if i < len(cells)}
            layers.append({"op": row.get("OpType", "?"), "target": row.get("Target", "?")})
        elif columns and layers:
            columns = []  # the table ended
    return layers


def summarise(layers: list[dict[str, Any]]) -> str:
    """Per op type, where its layers ran: "Pow: CPU; Conv: NPU"."""
    targets: dict[str, list[str]] = {}
    for layer in layers:
        if layer.get("op") not in IO_LAYERS:
            targets.setdefault(str(layer.get("op")), []).append(str(layer.get("target")))
    if not targets:
        return "no layer table found"
    return "; ".join(f"{op}: {', '.join(sorted(set(where)))}" for op, where in targets.items())


def compare(
    outputs: list[np.ndarray], reference: list[np.ndarray], tolerance: dict[str, float]
) -> bool:
    """npu-hil's rule: every |obs - ref| <= atol + atol_steps * span / 255 + rtol * |ref|,
    and cosine >= min_cosine, for every output."""
    if len(outputs) != len(reference):
        print(f"MISMATCH: {len(outputs)} outputs, {len(reference)} expected")
        return False
    passed = True
    for index, ref in enumerate(reference):  # no zip(strict=): the script runs on python3 < 3.10
        ref64 = np.asarray(ref, dtype=np.float64)
        obs64 = np.asarray(outputs[index], dtype=np.float64)
        if obs64.size != ref64.size:
            print(f"output {index}: MISMATCH: shape {obs64.shape}, expected {ref64.shape}")
            passed = False
            continue
        obs64 = obs64.reshape(ref64.shape)
        error = np.abs(obs64 - ref64)
        span = float(ref64.max() - ref64.min()) if ref64.size else 0.0
        allowed = (
            tolerance.get("atol", 0.0)
            + tolerance.get("atol_steps", 0.0) * span / 255.0
            + tolerance.get("rtol", 0.0) * np.abs(ref64)
        )
        norm = float(np.linalg.norm(obs64) * np.linalg.norm(ref64))
        cosine = (
            float(np.dot(obs64.ravel(), ref64.ravel()) / norm)
            if norm
            else float(not obs64.any() and not ref64.any())
        )
        bad = int(np.count_nonzero(~(error <= allowed)))  # NaN counts as bad
        ok = bad == 0 and cosine >= tolerance.get("min_cosine", 0.0)
        passed = passed and ok
        print(
            f"output {index}: max abs error {float(error.max(initial=0.0)):.6g}, "
            f"cosine {cosine:.6f}, {bad} of {error.size} elements outside tolerance: "
            f"{'MATCH' if ok else 'MISMATCH'}"
        )
    print("RESULT: " + ("MATCH" if passed else "MISMATCH") + f" (tolerance {tolerance})")
    return passed


if __name__ == "__main__":
    sys.exit(main())
