"""Audit a results folder: rerun a random sample of its verdicts with rknn-toolkit2 alone.

    python tools/audit_verdicts.py RESULTS --count 15 --seed 1 [--platform rk3588]

Draws ``--count`` records at random (``--seed``) from ``RESULTS/journal.jsonl`` (the last
record of each case and SDK; infrastructure errors and refused user models, which say nothing
about the NPU, and records of another toolkit version than the installed one are not drawn)
and reruns each case's ``model.onnx`` on the toolkit's simulator with its ``toolkit.json``,
using none of npu-hil's code: this script parses the toolkit's layer table itself and computes
its own host reference with onnxruntime. It compares, per case:

- the compiled layers: op type and CPU/NPU placement of every layer but the input and output
  operators, in order, against the record's ``placement``;
- the outcome: the build or runtime refused (failed, or aborted by a signal), or ran; when
  it ran and the record judged the result, whether the outputs match the reference within
  the record's tolerance (npu-hil's rule: every |obs - ref| <= atol + atol_steps * span / 255
  + rtol * |ref|, span the wider of the output's and the inputs' range, and the cosine at
  least min_cosine).

The inputs are the case folder's ``inputs/*.npy`` when it kept them (``--keep-arrays all``),
else drawn here from the audit's seed and the case id: values of magnitude 0.5 to 2, held
exactly by float16, positive for a model with Pow, Sqrt or Log, otherwise of random sign (an
audit of right against wrong, not of npu-hil's exact numbers). An int8 case's calibration set
is the folder's ``dataset/`` when kept, else these inputs and further draws, as many samples as
its ``dataset.txt`` lists.

One line per drawn case (agree or disagree, case id, recorded verdict, whether its inputs and
calibration set were kept or drawn, recorded and rerun layers and outcomes), then "N agree,
M disagree". Exit status: 0 all agree, 1 some disagree,
2 it cannot run (no toolkit, no onnxruntime, an unreadable results folder, nothing to draw, a
case it could not rerun).

The toolkit runs in one child process, which imports it once and forks a process per case: a
compiler crash ends that case's process only ("build aborted (SIGABRT)"), and no state leaks
from one case into the next.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.metadata
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

AGREE, DISAGREE, CANNOT_RUN = 0, 1, 2
NOT_DRAWN = ("infra-error", "bad-input")  # nothing about the NPU to audit
IO_LAYERS = ("InputOperator", "OutputOperator")
LAYER_TABLE = "Network Layer Information Table"
# How a record's check words a rejected model: "build failed: ...", "build aborted (SIGSEGV): ..."
REFUSED = re.compile(r"^(build|runtime) (failed|aborted \([A-Za-z0-9 -]+\))")
WOULD_BE = re.compile(r"\[would be ([a-z-]+);")  # a doc-inconsistent check's own status
POSITIVE_DOMAIN = ("Pow", "Sqrt", "Log")  # ops whose inputs are drawn positive
DEFAULT_SAMPLES = 4  # int8 calibration samples when the folder's dataset.txt is gone
FLOAT_TYPES = {1: np.float32, 10: np.float16, 11: np.float64}  # ONNX elem_type -> numpy
RESULT = "result.npz"  # what a case's process leaves in its work folder
STAGE = "stage.txt"  # the toolkit stage it is in, for a process that dies
TOOLKIT_LOG = "toolkit.log"
STATUS = "status.txt"  # how the case's process ended: "exit code 0", "SIGABRT"
SERVE = "--serve"  # argv[1] of the toolkit's child process


class CannotAudit(Exception):
    """The audit cannot run or a case cannot be rerun; the message says why."""


@dataclass
class Drawn:
    """One drawn record, its case folder and, once rerun, what the rerun saw."""

    record: dict[str, Any]
    folder: Path
    work: Path
    reference: list[np.ndarray] = field(default_factory=list)
    span: float = 0.0
    data: str = ""  # where its inputs (and calibration set) came from: "inputs kept", ...
    problem: str = ""  # why it could not be rerun


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [SERVE]:  # the toolkit's child process: SERVE TIMEOUT FOLDER...
        return serve(float(argv[1]), [Path(name) for name in argv[2:]])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path, help="a results folder (its journal.jsonl)")
    parser.add_argument("--count", type=int, default=10, help="verdicts to draw (10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draw and inputs (0)")
    parser.add_argument(
        "--platform", action="append", help="draw only this platform's cases (repeatable)"
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds one case's rerun may take (600)"
    )
    parser.add_argument(
        "--work", type=Path, help="keep each case's rerun folder (model, inputs, toolkit log) here"
    )
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error(f"--count must be at least 1, not {args.count}")
    if not args.timeout > 0:
        parser.error(f"--timeout must be above 0 seconds, not {args.timeout}")
    if args.work and args.work.exists() and any(args.work.iterdir()):
        parser.error(f"--work {args.work}: not empty (the audit writes a folder per case)")
    try:
        version = installed_toolkit()
        records = read_journal(args.results)
        drawn = draw(records, args.count, args.seed, args.platform, version)
    except CannotAudit as exc:
        print(f"cannot audit: {exc}")
        return CANNOT_RUN
    print(f"{len(drawn)} of {len(records)} records drawn (seed {args.seed}), toolkit {version}")
    work = args.work or Path(tempfile.mkdtemp(prefix="audit-verdicts-"))
    try:
        return audit(args.results, drawn, work, args.seed, args.timeout)
    except CannotAudit as exc:
        print(f"cannot audit: {exc}")
        return CANNOT_RUN
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


def installed_toolkit() -> str:
    """rknn-toolkit2's version, read without importing it (the import takes seconds); raises
    CannotAudit without it or without onnxruntime, the host reference."""
    try:
        import onnxruntime  # noqa: F401

        return importlib.metadata.version("rknn-toolkit2")
    except ImportError as exc:
        raise CannotAudit(f"onnxruntime is not installed ({exc})") from None
    except importlib.metadata.PackageNotFoundError:
        raise CannotAudit("rknn-toolkit2 is not installed") from None


def read_journal(results: Path) -> list[dict[str, Any]]:
    """The last record of each case and SDK in ``results``'s journal, in journal order."""
    path = results / "journal.jsonl"
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError as exc:
        raise CannotAudit(f"{path}: cannot read the journal ({exc.strerror})") from None
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            key = (str(record["id"]), str(record.get("sdk", "")))
        except (ValueError, KeyError, TypeError):
            if number == len(lines):  # a run killed mid-write leaves a last line unfinished
                continue
            raise CannotAudit(f"{path}, line {number}: not a journal record") from None
        latest.pop(key, None)
        latest[key] = record
    return list(latest.values())


