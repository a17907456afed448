"""What ``hil history`` does once parsed (``harness.cli.history`` registers it and imports
this module, and with it the database layer, only when the command runs)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
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


def run(args: argparse.Namespace, platform_vendors: Mapping[str, str]) -> int:
    """``hil history``'s handler (``harness.cli.history``); the exit status.
    ``platform_vendors``: the installed vendors' platforms (``Store.open``)."""
    parser: argparse.ArgumentParser = args.parser
    location = configured(args.hil_db)
    if location == OFF:
        parser.error(f"--hil-db / {ENV} is {OFF}: there is no store to read")
    if args.targets[:1] == [IMPORT]:
        if len(args.targets) < 2:
            parser.error("import: give the results folders to import")
        return _import(location, [Path(d) for d in args.targets[1:]], platform_vendors)
    wanted = sum(1 for given in (bool(args.targets), args.flaky, bool(args.html)) if given)
    if wanted != 1 or len(args.targets) > 1:
        parser.error("give one PATTERN, or --flaky, or --html DIR")
    if args.flips < 0 or args.runs < 2:
        parser.error(f"--flips {args.flips} --runs {args.runs}: flips 0 or more, runs 2 or more")
    filters = queries.Filters(_since(parser, args.since), args.platform, args.board, args.sdk)
    try:
        with Store.open(location, create=False, platform_vendors=platform_vendors) as store:
            if args.html:
                return _page(store, Path(args.html), filters, args)
            if args.flaky:
                return _flaky(store, filters, args)
            return _cases(store, args.targets[0], filters, args.json)
    except StoreError as exc:
        return _bad_input(exc)


def _import(location: str, folders: list[Path], platform_vendors: Mapping[str, str]) -> int:
    """Each folder written, or its problem said; the good ones are imported either way."""
    status = 0
    try:
        with Store.open(location, platform_vendors=platform_vendors) as store:
            for folder in folders:
                try:
                    written = write_folder(store, folder)
                except (JournalError, OSError) as exc:
                    emit(f"hil: error: {exc}\n", err=True)
                    status = BAD_INPUT
                    continue
                except StoreError as exc:  # refused by the database: the next may be taken
                    emit(f"hil: error: {folder}: not imported: {exc}\n", err=True)
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
    lines = [f"{item.case} ({_vendor(item.vendor)}, {item.platform}{lane})"]
    for night in item.nights:
        timed = "" if night.median_s is None else f"  median {night.median_s * 1000:.3f} ms"
        lines.append(  # the run's start and id: two runs of one night told apart
            f"  {night.started}  run {night.run}  {night.verdict:16} SDK {night.sdk or '-':8} "
            f"{night.backend:12} harness {night.revision}{timed}"
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


def _vendor(name: str) -> str:
    return f"vendor {name}" if name else "vendor unknown"


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
            f"{item.case} ({_vendor(item.vendor)}, {item.platform}, SDK {item.sdk or '-'}, "
            f"{item.backend}): "
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
