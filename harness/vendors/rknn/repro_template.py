"""Reproduce one npu-hil case with rknn-toolkit2 alone: needs python3, numpy and rknn-toolkit2.

    python3 reproduce.py                                   # the toolkit's simulator
    python3 reproduce.py --target rk3562 --device-id ID    # a board (adb device id)
    python3 reproduce.py --board boards/rk3562-evb.yaml    # an npu-hil board, over SSH

``--board FILE`` reruns the case the way npu-hil ran it on a board: conversion on the host,
the board file's runtime over SSH. It alone needs npu-hil installed (the board file is its).

Builds model.onnx with the settings in toolkit.json (RKNN.config()'s "config", RKNN.build()'s
"build", the dataset in dataset.txt for int8) in a temporary folder, runs it on inputs/*.npy
(the model's inputs: with mean_values/std_values set, fed as x * std + mean, which the built
model normalises back, as npu-hil fed them) and compares the whole observation with
the one recorded in case.json: how far it got (outputs, or the stage that failed), where each
op type's layers ran (placement), in which precision (the layer table's data types), and
whether the outputs match reference/*.npy within the recorded tolerance (recorded: the
observed/*.npy of the run, or case.json's result check where the case folder kept no
outputs: over its size cap, observed-summary.json summarises them). The toolkit runs in a
child process of this script, so a compiler crash is observed like any other outcome ("build
aborted (SIGSEGV)"). The toolkit's own output goes to the --log file.

Exit status: 0 the recorded observation, and so its verdict, reproduced; 1 it did not (what
differs is printed); 2 it could not run (no toolkit, a damaged bundle, a board that did not
answer, a recorded infrastructure error: nothing said about the NPU). Nothing is written into
this folder.

(npu-hil copies this file verbatim into every repro bundle; it must not import npu-hil.)
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
# npu-hil's defaults per dtype, used when case.json records no tolerance.
DEFAULT_TOLERANCE = {
    "float16": {"atol": 1e-2, "rtol": 1e-2, "atol_steps": 0.0, "min_cosine": 0.999},
    "int8": {"atol": 0.0, "rtol": 0.0, "atol_steps": 4.0, "min_cosine": 0.98},
}
IO_LAYERS = ("InputOperator", "OutputOperator")
# How npu-hil words a rejected model in a check's observation: "build failed: ...", or for a
# toolkit crash "build aborted (SIGSEGV): ..."; the match is the outcome compared.
FAILED = re.compile(r"^(build|runtime) (failed|aborted(?: \((?:SIG[A-Z0-9]+|exit code -?\d+)\))?)")
CHILD_RESULT, CHILD_STAGE = "child-result.npz", "child-stage.txt"  # in the work folder
COPIED = ("model.onnx", "dataset.txt", "dataset")  # what the toolkit reads, by relative path
NO_BOARD = "no board"  # how the child says init_runtime with a --target did not connect
LAYER_FILES = ("layers.json",)  # per-layer results a bundle may carry, as recorded
REPRODUCED, NOT_REPRODUCED, CANNOT_RUN = 0, 1, 2
# What this script prints quotes the record (model and file names, toolkit and board messages),
# which may carry terminal escape sequences: say() drops them and other control characters,
# as npu-hil's own output does (the same patterns as its harness.text.printable).
ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(\x07|\x1b\\)?|\x1b[ -~]|\x9b[0-?]*[ -/]*[@-~]"
)
CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]"
)


def printable(text: str) -> str:
    return CONTROL.sub("", ESCAPE_SEQUENCE.sub("", text))


def say(text: str) -> None:
    print(printable(text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", help="board platform, e.g. rk3562 (default: simulator)")
    parser.add_argument("--device-id", help="adb device id of the board")
    parser.add_argument(
        "--log",
        default=os.path.join(tempfile.gettempdir(), f"{HERE.name}.reproduce.log"),
        help="where the toolkit's output goes (default: %(default)s)",
    )
    parser.add_argument("--board", help="an npu-hil board file: rerun on that board over SSH")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:  # the toolkit run itself, in the work folder (see run_isolated)
        return run_child(args)
    if args.device_id and not args.target:
        parser.error("--device-id needs --target (without a target the simulator runs)")
    if args.board and args.target:
        parser.error("--board and --target exclude each other")
    try:
        toolkit = json.loads((HERE / "toolkit.json").read_text(encoding="utf-8"))
        case = json.loads((HERE / "case.json").read_text(encoding="utf-8"))
        inputs, reference = load_arrays(HERE / "inputs"), load_arrays(HERE / "reference")
        recorded_outputs = load_arrays(HERE / "observed") if (HERE / "observed").is_dir() else None
        check_dataset(toolkit)
    except (OSError, ValueError, KeyError) as exc:
        say(f"CANNOT RUN: the bundle is incomplete or damaged: {exc}")
        return CANNOT_RUN
    say(f"case {case['id']}: {case['op']} {case['dtype']} on {toolkit['target_platform']}")
    say(f"documented: {case['documented']} ({case['limit']} = {case['value']})")
    source = case.get("source", {})
    if source.get("text"):
        say(f"document: {source['text']} ({_where(source)})")
    say(f"recorded: {case['verdict']} on {case['backend']}: {case['detail']}")
    if toolkit.get("config") or toolkit.get("build"):
        say(f"settings: {json.dumps({**toolkit.get('config', {}), **toolkit.get('build', {})})}")
    say_layers(case)
    if case["verdict"] == "infra-error":
        say("CANNOT RUN: the recorded verdict is an infrastructure error; nothing to reproduce")
        return CANNOT_RUN
    try:
        import rknn.api  # noqa: F401  (imported here: the message below beats a traceback)
    except ImportError as exc:
        say(f"CANNOT RUN: rknn-toolkit2 is not installed ({exc})")
        return CANNOT_RUN
    with tempfile.TemporaryDirectory(prefix="reproduce-") as work:
        for name in COPIED:  # the toolkits drop files into the working folder: not this one
            if (HERE / name).is_dir():
                shutil.copytree(HERE / name, Path(work) / name)
            elif (HERE / name).is_file():
                shutil.copy(HERE / name, Path(work) / name)
        os.chdir(work)  # toolkit.json and dataset.txt hold paths relative to the folder
        try:
            if args.board:
                outputs, failure, layers = run_on_board(args.board, toolkit, case, inputs, args.log)
            else:
                outputs, failure = run_isolated(args)
                say(f"toolkit log: {args.log}")
                if failure.startswith(NO_BOARD):
                    raise CannotRun(failure)
                layers = parse_layers(Path(args.log).read_text(errors="replace"))
        except CannotRun as exc:
            say(f"CANNOT RUN: {exc}")
            return CANNOT_RUN
        finally:
            os.chdir(HERE.parent)
    return judge(case, inputs, reference, recorded_outputs, outputs, failure, layers)


def judge(
    case: dict[str, Any],
    inputs: list[np.ndarray],
    reference: list[np.ndarray],
    recorded_outputs: list[np.ndarray] | None,
    outputs: list[np.ndarray],
    failure: str,
    layers: list[dict[str, Any]],
) -> int:
    """Print this run's result and each aspect against the record; the exit status."""
    tolerance = case.get("tolerance") or DEFAULT_TOLERANCE.get(case["dtype"], {})
    span = input_span(inputs)
    if failure:
        say(f"FAILED: {failure}")
    else:
        compare(outputs, reference, tolerance, span)
    stage = recorded_stage(case)
    recorded = observation(
        stage, case.get("placement", []), recorded_outputs, reference, tolerance, span
    )
    if recorded_outputs is None and not stage:
        # the case folder kept no outputs (over its cap, or a verdict whose folder keeps
        # none): the record says how they compared
        recorded.update(outcome="outputs", result=recorded_result(case))
    now = observation(failure, layers, outputs if not failure else None, reference, tolerance, span)
    differs = [aspect for aspect in recorded if recorded[aspect] != now[aspect]]
    width = max(len(text) for text in recorded.values())
    for aspect in recorded:
        mark = "DIFFERS" if aspect in differs else "same"
        say(f"{aspect:<9} recorded: {recorded[aspect]:<{width}}  now: {now[aspect]}  {mark}")
    if differs:
        say(f"NOT REPRODUCED: {', '.join(differs)} differ from the record ({case['verdict']})")
        return NOT_REPRODUCED
    say(f"REPRODUCED: {case['verdict']} (outcome, placement, precision and result as recorded)")
    return REPRODUCED