def draw(
    records: list[dict[str, Any]],
    count: int,
    seed: int,
    platforms: list[str] | None,
    version: str,
) -> list[dict[str, Any]]:
    """``count`` records drawn at random by ``seed`` from those that can be audited."""
    eligible = [
        record
        for record in records
        if record.get("verdict") not in NOT_DRAWN
        and (not platforms or record.get("platform") in platforms)
        and record.get("versions", {}).get("rknn_toolkit2") == version
    ]
    if not eligible:
        where = f" of platform {', '.join(platforms)}" if platforms else ""
        raise CannotAudit(
            f"no record{where} to draw among {len(records)} (none judged with rknn-toolkit2 "
            f"{version}, or all infra-error or bad-input)"
        )
    eligible.sort(key=lambda record: (str(record["id"]), str(record.get("sdk", ""))))
    return random.Random(seed).sample(eligible, min(count, len(eligible)))


def audit(
    results: Path, records: list[dict[str, Any]], work: Path, seed: int, timeout: float
) -> int:
    """Prepare every drawn case, rerun them in the toolkit's child, print the comparison."""
    cases = []
    for index, record in enumerate(records):
        case = Drawn(record, case_folder(results, record), work / f"case{index:03d}")
        try:
            prepare(case, seed)
        except CannotAudit as exc:
            case.problem = str(exc)
        cases.append(case)
    counts = {AGREE: 0, DISAGREE: 0, CANNOT_RUN: 0}
    for case in reruns(cases, timeout):
        counts[report(case)] += 1
    line = f"{counts[AGREE]} agree, {counts[DISAGREE]} disagree"
    print(line + (f", {counts[CANNOT_RUN]} not rerun" if counts[CANNOT_RUN] else ""))
    if counts[DISAGREE]:
        return DISAGREE
    return CANNOT_RUN if counts[CANNOT_RUN] else AGREE


