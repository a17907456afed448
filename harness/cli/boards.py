"""``hil boards check [PATH ...]``: reach every board of the inventory (board files, folders
of them; default ``./boards``) and report what it really is; ``hil boards release-stale``:
free the labgrid places of npu-hil runs that were killed.

Exit status: 0 when every board is reachable, is the SoC its file says and runs versions that
work with the host's toolkit, 1 when any board is unreachable, mismatched or incompatible (its
versions are named with the fix), 2 on bad input (no or invalid board files, a key or
known_hosts file that is not there). A progress line per board goes to stderr, so ``--json``
output on stdout stays machine-readable.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.boards.discovery import check
from harness.boards.farm import release_stale
from harness.boards.inventory import Board, BoardFileError, check_files, load_inventory
from harness.boards.leases import lease_dir
from harness.terminal import columns, emit
from harness.timeouts import timeout_problem
from harness.vendors import all_runtimes, vendor_commands

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

DEFAULT_BOARDS = Path("boards")
# The table's columns; between driver and python, the versions each board's runtime shows
# (its discovery report's ``versions_shown``)
_FIRST = (("board", "board"), ("status", "status"), ("soc", "soc"), ("npu_driver", "driver"))
_LAST = (("python", "python"), ("disk_free_bytes", "disk free"))


def register(subparsers: Subparsers) -> None:
    """Add ``hil boards``: its ``check`` subcommand and every vendor's
    (``Vendor.commands["boards"]``)."""
    boards = subparsers.add_parser(
        "boards", help="boards over SSH or adb, and labgrid places", description=__doc__
    )
    commands = boards.add_subparsers(dest="boards_command", metavar="COMMAND", required=True)
    summary = "connect to each board and report SoC, NPU driver, runtime and Python versions"
    parser = commands.add_parser("check", help=summary, description=summary)
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="board files, or folders of them (default: ./boards; a folder's sub-folders, "
        "such as examples/, are skipped)",
    )
    parser.add_argument(
        "--boards",
        type=Path,
        action="append",
        metavar="PATH",
        help="a board file or folder, as the suites' --boards takes it (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--trust-new-host-keys",
        action="store_true",
        help="trust and save host keys not yet in a board's known_hosts (a changed key is "
        "still refused)",
    )
    parser.add_argument(
        "--timeout",
        type=_timeout,
        default=10.0,
        help="seconds to connect, and again to probe (default: 10, at most one day)",
    )
    parser.set_defaults(handler=_check, parser=parser)
    summary = (
        "release the labgrid places this host and user hold through npu-hil runs that are gone "
        "(a killed CI job): a clean-up step for CI"
    )
    stale = commands.add_parser("release-stale", help=summary, description=summary)
    stale.add_argument(
        "--coordinator",
        default=None,
        metavar="HOST:PORT",
        help="only the leases of this coordinator (default: every coordinator)",
    )
    stale.set_defaults(handler=_release_stale)
    for register_vendor_commands in vendor_commands("boards"):
        register_vendor_commands(commands)


def _timeout(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    problem = timeout_problem(seconds)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{seconds:g}: {problem}")
    return seconds


def _check(args: argparse.Namespace) -> int:
    boards: list[Board] = []
    for path in [*args.paths, *(args.boards or [])] or [DEFAULT_BOARDS]:
        try:
            found = load_inventory(path, all_runtimes())
        except BoardFileError as exc:
            args.parser.error(str(exc))
        if not found:
            args.parser.error(f"{path}: no board files (*.yaml) in this folder")
        boards += [board for board in found if board.source not in {b.source for b in boards}]
    try:
        for board in boards:
            check_files(board, new_known_hosts=args.trust_new_host_keys)
    except BoardFileError as exc:
        args.parser.error(str(exc))
    reports = []
    for board in boards:
        emit(f"checking {board.name} ({board.address}) ... ", err=True)
        report = check(board, trust_on_first_use=args.trust_new_host_keys, timeout=args.timeout)
        emit(f"{report['status']}\n", err=True)
        reports.append(report)
    emit((json.dumps(reports, indent=2) if args.json else _table(reports)) + "\n")
    return 0 if all(report["status"] == "ok" for report in reports) else 1


def _release_stale(args: argparse.Namespace) -> int:
    """Exit status 0 when no stale lease is left, 1 when a coordinator did not answer."""
    released, problems, elsewhere = release_stale(
        args.coordinator, everywhere=args.coordinator is None
    )
    for line in released + elsewhere:
        emit(f"{line}\n")
    for line in problems:
        emit(f"hil: {line}\n", err=True)
    if not released and not problems:
        emit(f"no stale lease of this host in {lease_dir()}\n")
    return 1 if problems else 0


def _table(reports: list[dict[str, Any]]) -> str:
    shown = dict(pair for report in reports for pair in report.get("versions_shown", []))
    table = [*_FIRST, *shown.items(), *_LAST]
    rows = [[title for _, title in table]]
    rows += [[_cell(report.get(key, "")) for key, _ in table] for report in reports]
    lines = columns(rows)
    hosts = {f"{k} {v}" for r in reports for k, v in r.get("host_versions", {}).items()}
    notes = [f"host: {', '.join(sorted(hosts))}"] if hosts else []
    notes += [f"{r['board']}: {p}" for r in reports for p in r["problems"]]
    notes += [f"{r['board']}: warning: {w}" for r in reports for w in r.get("version_warnings", [])]
    return "\n".join(lines + (["", *notes] if notes else []))


def _cell(value: object) -> str:
    if isinstance(value, int):
        return f"{value / 2**30:.1f} GiB"
    return str(value)
