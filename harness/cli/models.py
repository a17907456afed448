"""``hil run`` and ``hil reduce``: a user's ONNX model on the NPU against the host references.

``hil run MODEL.onnx --platform P`` runs the model as one case (on the simulator, or with
``--boards PATH`` on that board file or the platform's first board in that folder) into a
results directory laid out like the suites' (journal, case folder, report, a repro bundle when
it fails) and prints the verdict and the layer table;
``--layers`` adds the per-layer comparison, which a wrong result gets without asking (its
bundle holds the table). Every layer is checked against the platform's document first
(``harness.cases.model_check``): the record and the bundle say which limits each layer is
inside or outside. ``hil reduce MODEL.onnx ...`` (or ``hil reduce RESULTS CASE`` for a case
already run) shrinks a failing model to the smallest one that still fails the same way and
bundles it with its per-layer comparison.

Exit status: 0 when the model passes, 1 when it fails (violation or wrong result; for
``reduce``: reduced and bundled), 2 on bad input, 3 on infrastructure trouble (nothing was
learnt about the NPU).
"""

from __future__ import annotations

import argparse
import ctypes
import functools
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.boards.inventory import Board, BoardFileError, check_files, load_board
from harness.cases.model_check import check_model
from harness.cases.user_models import refused_case
from harness.cli.names import add_vendor_option, command_vendor
from harness.cli.parser import deprecated_alias
from harness.diskcache import refusal
from harness.judge.verdict import FAILING_VERDICTS
from harness.modelfiles.graph import graph_inputs
from harness.modelfiles.prepare import (
    ModelFileError,
    PreparedModel,
    file_source,
    load_model,
    prepare,
    read_arrays,
    read_calibration,
    read_calibration_list,
)
from harness.models.budget import size_budget
from harness.pipeline import CALIBRATION_EXTRA_SAMPLES, host_versions
from harness.report import write_reports
from harness.report.bundle import BundleError, case_dir, make_bundle, make_bundles_for_failures
from harness.results.journal import JournalError, read_records, write_run_metadata
from harness.results.records import CaseRecord
from harness.results.runs import VENDOR_KEY, append_run, check_unused
from harness.targets.selection import platform_boards
from harness.targets.settings import BuildSettings, SettingsError
from harness.targets.target import Target
from harness.targets.timing import JobTiming, add_perf_options, perf_request
from harness.terminal import columns, emit
from harness.text import printable, shown_name, warn_weak_secrets
from harness.timeouts import timeout_problem
from harness.triage.layers import compare_layers, format_layers
from harness.triage.reduce import format_steps, reduce_model
from harness.triage.runner import ModelRunner
from harness.triage.timing import format_timing
from harness.vendors import Recipes, cache_help, fill_run_defaults, layer_aliases
from harness.vendors.base import Vendor
from harness.vendors.stages import default_sdk, stages_for

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

PASSED, FAILED, BAD_INPUT, INFRA = 0, 1, 2, 3
# Verdicts whose bundle holds the per-layer comparison, run without --layers
PER_LAYER = ("wrong-result",)
# Records that say nothing about the NPU, and the exit status each gives.
NOT_JUDGED = {"bad-input": BAD_INPUT, "infra-error": INFRA}


def register(subparsers: Subparsers) -> None:
    run = subparsers.add_parser("run", help="run an ONNX model against the host references")
    run.add_argument("model", type=Path, help="the ONNX model")
    _model_options(run)
    run.add_argument(
        "--layers",
        action="store_true",
        help="also compare every intermediate tensor with the reference, in graph order",
    )
    _perf_options(run)
    run.set_defaults(handler=run_model, parser=run)

    reduce = subparsers.add_parser(
        "reduce", help="shrink a failing model to the smallest one that fails the same way"
    )
    reduce.add_argument("model", type=Path, help="the ONNX model, or a results directory")
    reduce.add_argument("case", nargs="?", help="with a results directory: the case id")
    _model_options(reduce)
    reduce.set_defaults(handler=run_reduce, parser=reduce)