def say_layers(case: dict[str, Any]) -> None:
    """The recorded wrong layer: the first of the bundle's per-layer results past tolerance
    with every field it has (its numbers, and its document line where the bundle has one),
    else the layers the record saw on the CPU."""
    for name in LAYER_FILES:
        if (HERE / name).is_file():
            rows = json.loads((HERE / name).read_text(encoding="utf-8"))
            bad = [row for row in rows if isinstance(row, dict) and row.get("passed") is False]
            if bad:
                fields = ", ".join(f"{k} {v}" for k, v in bad[0].items() if v not in ("", None))
                say(f"wrong layer ({name}, the first past tolerance): {fields}")
                return
    cpu = [row for row in case.get("placement", []) if row.get("target") == "CPU"]
    cpu = [row for row in cpu if row.get("op") not in IO_LAYERS and not row.get("io")]
    if cpu:
        names = ", ".join(f"{row.get('name') or '?'} ({row.get('op')})" for row in cpu)
        say(f"layers on the CPU (recorded): {names}")


class CannotRun(Exception):
    """The rerun could not happen: no npu-hil, a bad board file, a board that did not answer."""


def run_on_board(
    board_file: str,
    toolkit: dict[str, Any],
    case: dict[str, Any],
    inputs: list[np.ndarray],
    log: str,
) -> tuple[list[np.ndarray], str, list[dict[str, Any]]]:
    """The case on an npu-hil board: (outputs, failure or "", compiled layers)."""
    try:
        from harness.boards import BoardError
        from harness.boards.inventory import BoardFileError, load_board
        from harness.targets.job import Job
        from harness.vendors.rknn.board import RknnBoardTarget
        from harness.vendors.rknn.runtimes import RUNTIMES
    except ImportError as exc:
        raise CannotRun(f"--board needs npu-hil installed ({exc})") from None
    try:
        board = load_board(Path(board_file), RUNTIMES)
    except (BoardFileError, OSError) as exc:
        raise CannotRun(str(exc)) from None
    if board.platform != toolkit["target_platform"]:
        raise CannotRun(
            f"{board_file}: board {board.name} is a {board.platform}, "
            f"the case was built for {toolkit['target_platform']}"
        )
    dataset = None
    if toolkit.get("dataset"):
        lines = Path(toolkit["dataset"]).read_text(encoding="utf-8").splitlines()
        dataset = [[np.load(name) for name in line.split()] for line in lines if line]
    job = Job(
        model=Path("model.onnx").read_bytes(),
        inputs=inputs,
        target_platform=toolkit["target_platform"],
        quantize=bool(toolkit["do_quantization"]),
        dataset=dataset,
        config={**toolkit.get("config", {}), **toolkit.get("build", {})},
        case_id=case["id"],
    )
    say(f"running on board {board.name} ({board.address})")
    try:
        with RknnBoardTarget(board) as target:
            seen = target.run(job)
    except BoardError as exc:
        raise CannotRun(f"board {board.name}: {exc}") from None
    Path(log).write_text(seen.log, encoding="utf-8")
    say(f"toolkit log: {log}")
    if seen.infra_error:
        raise CannotRun(f"board {board.name}: {seen.infra_error}")
    how = f"aborted ({seen.aborted})" if seen.aborted else "failed"
    failure = f"{seen.failed_stage} {how} ({seen.error})" if seen.failed_stage else ""
    return list(seen.outputs or []), failure, seen.placement


