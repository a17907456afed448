"""``hil report``, ``hil diff`` and ``hil repro``: registered on the ``hil`` entry point.

Each handler takes the parsed arguments and returns the exit status: 0 success, 2 bad input
(message on stderr). ``hil diff`` returns 0 when the runs do not differ, 1 when they do (any
change, like diff(1)) and 2 on bad input; it prints a summary line first, then the table.
"""

from __future__ import annotations

import argparse
import json
import sys

from harness.cli.output import emit
from harness.report import write_reports
from harness.report.bundle import BundleError, make_bundle, tarball_path
from harness.report.diff import (
    DEFAULT_METRIC_THRESHOLD,
    diff_records,
    format_table,
    summarize,
)
from harness.results.journal import JournalError, read_records

BAD_INPUT = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the report, diff and repro subcommands; each sets ``handler`` (args -> exit code)."""
    report = subparsers.add_parser("report", help="write report.md and report.html")
    report.add_argument("results", help="results directory")
    report.set_defaults(handler=run_report)

    diff = subparsers.add_parser(
        "diff",
        help="cases that changed between two runs",
        description="Cases that changed between two runs: a summary line (verdict changes, "
        "backend-only changes), then one row per change.",
        epilog="exit status: 0 the runs do not differ, 1 they differ, 2 bad input",
    )
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
        old, new = read_records(args.old), read_records(args.new)
    except (JournalError, OSError) as exc:
        return _bad_input(exc)
    changes = diff_records(old, new, args.metric_threshold)
    summary = summarize(changes, old, new)
    if args.json:
        document = {
            "metric_threshold": args.metric_threshold,
            "summary": summary.to_json(),
            "changes": [change.to_json() for change in changes],
        }
        emit(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    else:
        emit(summary.line() + "\n" + (format_table(changes) if changes else ""))
    return 1 if changes else 0


def run_repro(args: argparse.Namespace) -> int:
    try:
        folder = make_bundle(args.results, args.case_id)
    except (JournalError, BundleError, OSError) as exc:
        return _bad_input(exc)
    print(folder)
    print(tarball_path(folder))
    return 0


def _bad_input(exc: Exception) -> int:
    print(f"hil: error: {exc}", file=sys.stderr)
    return BAD_INPUT
