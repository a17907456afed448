"""``hil report``, ``hil diff`` and ``hil repro``: registered on the ``hil`` entry point.

Each handler takes the parsed arguments and returns the exit status: 0 success, 2 bad input
(message on stderr); ``hil diff`` returns 1 when the runs differ, like diff(1).
"""

from __future__ import annotations

import argparse
import json
import sys

from harness.report import write_reports
from harness.report.bundle import BundleError, make_bundle, tarball_path
from harness.report.diff import DEFAULT_METRIC_THRESHOLD, diff_records, format_table
from harness.results.journal import JournalError, read_records

BAD_INPUT = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the report, diff and repro subcommands; each sets ``handler`` (args -> exit code)."""
    report = subparsers.add_parser("report", help="write report.md and report.html")
    report.add_argument("results", help="results directory")
    report.set_defaults(handler=run_report)

    diff = subparsers.add_parser("diff", help="cases that changed between two runs")
    diff.add_argument("old", help="results directory of the earlier run")
    diff.add_argument("new", help="results directory of the later run")
    diff.add_argument(
        "--metric-threshold",
        type=_threshold,
        default=DEFAULT_METRIC_THRESHOLD,
        help="relative change |new-old|/max(|old|,|new|) above which a metric counts as "
        "changed (default %(default)s)",
    )
    diff.add_argument("--json", action="store_true", help="machine-readable output")
    diff.set_defaults(handler=run_diff)

    repro = subparsers.add_parser("repro", help="make a repro bundle for one case")
    repro.add_argument("results", help="results directory")
    repro.add_argument("case_id", help="the case id, as in the journal")
    repro.add_argument(
        "--sdk", default=None, help="the SDK release, when the case ran on several in RESULTS"
    )
    repro.set_defaults(handler=run_repro)


def _threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


def run_report(args: argparse.Namespace) -> int:
    try:
        paths = write_reports(args.results)
    except (JournalError, OSError) as exc:
        return _bad_input(exc)
    for path in paths:
        print(path)
    return 0


def run_diff(args: argparse.Namespace) -> int:
    try:
        changes = diff_records(
            read_records(args.old), read_records(args.new), args.metric_threshold
        )
    except (JournalError, OSError) as exc:
        return _bad_input(exc)
    if args.json:
        document = {
            "metric_threshold": args.metric_threshold,
            "changes": [change.to_json() for change in changes],
        }
        print(json.dumps(document, indent=2, ensure_ascii=False))
    elif changes:
        print(format_table(changes), end="")
    return 1 if changes else 0


def run_repro(args: argparse.Namespace) -> int:
    try:
        folder = make_bundle(args.results, args.case_id, args.sdk)
    except (JournalError, BundleError, OSError) as exc:
        return _bad_input(exc)
    print(folder)
    print(tarball_path(folder))
    return 0


def _bad_input(exc: Exception) -> int:
    print(f"hil: error: {exc}", file=sys.stderr)
    return BAD_INPUT
