"""``hil probe``: where each documented numeric limit really is, on the simulator or a board.

For every selected bound (``-k``, pytest-style, on bound ids such as
``rk3562/MaxPool/attr/kernel_shape/kernel_h/int8/upper``; ``--op``/``--entry`` as in pytest:
an ONNX operator's entries, or one documented entry) a search walks from the documented
edge outward (inward when the edge already misbehaves) to the first value that behaves
differently: exponential steps, then bisection, at most ``--steps`` steps per bound. Every
step is an ordinary case in ``RESULTS/journal.jsonl`` with its artifacts; each bound's answer
is a line of ``RESULTS/probes.jsonl``; the first misbehaving point of each bound gets a repro
bundle; ``hil report RESULTS`` shows the "Real limits" section and ``hil diff`` the
boundaries that moved.

Exit status: 0 when every search ran (whatever it found), 2 on bad input.
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from harness.boards.inventory import Board, BoardFileError
from harness.cases.operators import DTYPES
from harness.cli.names import add_vendor_option, command_vendor
from harness.cli.parser import deprecated_alias
from harness.diskcache import refusal
from harness.documented.operators import OperatorCatalogue
from harness.documented.selection import OperatorSelection
from harness.documented.selection import SelectionError as OperatorSelectionError
from harness.models.budget import size_budget
from harness.pipeline import CaseExecutor, host_versions
from harness.probe.runner import (
    DEFAULT_STEPS,
    SelectionError,
    search_bounds,
    select,
    skipped_record,
)
from harness.probe.steps import Bound, Skipped, numeric_bounds, unsearchable
from harness.report.bundle import BundleError, make_bundle
from harness.report.real_limits import format_table
from harness.results.journal import write_run_metadata
from harness.results.probes import ProbeRecord, append_probe
from harness.results.runs import VENDOR_KEY
from harness.targets.selection import platform_boards
from harness.terminal import emit
from harness.text import clipped, warn_weak_secrets
from harness.timeouts import timeout_problem
from harness.vendors import Recipes, cache_help, fill_run_defaults
from harness.vendors.base import Vendor
from harness.vendors.stages import default_sdk, stages_for

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

BAD_INPUT = 2


def register(subparsers: Subparsers) -> None:
    """Add ``hil probe`` to the ``hil`` parser."""
    summary = "search each documented numeric limit for where it really is (simulator)"
    parser = subparsers.add_parser("probe", help=summary, description=__doc__)
    add_vendor_option(parser)
    parser.add_argument(
        "--platform",
        default=None,
        help="target platform of the run's vendor, in any case (default: the vendor's first)",
    )
    parser.add_argument(
        "-k",
        dest="selection",
        default=None,
        metavar="EXPRESSION",
        help='bounds to probe, e.g. "Expand or MaxPool", "kernel and not int8" (default: all)',
    )
    parser.add_argument(
        "--op",
        action="append",
        default=[],
        metavar="ONNX_TYPE",
        help="only the bounds of the entries documenting this ONNX operator type (Conv: "
        "Convolution and Depthwise Convolution, no fused entry); repeatable",
    )
    parser.add_argument(
        "--entry",
        action="append",
        default=[],
        metavar="NAME",
        help="only the bounds of this entry of the vendor's document, as headed; repeatable",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=Path("probe-results"),
        help="results directory (default %(default)s)",
    )
    parser.add_argument(
        "--steps",
        type=_positive,
        default=DEFAULT_STEPS,
        help="step budget per bound (default %(default)s)",
    )
    parser.add_argument(
        "--dtype", choices=DTYPES, action="append", help="only these dtypes (repeatable)"
    )
    parser.add_argument(
        "--hil-timeout", type=float, default=600.0, help="seconds one step may take (600)"
    )
    deprecated_alias(parser, "--timeout", "--hil-timeout")
    parser.add_argument(
        "--hil-cache",
        default=None,
        help=f"simulator result cache directory ({cache_help('simulator_cache')}); 'off' "
        "disables it",
    )
    parser.add_argument(
        "--boards",
        type=Path,
        default=None,
        metavar="PATH",
        help="a board file, or a folder of them: run on the platform's first board there "
        "(default: the simulator)",
    )
    parser.add_argument("--list", action="store_true", help="list the selected bounds and exit")
    parser.set_defaults(handler=run_probe, parser=parser)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def run_probe(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.parser
    try:
        vendor = command_vendor(args)
    except LookupError as exc:
        parser.error(str(exc))
    fill_run_defaults(args, vendor)  # its default platform and cache folder
    problem = timeout_problem(args.hil_timeout)
    if problem is not None:
        parser.error(f"--hil-timeout {args.hil_timeout:g}: {problem}")
    if vendor.simulator is None and vendor.board_target is None:
        parser.error(f"--platform {args.platform}: {vendor.not_runnable()}")
    try:
        catalogue = vendor.operators(args.platform)
    except LookupError as exc:  # "all", or a platform its documents have no section for
        parser.error(f"--platform {args.platform}: {exc}")
    try:
        elements = size_budget().elements
    except ValueError as exc:  # it names the variable and the value
        parser.error(str(exc))
    bounds, skipped = numeric_bounds(
        catalogue, vendor.declarations, dtypes=tuple(args.dtype or DTYPES), max_elements=elements
    )
    operators = OperatorSelection(tuple(args.op), tuple(args.entry))
    try:
        ops = (
            operators.on_platform(vendor.documents(), args.platform, vendor.operator_names)
            if operators
            else None
        )
        bounds = select(bounds, args.selection, ops)
        chosen = {bound.id for bound in select([s.bound for s in skipped], args.selection, ops)}
    except (SelectionError, OperatorSelectionError) as exc:
        parser.error(str(exc))
    skipped = [item for item in skipped if item.bound.id in chosen]
    named = args.selection or operators
    others = select(unsearchable(catalogue), args.selection, ops) if named else []
    if not bounds and not skipped and not others:
        what = " ".join(
            filter(
                None, [args.selection and f"-k {clipped(args.selection)!r}", operators.describe()]
            )
        )
        parser.error(f"{what}: matches no documented limit")
    for other in others:  # what the selection names that no search can walk, and why
        emit(f"{other.id}\tnot searched: {other.reason}\n")
    if args.list:
        for bound in bounds:
            emit(f"{bound.id}\tedge {bound.edge}\t{bound.subject} in {bound.documented}\n")
        for item in skipped:
            emit(f"{item.bound.id}\tskipped: {item.reason}\n")
        return 0
    if not bounds and not skipped:
        return 0
    try:
        args.results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        parser.error(f"--results {args.results}: not a usable folder: {exc.strerror}")
    if args.hil_cache != "off" and (problem := refusal(Path(args.hil_cache))) is not None:
        parser.error(f"--hil-cache: {problem}")
    board = None
    if args.boards is not None:
        try:
            boards = platform_boards(args.boards, args.platform, vendor.runtimes)
        except BoardFileError as exc:
            parser.error(f"--boards: {exc}")
        if not boards:
            parser.error(f"--boards {args.boards}: no board file for platform {args.platform}")
        board = boards[0]
    return _run(args, vendor, catalogue, bounds, skipped, board)


def _run(
    args: argparse.Namespace,
    vendor: Vendor,
    catalogue: OperatorCatalogue,
    bounds: list[Bound],
    skipped: list[Skipped],
    board: Board | None,
) -> int:
    results: Path = args.results
    warn_weak_secrets()
    write_run_metadata(
        results,
        {
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "platform": args.platform,
            VENDOR_KEY: vendor.name,
            "backend": "sim" if board is None else "board",
            "versions": {**host_versions(), **vendor.versions()},
            "probe": {"selection": args.selection or "", "steps": args.steps},
        },
    )
    clock = time.monotonic()

    def finished(record: ProbeRecord) -> None:
        append_probe(results, record)
        emit(f"{record.id}: {record.observed()} after {len(record.steps)} steps\n")

    with vendor.target(board, args.hil_timeout, args.hil_cache) as target:
        stages = stages_for(vendor, [catalogue])
        executor = CaseExecutor(results, target, stages, default_sdk(vendor))
        answers = search_bounds(bounds, executor, args.steps, finished)
    for item in skipped:
        record = skipped_record(item)
        append_probe(results, record)
        answers.append(record)
    for answer in answers:  # a repro bundle for the first point that misbehaved
        case = answer.first_bad_case
        if case is not None:
            try:
                make_bundle(results, case, regenerate=Recipes(vendor))
            except BundleError as exc:
                emit(f"{answer.id}: no bundle: {exc}\n", err=True)
    emit(format_table(answers))
    steps = len({step.case for answer in answers for step in answer.steps})
    emit(
        f"{len(bounds)} bounds searched, {len(skipped)} skipped, {steps} step cases, "
        f"{time.monotonic() - clock:.0f} s\n"
    )
    return 0
