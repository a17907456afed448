"""``hil known-issues init RESULTS``: a starting known-issues file from a run's failures.

One entry per failing verdict and limit, listing its cases, applying to the SDK versions the
run used (the vendor's own tool versions, ``Vendor.versions``); each entry's reference is a
placeholder to replace with the vendor ticket. Exit 0 written, 2 bad input (message on
stderr); an existing output file is not overwritten without ``--force``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.names import add_vendor_option
from harness.judge.verdict import FAILING_VERDICTS
from harness.policy.known_issues import KnownIssuesError, load_known_issues, starting_file
from harness.results.journal import JournalError, read_records
from harness.terminal import emit
from harness.vendors import layer_aliases, run_vendor

BAD_INPUT = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    known = subparsers.add_parser("known-issues", help="known-issues files (--known-issues)")
    actions = known.add_subparsers(dest="action", metavar="ACTION", required=True)
    init = actions.add_parser("init", help="write a known-issues file from a run's failures")
    init.add_argument("results", help="results directory of the run")
    init.add_argument(
        "-o", "--output", default="-", help="file to write (default: standard output)"
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.add_argument(
        "--platform",
        help="only the failures of these platforms (comma-separated; default: every one), "
        "e.g. one platform group's file of the vendor's known issues",
    )
    init.add_argument(
        "--readings",
        metavar="KNOWN_ISSUES",
        help="a known-issues file or folder being refreshed: a cause one of its entries "
        "records with the same verdict keeps that entry's reference and note",
    )
    add_vendor_option(init)
    init.set_defaults(handler=run_init)


def run_init(args: argparse.Namespace) -> int:
    try:
        records = read_records(args.results)
    except (JournalError, OSError) as exc:
        return _bad_input(exc)
    if args.platform:
        wanted = {name.strip().lower() for name in args.platform.split(",") if name.strip()}
        records = [record for record in records if record.platform in wanted]
        if not records:
            return _bad_input(f"{args.results}: no record of platform {args.platform}")
    try:  # the run's vendor's tool versions, which its entries name
        sdk = set(run_vendor(args.vendor).versions())
    except LookupError as exc:
        return _bad_input(exc)
    try:
        readings = load_known_issues(args.readings) if args.readings else None
    except KnownIssuesError as exc:
        return _bad_input(exc)
    text = starting_file(records, FAILING_VERDICTS, sdk, layer_aliases(), readings)
    if args.output == "-":
        emit(text)
        return 0
    output = Path(args.output)
    if output.exists() and not args.force:
        return _bad_input(f"{output}: exists (--force overwrites it)")
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        return _bad_input(f"{output}: {exc.strerror}")
    emit(f"{output}\n")
    return 0


def _bad_input(problem: object) -> int:
    emit(f"hil: error: {problem}\n", err=True)
    return BAD_INPUT