def _model_options(parser: argparse.ArgumentParser) -> None:
    add_vendor_option(parser)
    parser.add_argument(
        "--platform",
        default=None,
        help="target platform of the run's vendor, in any case (default: the vendor's first)",
    )
    parser.add_argument(
        "--boards",
        type=Path,
        metavar="PATH",
        help="run on a board: this board file, or the platform's first board in this folder "
        "(default: the simulator)",
    )
    deprecated_alias(parser, "--board", "--boards")
    parser.add_argument(
        "--results",
        type=Path,
        help="results directory, one run's (default results-COMMAND-STEM: results-run-mynet "
        "for hil run mynet.onnx)",
    )
    parser.add_argument(
        "--append",
        action="store_true",
        help="add this run to the --results folder of another run, as a run of its own",
    )
    parser.add_argument("--name", help="case name (default: the model file's stem)")
    parser.add_argument("--inputs", type=Path, metavar="DIR", help="folder of NAME.npy inputs")
    parser.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=D,D,...",
        help="fix an input's shape (repeatable)",
    )
    parser.add_argument(
        "--range",
        action="append",
        default=[],
        metavar="[NAME=]LO,HI",
        help="range of seeded random inputs (default -1,1; repeatable, per input)",
    )
    parser.add_argument(
        "--quantize",
        type=Path,
        metavar="DIR",
        help="int8 build calibrated on DIR: one sub-folder of NAME.npy per sample (or one "
        "folder of them); without it, float16 (int8 where the platform builds only int8)",
    )
    parser.add_argument(
        "--toolkit-config",
        type=Path,
        metavar="FILE",
        help="YAML or JSON of the vendor toolkit's own build settings (the keyword "
        "arguments of its configuration and build calls), used for every build",
    )
    parser.add_argument(
        "--hil-timeout", type=float, default=600.0, help="seconds one run may take (600)"
    )
    deprecated_alias(parser, "--timeout", "--hil-timeout")
    parser.add_argument(
        "--hil-cache",
        default=None,
        help=f"simulator result cache folder, or 'off' ({cache_help('simulator_cache')})",
    )
    deprecated_alias(parser, "--cache", "--hil-cache")


def _perf_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--perf", action="store_true", help="on a board: time the model (warm-up, timed runs)"
    )
    add_perf_options(parser.add_argument)
    parser.add_argument(
        "--layers-perf",
        action="store_true",
        help="with --perf: the runtime's time per layer, where the board's runtime exposes it",
    )


def _perf(args: argparse.Namespace) -> JobTiming | None:
    if args.layers_perf and not args.perf:
        raise _BadInput("--layers-perf needs --perf")
    try:
        request = perf_request(args, layers=args.layers_perf)
    except ValueError as exc:
        raise _BadInput(str(exc)) from None
    return request if args.perf else None


class _BadInput(Exception):
    pass


class _BadModel(_BadInput):
    """The model, its inputs or the values given for them cannot be used: a bad-input record."""

    def __init__(self, error: Exception, vendor: Vendor, results: Path) -> None:
        super().__init__(str(error))
        self.error, self.vendor, self.results = error, vendor, results


def run_model(args: argparse.Namespace) -> int:
    _keep_freed_memory()
    try:
        vendor, prepared, results = _setup(args, args.model)
        board = _board(vendor, args)
        perf = _perf(args)
        _start(vendor, args, results)
    except _BadModel as exc:
        return _refuse(args, exc)
    except _BadInput as exc:
        return _bad_input(exc)
    with vendor.target(board, args.hil_timeout, args.hil_cache) as target:
        runner = _runner(vendor, results, target, args.platform, args.dtype, perf, args.hil_timeout)
        record = runner.run(prepared)
        _print_record(record, prepared, runner)
        if perf is not None:
            emit(format_timing(record.perf))
        if (args.layers and record.verdict not in NOT_JUDGED) or record.verdict in PER_LAYER:
            _per_layer(runner, prepared, record)
    if record.verdict in FAILING_VERDICTS:  # the model's own bundle, not its exposed run's
        try:
            make_bundle(results, record.id, regenerate=Recipes(vendor))
        except (BundleError, JournalError, OSError) as exc:
            emit(f"hil: no repro bundle for {record.id}: {exc}\n", err=True)
    _finish(results, vendor)
    return _status(record)


def run_reduce(args: argparse.Namespace) -> int:
    _keep_freed_memory()
    try:
        if args.case is not None:
            vendor, prepared, results, original = _from_results(args)
            dtype = original.dtype
        elif args.model.is_dir():
            raise _BadInput(f"{args.model}: a results directory; give the case id after it")
        else:
            vendor, prepared, results = _setup(args, args.model)
            dtype, original = args.dtype, None
        board = _board(vendor, args)
        _start(vendor, args, results)
    except _BadModel as exc:
        return _refuse(args, exc)
    except _BadInput as exc:
        return _bad_input(exc)
    with vendor.target(board, args.hil_timeout, args.hil_cache) as target:
        runner = _runner(vendor, results, target, args.platform, dtype, None, args.hil_timeout)
        if original is None:
            original = runner.run(prepared)
            _print_record(original, prepared, runner)
            folder = runner.case_folder(original)
            prepared.given = read_arrays(folder / "inputs", prepared.input_names)
        if original.verdict not in FAILING_VERDICTS:
            emit(f"{original.id}: {original.verdict}; nothing to reduce\n")
            _finish(results, vendor)
            return _status(original)
        reduction = reduce_model(runner, prepared, original)
        emit(format_steps(reduction))
        smallest = reduction.smallest or original
        _per_layer(runner, reduction.smallest_model or prepared, smallest)
    _finish(results, vendor)
    try:
        bundle = make_bundle(results, smallest.id, regenerate=Recipes(vendor))
    except (BundleError, JournalError, OSError) as exc:
        return _bad_input(exc)
    emit(f"bundle: {bundle}\n")
    return FAILED


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_KEEP_BYTES = 1 << 30