def recorded_result(case: dict[str, Any]) -> str:
    """ "match" or "mismatch": how the recorded outputs compared with the reference, by the
    record's result check (its metrics where the references disagreed)."""
    checks = [c for c in case.get("checks", []) if c.get("prop") == "result"]
    status = checks[0].get("status") if checks else None
    if status == "reference-disagreement":
        return "mismatch" if case.get("metrics", {}).get("mismatches") else "match"
    return "mismatch" if status == "wrong-result" else "match"


def recorded_stage(case: dict[str, Any]) -> str:
    """ "build failed", "build aborted (SIGSEGV)", ... when a check of the record saw the
    model rejected."""
    for check in case.get("checks", []):
        found = FAILED.match(str(check.get("observed", "")))
        if found:
            return found.group(0)
    return ""


def observation(
    failure: str,
    layers: list[dict[str, Any]],
    outputs: list[np.ndarray] | None,
    reference: list[np.ndarray],
    tolerance: dict[str, float],
    span: float,
) -> dict[str, str]:
    """What a run showed, aspect by aspect, as comparable text."""
    found = FAILED.match(failure)
    stage = found.group(0) if found else failure
    if outputs is not None:
        matched = compare(outputs, reference, tolerance, span, quiet=True)
        result = "match" if matched else "mismatch"
    else:
        result = "no outputs"
    return {
        "outcome": stage or ("outputs" if outputs is not None else "no outputs"),
        "placement": summarise(layers, "target"),
        "precision": summarise(layers, "dtype"),
        "result": result,
    }


