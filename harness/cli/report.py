"""``hil report``, ``hil diff`` and ``hil repro``: registered on the ``hil`` entry point.

Each handler takes the parsed arguments and returns the exit status: 0 success, 2 bad input
(message on stderr). ``hil diff`` returns 0 when the runs do not differ, 1 when they do (any
change, like diff(1)) and 2 on bad input; it prints a summary line first, then the table, then
the failing causes that appeared and went, if any (``harness.report.causes``: by
observation, not by case).
Both read a run split with ``--shard`` from its shards' directories as one run
(``harness.results.runs``). ``hil diff`` refuses two runs of two vendors, or one naming its
vendor and one written before runs recorded theirs (``check_same_vendor``): bad input.
"""

from __future__ import annotations

import argparse
import json
import math

from harness.cli.names import add_vendor_option
from harness.names import sdk_version
from harness.report import write_reports
from harness.report.bundle import BundleError, make_bundle, tarball_path
from harness.report.causes import cause_changes
from harness.report.diff import (
    DEFAULT_METRIC_THRESHOLD,
    diff_records,
    format_table,
    summarize,
)
from harness.report.real_limits import boundary_changes, format_changes
from harness.report.sdk_matrix import sdks_of
from harness.report.untested import untested_changes
from harness.results.journal import JournalError
from harness.results.latency import Threshold, add_threshold_options
from harness.results.records import CaseRecord
from harness.results.runs import check_same_vendor, read_run
from harness.terminal import emit
from harness.text import printable
from harness.vendors import Recipes, layer_aliases, run_vendor