def _keep_freed_memory() -> None:
    """Have glibc keep what this process frees, up to 1 GiB, for its next allocations: a
    user's model is copied whole several times (checked, shape-inferred, serialised for its
    job and its references), and glibc returns each copy over 32 MiB to the kernel, which
    faults the next one in page by page (0.4 s of system time for ResNet-18's 47 MB, more
    than the copying). Without glibc's mallopt nothing changes."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, _KEEP_BYTES)
        mallopt(_M_TRIM_THRESHOLD, _KEEP_BYTES)


def _setup(args: argparse.Namespace, path: Path) -> tuple[Vendor, PreparedModel, Path]:
    vendor = _vendor(args)
    # the model's own folder, never the suites' "results": a second run of it is refused
    results = _results(args, Path(f"results-{args.command}-{path.stem}"))
    settings = _settings(vendor, args)
    args.dtype = _dtype(vendor, args, settings)
    where = shown_name(str(path))
    try:
        model = load_model(path)
        names = graph_inputs(model)
        given = read_arrays(args.inputs, names) if args.inputs else {}
        prepared = prepare(
            model,
            args.name or shown_name(path.stem),
            where,
            input_shapes=_named(args.input_shape, "--input-shape", names, _ints),
            given=given,
            ranges=_named(args.range, "--range", names, _bounds),
            max_opset=vendor.max_opset,
        )
        prepared.source = file_source(path)
        prepared.build_config = settings.config
        if args.quantize:
            prepared.calibration = read_calibration(args.quantize, prepared)
        elif settings.dataset:
            prepared.calibration = read_calibration_list(settings.dataset, prepared)
        elif args.dtype == "int8":
            emit(
                f"int8 calibration: no set given (--quantize DIR): the model's inputs and "
                f"{CALIBRATION_EXTRA_SAMPLES} more samples drawn as they are\n"
            )
    except (ModelFileError, OSError) as exc:
        raise _BadModel(exc, vendor, results) from None
    return vendor, prepared, results


def _settings(vendor: Vendor, args: argparse.Namespace) -> BuildSettings:
    """The user's own toolkit settings (``--toolkit-config``), checked by the vendor."""
    if args.toolkit_config is None:
        return BuildSettings()
    if vendor.build_settings is None:
        raise _BadInput(f"--toolkit-config: vendor {vendor.name} takes no toolkit settings")
    try:
        return vendor.build_settings(args.toolkit_config)
    except SettingsError as exc:
        raise _BadInput(str(exc)) from None


def _dtype(vendor: Vendor, args: argparse.Namespace, settings: BuildSettings) -> str:
    """int8 when asked (``--quantize``, the settings' quantization or calibration set) or
    where the platform builds nothing else (said); float16 otherwise."""
    where = f"--toolkit-config {args.toolkit_config}"
    if settings.quantize is False and (args.quantize or settings.dataset):
        raise _BadInput(f"{where} asks for no quantization, yet a calibration set is given")
    if args.quantize and settings.dataset:
        raise _BadInput(f"--quantize {args.quantize} and {where}: two calibration sets")
    if args.quantize or settings.quantize or settings.dataset:
        return "int8"
    if settings.quantize is False:
        return "float16"
    why = vendor.int8_only().get(args.platform)
    if why is None:
        return "float16"
    emit(f"{args.platform}: an int8 build: {why}\n")
    return "int8"


def _refuse(args: argparse.Namespace, bad: _BadModel) -> int:
    """A model refused before it ran: its bad-input record and the report, then exit 2."""
    try:
        _start(bad.vendor, args, bad.results)
    except _BadInput as exc:
        return _bad_input(exc)
    name = args.name or shown_name(args.model.stem)
    case = refused_case(name, shown_name(str(args.model)), args.platform, args.dtype)
    with bad.vendor.target(None, args.hil_timeout, "off") as target:  # never started
        runner = _runner(bad.vendor, bad.results, target, args.platform, args.dtype)
        record = runner.refuse(case, bad.error)
    emit(f"{record.id}: {record.verdict} [{record.backend}]\n")
    _finish(bad.results, bad.vendor)
    return _bad_input(bad)


