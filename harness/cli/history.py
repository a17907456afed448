"""``hil history``: the results store's answers, and ``hil history import DIR...``.

``hil history PATTERN``: each case that the case id, limit id or glob matches, night by night
(verdict, SDK, backend, harness revision), then since when it is in its current state and
what changed that night. ``--flaky``: the cases whose verdict flipped more than ``--flips``
times over their last ``--runs`` runs of one configuration. ``--html DIR``: the history page.
``import DIR...``: write results folders into the store (idempotent). Exit status: 0 answered
(or imported), 1 nothing matched, 2 bad input (message on stderr).
"""

from __future__ import annotations

import argparse

from harness.cli.names import add_vendor_option, command_vendor
from harness.history import FLAKY_FLIPS, FLAKY_RUNS
from harness.history.location import ENV, help_default


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    history = subparsers.add_parser(
        "history",
        help="every run's results in one store: a case night by night, flaky cases, the page",
        description="Read the results store that runs write at their end (docs/history.md). "
        "PATTERN: a case id, a limit id, or a glob of either (quote it). "
        "'hil history import DIR...' writes results folders into the store.",
        epilog="exit status: 0 answered, 1 nothing matched, 2 bad input",
    )
    history.add_argument(
        "targets", nargs="*", metavar="PATTERN | import DIR...", help="what to show or import"
    )
    history.add_argument(
        "--hil-db",
        default=None,
        metavar="URL|FILE",
        help=f"the store: a PostgreSQL or SQLite URL, or an SQLite file (env {ENV}; default "
        f"{help_default()})",
    )
    history.add_argument("--flaky", action="store_true", help="list the flaky cases")
    history.add_argument(
        "--flips",
        type=int,
        default=FLAKY_FLIPS,
        help="--flaky: more verdict changes than this (%(default)s) ...",
    )
    history.add_argument(
        "--runs",
        type=int,
        default=FLAKY_RUNS,
        help="... over a configuration's last this many runs (%(default)s)",
    )
    history.add_argument("--since", metavar="DATE", help="only runs started on or after DATE")
    add_vendor_option(history)
    history.add_argument("--platform", help="only records of this platform of the run's vendor")
    history.add_argument("--board", help="only records of this backend (board name, simulator)")
    history.add_argument("--sdk", help="only records of this SDK release")
    history.add_argument("--json", action="store_true", help="machine-readable output")
    history.add_argument("--html", metavar="DIR", help="write the history page into DIR")
    history.set_defaults(handler=run_history, parser=history)


def run_history(args: argparse.Namespace) -> int:
    try:  # --platform as the run's vendor spells it
        command_vendor(args)
    except LookupError as exc:
        args.parser.error(str(exc))
    # the database layer is imported when the command runs, not by every hil command
    from harness.history.command import run
    from harness.vendors import platform_vendors

    return run(args, platform_vendors())