BAD_INPUT = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the report, diff and repro subcommands; each sets ``handler`` (args -> exit code)."""
    report = subparsers.add_parser("report", help="write report.md and report.html")
    report.add_argument(
        "results",
        nargs="+",
        help="results directory, or the directories of one run's shards (--shard I/N)",
    )
    report.add_argument(
        "--output",
        help="folder for the report (default: the results directory; required with several)",
    )
    add_vendor_option(report)
    report.set_defaults(handler=run_report)

    diff = subparsers.add_parser(
        "diff",
        help="cases that changed between two runs, or two SDKs of one run",
        description="Cases that changed between two runs, or between two SDK releases of one "
        "run (hil diff RESULTS --old-sdk 2.3.2 --new-sdk 2.5.0): a summary line (verdict "
        "changes, backend-only changes), one row per change, then the failing causes new and "
        "gone. A directory holding several "
        "SDKs needs --old-sdk/--new-sdk to say which one to compare.",
        epilog="exit status: 0 the runs do not differ, 1 they differ, 2 bad input",
    )
    diff.add_argument(
        "old", help="results directory of the earlier run (a sharded run's: DIR,DIR,...)"
    )
    diff.add_argument(
        "new", nargs="?", help="results directory of the later run (default: OLD; DIR,DIR,...)"
    )
    diff.add_argument(
        "--old-sdk", type=sdk_version, help="compare only OLD's records of this SDK release"
    )
    diff.add_argument(
        "--new-sdk", type=sdk_version, help="compare only NEW's records of this SDK release"
    )
    diff.add_argument(
        "--metric-threshold",
        type=_threshold,
        default=DEFAULT_METRIC_THRESHOLD,
        help="relative change |new-old|/max(|old|,|new|) above which a metric counts as "
        "changed (default %(default)s)",
    )
    add_threshold_options(diff.add_argument)
    diff.add_argument("--json", action="store_true", help="machine-readable output")
    diff.set_defaults(handler=run_diff)

    repro = subparsers.add_parser("repro", help="make a repro bundle for one case")
    repro.add_argument("results", help="results directory")
    repro.add_argument("case_id", help="the case id, as in the journal")
    repro.add_argument(
        "--sdk",
        type=sdk_version,
        default=None,
        help="the SDK release, when the case ran on several in RESULTS",
    )
    add_vendor_option(repro)
    repro.set_defaults(handler=run_repro)


def _threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


def run_report(args: argparse.Namespace) -> int:
    try:  # the run's vendor's layer renames
        aliases = dict(run_vendor(args.vendor).layer_aliases)
        paths = write_reports(args.results, aliases, output=args.output)
    except (LookupError, JournalError, OSError, ValueError) as exc:
        return _bad_input(args, exc)
    emit("".join(f"{path}\n" for path in paths))
    return 0


def run_diff(args: argparse.Namespace) -> int:
    if args.new is None and (args.old_sdk is None or args.new_sdk is None):
        return _bad_input(args, ValueError("one results directory: give --old-sdk and --new-sdk"))
    try:  # one directory (no ``new``): read once, compared SDK against SDK
        old_run = read_run(args.old.split(","))
        new_run = old_run if args.new is None else read_run(args.new.split(","))
        check_same_vendor(old_run.vendor(), args.old, new_run.vendor(), args.new or args.old)
        old_records, old_probes = old_run.records, old_run.probes()
        new_records, new_probes = new_run.records, new_run.probes()
        old = _one_sdk(old_records, args.old, args.old_sdk, "--old-sdk")
        new = _one_sdk(new_records, args.new or args.old, args.new_sdk, "--new-sdk")
        moved = boundary_changes(old_probes, new_probes)
        latency = Threshold(args.perf_k, args.perf_percent)
    except (JournalError, OSError, ValueError) as exc:
        return _bad_input(args, exc)
    aliases = layer_aliases()
    changes = diff_records(old, new, args.metric_threshold, aliases=aliases, latency=latency)
    summary = summarize(changes, old, new, aliases=aliases)
    by_cause = cause_changes(old, new, aliases)
    untested = untested_changes(old, new)
    if args.json:
        document = {
            "metric_threshold": args.metric_threshold,
            "summary": summary.to_json(),
            "causes": by_cause.to_json(),
            "changes": [change.to_json() for change in changes],
            "boundaries": [change.to_json() for change in moved],
            "untested": untested,
        }
        emit(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    else:
        emit(summary.line() + "\n" + (format_table(changes) if changes else ""))
        if by_cause.new or by_cause.gone:
            emit(f"{printable(by_cause.line())}\n")
        for key, title in (("now", "Limits no case tested"), ("again", "Limits tested again")):
            if untested[key]:
                lines = "".join(f"  {printable(item)}\n" for item in untested[key])
                emit(f"{title} ({len(untested[key])}):\n{lines}")
        if moved:  # ``hil probe`` runs: the observed boundaries that moved
            emit("Real limits that moved:\n" + format_changes(moved))
    return 1 if changes or moved else 0


def _one_sdk(
    records: list[CaseRecord], results: str, sdk: str | None, option: str
) -> list[CaseRecord]:
    """The records (of directory ``results``) of one SDK: ``sdk``, or the only one there is."""
    found = sdks_of(records)
    if sdk is None:
        if len(found) > 1:
            raise ValueError(f"{results} holds SDKs {', '.join(found)}: choose one with {option}")
        return records
    if sdk not in found:
        raise ValueError(f"{option} {sdk}: {results} holds SDKs {', '.join(found) or 'none'}")
    return [record for record in records if record.sdk == sdk]


def run_repro(args: argparse.Namespace) -> int:
    try:
        recipes = Recipes(run_vendor(args.vendor))
        folder = make_bundle(args.results, args.case_id, args.sdk, recipes)
    except (LookupError, JournalError, BundleError, OSError) as exc:
        return _bad_input(args, exc)
    emit(f"{folder}\n{tarball_path(folder)}\n")
    return 0


def _bad_input(args: argparse.Namespace, exc: Exception) -> int:
    """Bad input named with its command (``hil diff: error: ...``): exit status 2."""
    emit(f"hil {args.command}: error: {exc}\n", err=True)
    return BAD_INPUT