def _from_results(args: argparse.Namespace) -> tuple[Vendor, PreparedModel, Path, CaseRecord]:
    """The model and inputs of a case already run, from its folder."""
    results = args.model
    try:
        records = {record.id: record for record in read_records(results)}
    except (JournalError, OSError) as exc:
        raise _BadInput(str(exc)) from None
    if args.case not in records:
        raise _BadInput(f"{results}/journal.jsonl: no case with id {args.case!r}")
    original = records[args.case]
    args.platform = original.platform
    vendor = _vendor(args)
    try:
        folder = case_dir(results, original)
    except BundleError as exc:
        raise _BadInput(str(exc)) from None
    try:
        model = load_model(folder / "model.onnx")
        names = graph_inputs(model)
        given = read_arrays(folder / "inputs", names)
        name = args.name or original.value or original.op
        where = str(folder / "model.onnx")
        prepared = prepare(model, name, where, given=given, max_opset=vendor.max_opset)
    except (ModelFileError, OSError) as exc:
        raise _BadInput(str(exc)) from None
    prepared.source = {**original.source, "case": original.id}
    prepared.build_config = dict(original.params.get("build_config") or {})
    return vendor, prepared, _results(args, results), original


def _runner(
    vendor: Vendor,
    results: Path,
    target: Target,
    platform: str,
    dtype: str,
    perf: JobTiming | None = None,
    timeout: float | None = None,
) -> ModelRunner:
    """The runner of a user's model with the suites' stages, on this environment's SDK, its
    layers checked against the platform's document; its host references stopped after
    ``timeout`` seconds (``--hil-timeout``)."""
    check = functools.partial(
        check_model,
        catalogue=vendor.operators(platform),
        onnx_names=vendor.operator_names,
        dtype=dtype,
    )
    stages = stages_for(vendor, perf=perf, reference_deadline_s=timeout)
    allowed = vendor.cpu_allowed(platform)
    sdk = default_sdk(vendor)
    return ModelRunner(results, target, platform, dtype, stages, sdk, check, allowed)


def _per_layer(runner: ModelRunner, prepared: PreparedModel, record: CaseRecord) -> None:
    """Every layer of ``record``'s model against the reference, on the inputs it ran on (the
    exposed run's own seed would draw others), the table into its folder."""
    if record.artifacts:
        inputs = runner.case_folder(record) / "inputs"
        prepared = replace(prepared, given=read_arrays(inputs, prepared.input_names))
    report = compare_layers(runner, prepared, beside=record)
    emit(f"\nper layer ({report.record.id}, every float tensor exposed):\n")
    emit(format_layers(report))


def _vendor(args: argparse.Namespace) -> Vendor:
    try:
        vendor = command_vendor(args)
    except LookupError as exc:  # a usage error of the command, as argparse's own
        args.parser.error(str(exc))
    fill_run_defaults(args, vendor)  # its default platform and cache folder
    problem = timeout_problem(args.hil_timeout)
    if problem is not None:
        raise _BadInput(f"--hil-timeout {args.hil_timeout:g}: {problem}")
    if args.hil_cache != "off" and (problem := refusal(Path(args.hil_cache))) is not None:
        raise _BadInput(f"--hil-cache: {problem}")
    try:
        size_budget()
    except ValueError as exc:  # it names the variable and the value
        raise _BadInput(str(exc)) from None
    if vendor.simulator is None and vendor.board_target is None:
        raise _BadInput(f"--platform {args.platform}: {vendor.not_runnable()}")
    return vendor


def _results(args: argparse.Namespace, default: Path) -> Path:
    """The results folder, made; one no other run wrote, unless ``_start`` appends to it or
    writes into the run of the case it reduces (checked before anything is said or run)."""
    results: Path = args.results or default
    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _BadInput(f"--results {results}: not a usable folder: {exc.strerror}") from None
    if not args.append and not _reduces_into_its_run(args, results):
        try:
            check_unused(results, "--results DIR")
        except JournalError as exc:
            raise _BadInput(str(exc)) from None
    return results


def _reduces_into_its_run(args: argparse.Namespace, results: Path) -> bool:
    """``hil reduce RESULTS CASE`` writing into RESULTS: the run whose case it reduces."""
    return getattr(args, "case", None) is not None and results == args.model