def case_folder(results: Path, record: dict[str, Any]) -> Path:
    """The record's case folder, which must lie inside ``results``."""
    artifacts = str(record.get("artifacts", ""))
    relative = Path(artifacts)
    if not artifacts or relative.is_absolute() or ".." in relative.parts:
        raise CannotAudit(
            f"{results / 'journal.jsonl'}: record {record.get('id')!r} has artifacts "
            f"{artifacts!r}, not a folder inside the results folder"
        )
    return results / relative


def prepare(case: Drawn, seed: int) -> None:
    """The case's work folder: model, toolkit settings, inputs, calibration set, reference."""
    import onnx
    import onnxruntime
    from google.protobuf.message import DecodeError

    for name in ("model.onnx", "toolkit.json"):
        if not (case.folder / name).is_file():
            raise CannotAudit(f"{case.folder}: no {name}")
    case.work.mkdir(parents=True)
    shutil.copy(case.folder / "model.onnx", case.work / "model.onnx")
    try:
        toolkit = json.loads((case.folder / "toolkit.json").read_text(encoding="utf-8"))
        model = onnx.load(str(case.work / "model.onnx"))
    except (ValueError, DecodeError) as exc:  # DecodeError: not an ONNX protobuf
        raise CannotAudit(f"{case.folder}: unreadable toolkit.json or model.onnx ({exc})") from None
    initializers = {tensor.name for tensor in model.graph.initializer}
    graph_inputs = [value for value in model.graph.input if value.name not in initializers]
    rng = np.random.default_rng([seed, zlib.crc32(str(case.record["id"]).encode())])
    positive = any(node.op_type in POSITIVE_DOMAIN for node in model.graph.node)
    kept = kept_arrays(case.folder / "inputs")
    inputs = kept if kept is not None else draw_inputs(graph_inputs, rng, positive)
    case.data = f"inputs {'kept' if kept is not None else 'drawn'}"
    save_arrays(case.work / "inputs", inputs)
    if toolkit.get("do_quantization"):
        toolkit["dataset"] = "dataset.txt"
        case.data += f", calibration {calibration(case, inputs, graph_inputs, rng, positive)}"
    (case.work / "toolkit.json").write_text(json.dumps(toolkit), encoding="utf-8")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # the audit shares its host's cores
    try:
        session = onnxruntime.InferenceSession(
            str(case.work / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        feed = {value.name: array for value, array in zip(graph_inputs, inputs, strict=True)}
        case.reference = [np.asarray(out) for out in session.run(None, feed)]
    except Exception as exc:  # onnxruntime raises its own exception types for a bad model
        raise CannotAudit(f"onnxruntime cannot run {case.folder}/model.onnx: {exc}") from None
    case.span = float(max(a.max() for a in inputs) - min(a.min() for a in inputs)) if inputs else 0


def kept_arrays(folder: Path) -> list[np.ndarray] | None:
    """``<index>_<name>.npy`` files in index order, or None when the folder kept none."""
    paths = sorted(folder.glob("*.npy"), key=number)
    return [np.load(path) for path in paths] if paths else None


def draw_inputs(graph_inputs: list[Any], rng: np.random.Generator, positive: bool) -> list[Any]:
    """One array per model input: magnitudes 0.5 to 2 that float16 holds exactly."""
    arrays = []
    for value in graph_inputs:
        tensor = value.type.tensor_type
        dtype = FLOAT_TYPES.get(tensor.elem_type)
        shape = [dim.dim_value for dim in tensor.shape.dim]
        if dtype is None or any(size < 1 for size in shape):
            raise CannotAudit(
                f"input {value.name!r} (ONNX type {tensor.elem_type}, shape {shape}): cannot "
                "draw it; rerun the suite with --keep-arrays all to keep its inputs"
            )
        signs = 1.0 if positive else rng.choice([-1.0, 1.0], size=shape)
        values = signs * rng.uniform(0.5, 2.0, size=shape)
        arrays.append(values.astype(np.float16).astype(dtype))
    return arrays


def calibration(
    case: Drawn,
    inputs: list[np.ndarray],
    graph_inputs: list[Any],
    rng: np.random.Generator,
    positive: bool,
) -> str:
    """Write the int8 calibration set and its list, dataset.txt, into the work folder: the case
    folder's own set when it kept every file of it ("kept"), else ``inputs`` and further draws
    ("drawn")."""
    listing = case.folder / "dataset.txt"
    lines = listing.read_text(encoding="utf-8").split("\n") if listing.is_file() else []
    lines = [line for line in lines if line.strip()]
    names = [name for line in lines for name in line.split()]
    if names and all(inside(name) and (case.folder / name).is_file() for name in names):
        for name in names:
            (case.work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(case.folder / name, case.work / name)
        shutil.copy(listing, case.work / "dataset.txt")
        return "kept"
    further = (len(lines) or DEFAULT_SAMPLES) - 1
    samples = [inputs] + [draw_inputs(graph_inputs, rng, positive) for _ in range(further)]
    written = []
    for s, sample in enumerate(samples):
        row = [f"dataset/sample{s}_input{i}.npy" for i in range(len(sample))]
        for name, array in zip(row, sample, strict=True):
            (case.work / name).parent.mkdir(exist_ok=True)
            np.save(case.work / name, array)
        written.append(" ".join(row))
    (case.work / "dataset.txt").write_text("\n".join(written) + "\n", encoding="utf-8")
    return "drawn"


def inside(name: str) -> bool:
    """Whether the relative path ``name`` stays inside its folder."""
    path = Path(name)
    return not path.is_absolute() and ".." not in path.parts


def save_arrays(folder: Path, arrays: list[np.ndarray]) -> None:
    folder.mkdir()
    for index, array in enumerate(arrays):
        np.save(folder / f"{index}.npy", array)


def reruns(cases: list[Drawn], timeout: float) -> Iterator[Drawn]:
    """Each case as its rerun ends (those that could not be prepared first), from one child
    process that imports the toolkit once."""
    ready = [case for case in cases if not case.problem]
    yield from (case for case in cases if case.problem)
    if not ready:
        return
    command = [sys.executable, str(Path(__file__).resolve()), SERVE, str(timeout)]
    command += [str(case.work) for case in ready]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("cannot audit: "):
                raise CannotAudit(line.removeprefix("cannot audit: ").strip())
            yield ready[int(line)]
    if child.returncode:
        raise CannotAudit(f"the toolkit's process ended with status {child.returncode}")


def serve(timeout: float, folders: list[Path]) -> int:
    """The child: import the toolkit, rerun each folder's case in a forked process, print the
    folder's index as each ends. The toolkit's own output goes to each folder's log."""
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    try:
        from rknn.api import RKNN
    except ImportError as exc:
        replies.write(f"cannot audit: rknn-toolkit2 cannot be imported ({exc})\n")
        return CANNOT_RUN
    for index, folder in enumerate(folders):
        pid = os.fork()
        if pid == 0:
            os.chdir(folder)  # the toolkit drops files into the working folder
            tempfile.tempdir = str(folder)  # and its temporary folders
            log = os.open(TOOLKIT_LOG, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(log, 1)
            os.dup2(log, 2)
            signal.alarm(max(1, int(timeout)))  # SIGALRM ends a hung toolkit: "timed out"
            os._exit(rerun(RKNN))
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        ended = signal.Signals(-code).name if code < 0 else f"exit code {code}"
        (folder / STATUS).write_text(ended)
        replies.write(f"{index}\n")
    return 0


def rerun(rknn_class: Any) -> int:
    """The toolkit calls npu-hil's simulator makes, in this folder; RESULT holds the outputs or
    the failure."""
    toolkit = json.loads(Path("toolkit.json").read_text(encoding="utf-8"))
    inputs = [np.load(path) for path in sorted(Path("inputs").glob("*.npy"), key=number)]
    stage, outputs, failure = "build", [], ""
    Path(STAGE).write_text(stage)
    rknn = rknn_class(verbose=True)
    try:
        rknn.config(target_platform=toolkit["target_platform"], **toolkit.get("config", {}))
        if rknn.load_onnx(model="model.onnx") != 0:
            failure = "build failed (load_onnx)"
        elif rknn.build(
            do_quantization=bool(toolkit["do_quantization"]), dataset=toolkit.get("dataset")
        ):
            failure = "build failed (build)"
        else:
            stage = "runtime"
            Path(STAGE).write_text(stage)
            if rknn.init_runtime() != 0:
                failure = "runtime failed (init_runtime)"
            else:
                data_format = toolkit.get("inference", {}).get("data_format", "nchw")
                found = rknn.inference(inputs=inputs, data_format=data_format)
                if found is None:
                    failure = "runtime failed (inference returned nothing)"
                else:
                    outputs = [np.asarray(out) for out in found]
    except Exception as exc:  # the toolkit raises freely; a failed call like any other
        failure = f"{stage} failed ({type(exc).__name__})"
    sys.stdout.flush()
    ctypes.CDLL(None).fflush(None)  # the compiler's C output; os._exit flushes nothing
    arrays: dict[str, Any] = {f"out{i}": out for i, out in enumerate(outputs)}
    np.savez(RESULT, failure=failure, count=len(outputs), **arrays)
    return 0


def number(path: Path) -> int:
    """The index an array file is named by: npu-hil's ``<index>_<name>.npy``, this script's
    ``<index>.npy``."""
    return int(path.stem.split("_")[0])


def report(case: Drawn) -> int:
    """Print the case's line; AGREE, DISAGREE or CANNOT_RUN."""
    record = case.record
    head = f"{record['id']} ({'; '.join(filter(None, [record['verdict'], case.data]))})"
    if case.problem:
        print(f"not rerun  {head}: {case.problem}")
        return CANNOT_RUN
    recorded_layers = layers_text(
        (str(layer.get("op")), str(layer.get("target")))
        for layer in record.get("placement", [])
        if layer.get("op") not in IO_LAYERS  # the toolkit's own, as its table names them
    )
    log = (case.work / TOOLKIT_LOG).read_text(errors="replace")
    rerun_layers = layers_text(parse_layers(log))
    judged = recorded_result(record)
    recorded_outcome = recorded_stage(record) or ("ran" + (f", {judged}" if judged else ""))
    rerun_outcome = outcome(case, judged is not None)
    same = recorded_layers == rerun_layers and recorded_outcome == rerun_outcome
    print(
        f"{'agree' if same else 'DISAGREE':<9}  {head}: layers recorded [{recorded_layers}] "
        f"rerun [{rerun_layers}]; outcome recorded {recorded_outcome}, rerun {rerun_outcome}"
    )
    return AGREE if same else DISAGREE


def parse_layers(log: str) -> list[tuple[str, str]]:
    """(op type, target) of each compute layer in the last layer table of a verbose toolkit
    log: the compiler prints "D RKNN: [hh:mm:ss.mmm] <text>", the table a title line, a rule,
    a header naming its columns (OpType, Target), a rule, one row per layer, a rule."""
    layers: list[tuple[str, str]] = []
    columns: list[str] = []
    for line in log.splitlines():
        text = re.sub(r"^D RKNN: \[[0-9:.]+\] ?", "", line.rsplit("\r", 1)[-1]).strip()
        if text == LAYER_TABLE:
            layers, columns = [], []
        elif not columns and text.startswith("ID ") and "OpType" in text and "Target" in text:
            columns = text.split()
        elif columns and text[:1].isdigit():
            cells = text.split()
            row = dict(zip(columns, cells, strict=False))
            if row.get("OpType") not in IO_LAYERS:
                layers.append((row.get("OpType", "?"), row.get("Target", "?")))
        elif columns and layers and not text.startswith("-"):
            columns = []  # the table ended
    return layers


def layers_text(layers: Any) -> str:
    """ "Conv@NPU, MaxPool@NPU x3": each layer's op type and target, runs of equal layers
    counted."""
    runs: list[list[Any]] = []
    for layer in layers:
        if runs and runs[-1][0] == layer:
            runs[-1][1] += 1
        else:
            runs.append([layer, 1])
    parts = [f"{op}@{target}" + (f" x{n}" if n > 1 else "") for (op, target), n in runs]
    return ", ".join(parts) or "none"


def recorded_stage(record: dict[str, Any]) -> str:
    """ "build failed", "build aborted (SIGABRT)"...: how a check of the record saw the model
    refused; "" when it ran."""
    for check in record.get("checks", []):
        found = REFUSED.match(str(check.get("observed", "")))
        if found:
            return found.group(0)
    return ""


def recorded_result(record: dict[str, Any]) -> str | None:
    """ "match" or "mismatch" by the record's result check (its would-be status where the check
    rests on a limit the document contradicts; against onnxruntime where the host references
    disagreed); None when the record judged no result."""
    checks = [check for check in record.get("checks", []) if check.get("prop") == "result"]
    status = checks[0].get("status") if checks else None
    if status == "doc-inconsistent":  # the status it would have: "[would be confirmed; ..."
        would = WOULD_BE.search(str(checks[0].get("observed", "")))
        status = would.group(1) if would else status
    if status == "reference-disagreement":
        seen = record.get("reference", {}).get("metrics", {}).get("onnxruntime", {})
        cosine = seen.get("cosine", 1.0)
        bad = seen.get("mismatches", 0) or cosine < record.get("tolerance", {}).get("min_cosine", 0)
        return "mismatch" if bad else "match"
    return {"confirmed": "match", "wrong-result": "mismatch"}.get(str(status))


def outcome(case: Drawn, judged: bool) -> str:
    """The rerun's outcome in the record's words: how it was refused, or "ran" (with
    "match"/"mismatch" against this script's reference when the record judged a result)."""
    path = case.work / RESULT
    if not path.exists():  # the case's process died: by which signal, in which stage
        stage = (case.work / STAGE).read_text() if (case.work / STAGE).exists() else "build"
        died = (case.work / STATUS).read_text()
        return "timed out" if died == "SIGALRM" else f"{stage} aborted ({died})"
    with np.load(path) as saved:
        failure = str(saved["failure"])
        outputs = [saved[f"out{i}"] for i in range(int(saved["count"]))]
    if failure:
        return failure.split(" (")[0]
    if not judged:
        return "ran"
    tolerance = case.record.get("tolerance") or {}
    return "ran, " + (
        "match" if matches(outputs, case.reference, tolerance, case.span) else "mismatch"
    )


def matches(
    outputs: list[np.ndarray], reference: list[np.ndarray], tolerance: dict[str, float], span: float
) -> bool:
    """npu-hil's documented rule, restated: every output within atol + atol_steps * span / 255
    + rtol * |ref| of the reference (span: the wider of the output's and the inputs' range),
    its cosine at least min_cosine."""
    if len(outputs) != len(reference):
        return False
    for observed, expected in zip(outputs, reference, strict=True):
        ref = np.asarray(expected, dtype=np.float64)
        obs = np.asarray(observed, dtype=np.float64)
        if obs.size != ref.size:
            return False
        obs = obs.reshape(ref.shape)
        wide = max(float(np.ptp(ref)) if ref.size else 0.0, span)
        allowed = (
            tolerance.get("atol", 0.0)
            + tolerance.get("atol_steps", 0.0) * wide / 255.0
            + tolerance.get("rtol", 0.0) * np.abs(ref)
        )
        if not np.all(np.abs(obs - ref) <= allowed):  # NaN fails
            return False
        norm = float(np.linalg.norm(obs) * np.linalg.norm(ref))
        cosine = (
            float(obs.ravel() @ ref.ravel() / norm)
            if norm
            else float(not obs.any() and not ref.any())
        )
        if cosine < tolerance.get("min_cosine", 0.0):
            return False
    return True


if __name__ == "__main__":
    sys.exit(main())