def input_span(inputs: list[np.ndarray]) -> float:
    """The range covered by all inputs together (npu-hil's int8 step size uses it)."""
    if not inputs:
        return 0.0
    return float(max(a.max() for a in inputs) - min(a.min() for a in inputs))


def check_dataset(toolkit: dict[str, Any]) -> None:
    """ValueError unless the dataset file toolkit.json names, and every file it lists, lie
    inside the bundle: a bundle from someone else must not make this script read elsewhere."""
    listed = toolkit.get("dataset")
    if not listed:
        return
    names = [str(listed)]
    if inside(str(listed)) and (HERE / str(listed)).is_file():
        names += (HERE / str(listed)).read_text(encoding="utf-8").split()
    outside = [name for name in names if not inside(name)]
    if outside:
        raise ValueError(f"toolkit.json: dataset names files outside the bundle: {outside[:3]}")


def inside(name: str) -> bool:
    """Whether the relative path ``name`` stays inside the bundle's folder."""
    path = Path(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts


def tensor_names(folder: Path) -> dict[int, str]:
    """Index -> "output INDEX (TENSOR)" for the ``<index>_<name>.npy`` files of ``folder``:
    in a per-layer bundle each output is one layer's tensor, so a mismatch names the layer."""
    names: dict[int, str] = {}
    for path in folder.glob("*.npy"):
        index, _, name = path.stem.partition("_")
        names[int(index)] = f"output {index} ({name})"
    return collections.defaultdict(lambda: "output ?", names)


def load_arrays(folder: Path) -> list[np.ndarray]:
    """``<index>_<name>.npy`` files in index order; FileNotFoundError without the folder (a
    bundle that lost its inputs or references could not run, rather than run on nothing)."""
    if not folder.is_dir():
        raise FileNotFoundError(f"no folder {folder.name}/")
    paths = sorted(folder.glob("*.npy"), key=lambda path: int(path.name.split("_")[0]))
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


def run_isolated(args: argparse.Namespace) -> tuple[list[np.ndarray], str]:
    """``run_toolkit`` in a child process (this script with ``--child``, in the work folder):
    (outputs, failure or ""); a child that died is "<stage> aborted (<signal or exit code>)"."""
    command = [sys.executable, str(HERE / "reproduce.py"), "--child", "--log", args.log]
    if args.target:
        command += ["--target", args.target]
    if args.device_id:
        command += ["--device-id", args.device_id]
    code = subprocess.run(command, check=False).returncode
    if os.path.exists(CHILD_RESULT):
        with np.load(CHILD_RESULT) as saved:
            failure = str(saved["failure"])
            outputs = [saved[f"out{i}"] for i in range(int(saved["count"]))]
        return outputs, failure
    stage = Path(CHILD_STAGE).read_text() if os.path.exists(CHILD_STAGE) else "build"
    how = signal.Signals(-code).name if code < 0 else f"exit code {code}"
    return [], f"{stage} aborted ({how})"


def run_child(args: argparse.Namespace) -> int:
    """The child of ``run_isolated``: the toolkit run, its result saved to CHILD_RESULT."""
    toolkit = json.loads((HERE / "toolkit.json").read_text(encoding="utf-8"))
    inputs = load_arrays(HERE / "inputs")
    with redirected_output(args.log):
        outputs, failure = run_toolkit(toolkit, inputs, args.target, args.device_id)
    arrays: dict[str, Any] = {f"out{i}": np.asarray(out) for i, out in enumerate(outputs)}
    np.savez(CHILD_RESULT, failure=failure, count=len(outputs), **arrays)
    return 0


def run_toolkit(
    toolkit: dict[str, Any], inputs: list[np.ndarray], target: str | None, device_id: str | None
) -> tuple[list[np.ndarray], str]:
    """The toolkit call sequence npu-hil used; returns (outputs, failure message or "")."""
    from rknn.api import RKNN

    rknn = RKNN(verbose=True)
    stage = "build"
    Path(CHILD_STAGE).write_text(stage)  # for run_isolated, should the toolkit crash
    try:
        rknn.config(target_platform=toolkit["target_platform"], **toolkit.get("config", {}))
        if rknn.load_onnx(model="model.onnx") != 0:
            return [], "build failed (load_onnx; see the log)"
        dataset = toolkit.get("dataset") or None
        quantize = bool(toolkit["do_quantization"])
        if rknn.build(do_quantization=quantize, dataset=dataset, **toolkit.get("build", {})) != 0:
            return [], "build failed (build; see the log)"
        stage = "runtime"
        Path(CHILD_STAGE).write_text(stage)
        if target:
            try:
                ret = rknn.init_runtime(target=target, device_id=device_id)
            except Exception as exc:  # no adb, say; its message ends a traceback
                ret = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[-1]}"
            if ret != 0:
                device = f" {device_id}" if device_id else ""
                return [], f"{NO_BOARD}: init_runtime found no {target} board{device} ({ret})"
        elif rknn.init_runtime() != 0:
            return [], "runtime failed (init_runtime; see the log)"
        data_format = toolkit.get("inference", {}).get("data_format", "nchw")
        fed = normalised_feeds(toolkit.get("config", {}), inputs)
        outputs = rknn.inference(inputs=fed, data_format=data_format)
        if outputs is None:
            return [], "runtime failed (inference returned no outputs; see the log)"
        return [np.asarray(out) for out in outputs], ""
    except Exception as exc:  # the toolkit raises freely; report it like a failed call
        return [], f"{stage} failed ({type(exc).__name__}: {exc})"
    finally:
        rknn.release()