def _named(values: list[str], option: str, names: list[str], parse: Any) -> dict[str, Any]:
    """``NAME=VALUE`` entries; a bare VALUE applies to every input."""
    found: dict[str, Any] = {}
    for text in values:
        name, sep, value = text.rpartition("=")
        try:
            parsed = parse(value)
        except ValueError as exc:
            raise _BadInput(f"{option} {text!r}: {exc}") from None
        for target in [name] if sep else names:
            found[target] = parsed
    return found


def _ints(text: str) -> list[int]:
    sizes = [int(part) for part in text.split(",")]
    if any(size < 1 for size in sizes):
        raise ValueError("sizes must be at least 1")
    return sizes


def _bounds(text: str) -> tuple[float, float]:
    parts = [float(part) for part in text.split(",")]
    if len(parts) != 2 or not parts[0] < parts[1]:
        raise ValueError("give LO,HI with LO < HI")
    return parts[0], parts[1]


def _board(vendor: Vendor, args: argparse.Namespace) -> Board | None:
    if args.boards is None:
        return None
    try:
        if args.boards.is_dir():
            boards = platform_boards(args.boards, args.platform, vendor.runtimes)
        else:
            boards = [load_board(args.boards, vendor.runtimes)]
        for board in boards:
            check_files(board)
    except BoardFileError as exc:
        raise _BadInput(str(exc)) from None
    if not boards:
        raise _BadInput(f"--boards {args.boards}: no board file for platform {args.platform}")
    if boards[0].platform != args.platform:
        raise _BadInput(
            f"--boards {args.boards}: a {boards[0].platform} board, not {args.platform}"
        )
    return boards[0]


def _start(vendor: Vendor, args: argparse.Namespace, results: Path) -> None:
    """Write run.json: this run's, into a folder no other run wrote (``_results``), or with
    ``--append`` added to that run's as a run of its own. ``hil reduce RESULTS CASE``
    into RESULTS writes none: its steps belong to the run whose case it reduces."""
    warn_weak_secrets()
    if _reduces_into_its_run(args, results):
        return
    if not args.append:  # a folder no other run wrote (``_results``)
        write_run_metadata(results, _metadata(vendor, args))
        return
    try:
        append_run(results, _metadata(vendor, args))
    except JournalError as exc:
        raise _BadInput(str(exc)) from None


def _metadata(vendor: Vendor, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "platform": args.platform,
        VENDOR_KEY: vendor.name,
        "backend": "board" if args.boards else "sim",
        "command": f"hil {args.command}",
        "versions": {**host_versions(), **vendor.versions()},
    }


def _print_record(record: CaseRecord, prepared: PreparedModel, runner: ModelRunner) -> None:
    lines = [f"{record.id}: {record.verdict} [{record.backend}]", f"  {record.detail}"]
    if record.id in runner.checks:
        lines.append(f"  document: {printable(runner.checks[record.id].summary())}")
    # where the layers ran (the CPU layers the document allows among them) when the detail
    # is another check's
    lines += [
        f"  placement: {printable(str(check['observed']))}"
        for check in record.checks
        if check.get("prop") == "placement" and str(check.get("observed")) not in record.detail
    ]
    lines += [f"  changed: {change}" for change in prepared.changes]
    layers = [layer for layer in record.placement if not layer.get("io")]
    if layers and record.verdict != "infra-error":  # the host build's; the target ran nothing
        rows = [("layer", "op", "target", "dtype")]
        rows += [
            (
                printable(str(layer.get("name") or layer.get("full_name", ""))),
                printable(str(layer.get("op"))),
                printable(str(layer.get("target"))),
                printable(str(layer.get("dtype", ""))),
            )
            for layer in layers
        ]
        lines += [f"  {line}" for line in columns(rows)]
    if record.artifacts:
        lines.append(f"  case folder: {record.artifacts}")
    emit("".join(f"{line}\n" for line in lines))


def _finish(results: Path, vendor: Vendor) -> None:
    """The report and the bundles of failures, as a suite run leaves them."""
    make_bundles_for_failures(results, layer_aliases(), Recipes(vendor))
    for path in write_reports(results, layer_aliases()):
        emit(f"report: {path}\n")


def _status(record: CaseRecord) -> int:
    if record.verdict in NOT_JUDGED:
        return NOT_JUDGED[record.verdict]
    return FAILED if record.verdict in FAILING_VERDICTS else PASSED


def _bad_input(exc: Exception) -> int:
    emit(f"hil: error: {exc}\n", err=True)
    return BAD_INPUT
