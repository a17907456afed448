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
import json
from datetime import date, datetime
from pathlib import Path

from harness.history import queries
from harness.history.importing import count_rows, write_folder
from harness.history.location import ENV, OFF, StoreError, configured
from harness.history.page import write_page
from harness.history.runinfo import utc_time
from harness.history.store import Store
from harness.results.journal import JournalError
from harness.terminal import emit

NOTHING = 1
BAD_INPUT = 2
IMPORT = "import"


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
        f"{configured()})",
    )
    history.add_argument("--flaky", action="store_true", help="list the flaky cases")
    history.add_argument(
        "--flips",
        type=int,
        default=queries.DEFAULT_FLIPS,
        help="--flaky: more verdict changes than this (%(default)s) ...",
    )
    history.add_argument(
        "--runs",
        type=int,
        default=queries.DEFAULT_RUNS,
        help="... over a configuration's last this many runs (%(default)s)",
    )
    history.add_argument("--since", metavar="DATE", help="only runs started on or after DATE")
    history.add_argument("--platform", help="only records of this platform")
    history.add_argument("--board", help="only records of this backend (board name, simulator)")
    history.add_argument("--sdk", help="only records of this SDK release")
    history.add_argument("--json", action="store_true", help="machine-readable output")
    history.add_argument("--html", metavar="DIR", help="write the history page into DIR")
    history.set_defaults(handler=run_history, parser=history)


def run_history(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.parser
    location = configured(args.hil_db)
    if location == OFF:
        parser.error(f"--hil-db / {ENV} is {OFF}: there is no store to read")
    if args.targets[:1] == [IMPORT]:
        if len(args.targets) < 2:
            parser.error("import: give the results folders to import")
        return _import(location, [Path(d) for d in args.targets[1:]])
    wanted = sum(1 for given in (bool(args.targets), args.flaky, bool(args.html)) if given)
    if wanted != 1 or len(args.targets) > 1:
        parser.error("give one PATTERN, or --flaky, or --html DIR")
    if args.flips < 0 or args.runs < 2:
        parser.error(f"--flips {args.flips} --runs {args.runs}: flips 0 or more, runs 2 or more")
    filters = queries.Filters(_since(parser, args.since), args.platform, args.board, args.sdk)
    try:
        with Store.open(location, create=False) as store:
            if args.html:
                return _page(store, Path(args.html), filters, args)
            if args.flaky:
                return _flaky(store, filters, args)
            return _cases(store, args.targets[0], filters, args.json)
    except StoreError as exc:
        return _bad_input(exc)


def _import(location: str, folders: list[Path]) -> int:
    """Each folder written, or its problem said; the good ones are imported either way."""
    status = 0
    try:
        with Store.open(location) as store:
            for folder in folders:
                try:
                    written = write_folder(store, folder)
                except (JournalError, OSError) as exc:
                    emit(f"hil: error: {exc}\n", err=True)
                    status = BAD_INPUT
                    continue
                state = "new run" if written.new_run else "run already stored"
                emit(
                    f"{folder}: {state} {written.run}: {written.added} records added, "
                    f"{written.updated} updated, {written.unchanged} already stored\n"
                )
            run_count, record_count = count_rows(store)
            emit(f"{store.name}: {run_count} runs, {record_count} records\n")
    except StoreError as exc:
        return _bad_input(exc)
    return status


def _cases(store: Store, pattern: str, filters: queries.Filters, as_json: bool) -> int:
    found = queries.case_history(store, pattern, filters)
    if as_json:
        emit(json.dumps({"cases": [item.to_json() for item in found]}, indent=2) + "\n")
    for item in [] if as_json else found:
        emit(_case_text(item))
    if not found:
        if not as_json:
            emit(f"hil history: no stored record of a case or limit matching {pattern!r}\n")
        return NOTHING
    return 0


def _case_text(item: queries.CaseHistory) -> str:
    lane = f" on SDK {item.lane}" if item.lane else ""
    lines = [f"{item.case} ({item.platform}{lane})"]
    for night in item.nights:
        lines.append(
            f"  {night.night}  {night.verdict:16} SDK {night.sdk or '-':8} {night.backend:12} "
            f"harness {night.revision}"
        )
    since = item.since
    runs = f"{item.runs_in_state} run{'s' if item.runs_in_state != 1 else ''}"
    if item.previous is None:
        lines.append(f"  {since.verdict} in every stored run ({runs}, since {since.night})")
    else:
        lines.append(
            f"  {since.verdict} since {since.night} ({runs}; {item.previous.verdict} on "
            f"{item.previous.night}), that night changed: "
            + (", ".join(f"{c.what} {c.before} -> {c.after}" for c in item.changes) or "nothing")
        )
    return "\n".join(lines) + "\n"


def _flaky(store: Store, filters: queries.Filters, args: argparse.Namespace) -> int:
    found = queries.flaky(store, filters, args.flips, args.runs)
    if args.json:
        items = [item.to_json() for item in found]
        emit(json.dumps({"flips": args.flips, "runs": args.runs, "flaky": items}, indent=2) + "\n")
        return 0
    if not found:
        emit(f"no case flipped more than {args.flips} times in its last {args.runs} runs\n")
    for item in found:
        emit(
            f"{item.case} ({item.platform}, SDK {item.sdk or '-'}, {item.backend}): "
            f"{item.text()}: {' '.join(item.verdicts)}\n"
        )
    return 0


def _page(store: Store, folder: Path, filters: queries.Filters, args: argparse.Namespace) -> int:
    try:
        page = write_page(store, folder, filters, args.flips, args.runs)
    except OSError as exc:
        return _bad_input(f"{folder}: {exc.strerror or exc}")
    emit(f"{page}\n")
    return 0


def _since(parser: argparse.ArgumentParser, value: str | None) -> str | None:
    """``--since`` as the UTC start time runs are compared with."""
    if value is None:
        return None
    try:
        if len(value) == 10:
            return date.fromisoformat(value).isoformat()
        return utc_time(datetime.fromisoformat(value).isoformat())
    except ValueError:
        parser.error(f"--since {value!r}: not a date (YYYY-MM-DD) or an ISO 8601 time")


def _bad_input(problem: object) -> int:
    emit(f"hil: error: {problem}\n", err=True)
    return BAD_INPUT