def normalised_feeds(config: dict[str, Any], arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """What the toolkit is fed for the model's inputs: ``x * std + mean`` per channel (axis 1)
    where ``config`` sets mean_values/std_values (one list per input), which the built model
    normalises back; an input the lists do not fit as it is, for the toolkit to refuse
    (npu-hil's toolkit_feeds, which a test holds equal to this)."""
    means, stds = config.get("mean_values"), config.get("std_values")
    if not means and not stds:
        return list(arrays)
    fed = []
    for index, array in enumerate(arrays):
        mean, std = channels(means, index, array, 0.0), channels(stds, index, array, 1.0)
        fed.append(
            array if mean is None or std is None else (array * std + mean).astype(array.dtype)
        )
    return fed


def channels(values: Any, index: int, array: np.ndarray, default: float) -> Any:
    """``values[index]`` shaped to broadcast over ``array``'s channels, or None if it cannot."""
    if not values:
        return np.asarray(default)
    try:
        found = np.asarray(values[index], dtype=np.float64).ravel()
    except (IndexError, TypeError, ValueError):
        return None
    if array.ndim < 2 or found.size not in (1, array.shape[1]):
        return None
    return found.reshape((1, -1) + (1,) * (array.ndim - 2))


def parse_layers(log: str) -> list[dict[str, str]]:
    """Rows of the last "Network Layer Information Table" in a verbose toolkit log."""
    layers: list[dict[str, str]] = []
    columns: list[str] = []
    for line in log.splitlines():
        # "D RKNN: [time] text"; the toolkit also prints the stamp alone ("D RKNN: [time]")
        stamped = line.startswith("D RKNN: [")
        _, cut, rest = line.partition("] ")
        text = rest if stamped and cut else "" if stamped else line
        if not text.strip():
            continue
        if "Network Layer Information Table" in text:
            layers, columns = [], []
        elif not columns and "OpType" in text and "Target" in text:
            columns = text.split()
        elif columns and text.split() and text.split()[0].isdigit():
            cells = text.split()
            row = {name: cells[i] for i, name in enumerate(columns) if i < len(cells)}
            layers.append(
                {
                    "op": row.get("OpType", "?"),
                    "target": row.get("Target", "?"),
                    "dtype": row.get("DataType", "?"),
                }
            )
        elif columns and layers:
            columns = []  # the table ended
    return layers


def summarise(layers: list[dict[str, Any]], key: str) -> str:
    """Per op type, where (``key`` "target") or in which precision ("dtype") its layers ran:
    "Pow: CPU; Conv: NPU"."""
    targets: dict[str, list[str]] = {}
    for layer in layers:
        if layer.get("op") not in IO_LAYERS:
            targets.setdefault(str(layer.get("op")), []).append(str(layer.get(key)))
    if not targets:
        return "no layer table found"
    return "; ".join(f"{op}: {', '.join(sorted(set(where)))}" for op, where in targets.items())


def compare(
    outputs: list[np.ndarray],
    reference: list[np.ndarray],
    tolerance: dict[str, float],
    input_span: float,
    quiet: bool = False,
) -> bool:
    """npu-hil's rule: every |obs - ref| <= atol + atol_steps * span / 255 + rtol * |ref|
    (span: the wider of the output's and the inputs' range), and cosine >= min_cosine, for
    every output."""
    say = (lambda text: None) if quiet else print
    names = tensor_names(HERE / "reference")
    if len(outputs) != len(reference):
        say(f"MISMATCH: {len(outputs)} outputs, {len(reference)} expected")
        return False
    passed = True
    for index, ref in enumerate(reference):  # no zip(strict=): the script runs on python3 < 3.10
        ref64 = np.asarray(ref, dtype=np.float64)
        obs64 = np.asarray(outputs[index], dtype=np.float64)
        if obs64.size != ref64.size:
            say(f"{names[index]}: MISMATCH: shape {obs64.shape}, expected {ref64.shape}")
            passed = False
            continue
        obs64 = obs64.reshape(ref64.shape)
        error = np.abs(obs64 - ref64)
        span = max(float(ref64.max() - ref64.min()) if ref64.size else 0.0, input_span)
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
        say(
            f"{names[index]}: max abs error {float(error.max(initial=0.0)):.6g}, "
            f"cosine {cosine:.6f}, {bad} of {error.size} elements outside tolerance: "
            f"{'MATCH' if ok else 'MISMATCH'}"
        )
    say("RESULT: " + ("MATCH" if passed else "MISMATCH") + f" (tolerance {tolerance})")
    return passed


def _where(source: dict) -> str:
    """The document, section and page of the case's documented line, as far as it says."""
    document = source.get("judged_against") or source.get("seed") or "the vendor's document"
    section = source.get("section") or ""
    if not section or section.startswith(document):
        return section or document
    return f"{document} § {section}"


if __name__ == "__main__":
    sys.exit(main())
