"""Writing a results folder into the store: at the end of a run, or ``hil history import``.

The journal is the source of truth: a run's row and records are read from its folder
(``run.json`` and the last record of each case and SDK in ``journal.jsonl``), never from
memory, so a store rebuilt from journals holds what the runs wrote. Writing is idempotent: a
run is identified by the run id in its ``run.json`` (``run_entry``; older folders by a digest
of their run.json's identifying fields), a record by its run, case and SDK; both carry their
vendor (a folder written before runs recorded theirs: its platform's, as the store's opener's
vendors say, ``legacy_vendor``).
Writing a folder again adds only what it did not hold yet and updates records a resumed run re-ran.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Table, func, select, update

from harness.history.runinfo import (
    HISTORY_KEY,
    configuration,
    legacy_vendor,
    stored_vendor,
    utc_time,
)
from harness.history.schema import indexed_text, records, runs
from harness.history.store import Store
from harness.history.stored_text import MAX_ID_BYTES, stored_bytes
from harness.results.journal import (
    JOURNAL_NAME,
    RUN_META_NAME,
    JournalError,
    read_records,
    read_run_metadata,
)
from harness.results.records import CaseRecord
from harness.results.runs import vendor_of
from harness.text import clipped, shown_name


@dataclass(frozen=True)
class Written:
    """What writing one results folder did."""

    run: str  # the run id
    new_run: bool
    added: int  # records the store did not hold
    updated: int  # records of the run that changed (a resumed run re-ran them)
    unchanged: int


def write_folder(
    store: Store,
    results: Path,
    host: str = "",
    source: str = "import",
    latest: list[CaseRecord] | None = None,
    meta: dict[str, Any] | None = None,
) -> Written:
    """Write the run in ``results`` (run.json and journal) into ``store``; raises
    JournalError for a folder that is not a run's, StoreError when the store fails.
    ``latest``: the journal's records, when the caller has just read them; ``meta``: the
    run's run.json entries, where they are not the folder's (a run appended to it)."""
    meta = read_run_metadata(results) if meta is None else meta
    latest = read_records(results) if latest is None else latest
    vendors = store.platform_vendors
    rows = [record_row(record, results, vendors) for record in latest]
    entry = run_entry(meta, results, host, source, {row["vendor"] for row in rows}, vendors)
    _check_ids(entry, runs, results / RUN_META_NAME)
    for row in rows:
        _check_ids(row, records, results / JOURNAL_NAME)
    with store.writing() as connection:
        run_id, new_run = _run_row(store, connection, entry)
        stored = {
            (row.case_id, row.sdk): row.started
            for row in connection.execute(
                select(records.c.case_id, records.c.sdk, records.c.started).where(
                    records.c.run_id == run_id
                )
            )
        }
        fresh = [row for row in rows if (row["case_id"], row["sdk"]) not in stored]
        changed = [
            row
            for row in rows
            if (row["case_id"], row["sdk"]) in stored
            and stored[row["case_id"], row["sdk"]] != row["started"]
        ]
        if fresh:  # another writer of the same folder may have added some meanwhile
            connection.execute(
                _upsert(store, records).on_conflict_do_nothing(
                    index_elements=["run_id", "case_id", "sdk"]
                ),
                [{**row, "run_id": run_id} for row in fresh],
            )
        for row in changed:
            connection.execute(
                update(records)
                .where(records.c.run_id == run_id)
                .where(records.c.case_id == row["case_id"])
                .where(records.c.sdk == row["sdk"])
                .values(**row)
            )
    unchanged = len(rows) - len(fresh) - len(changed)
    return Written(entry["uid"], new_run, len(fresh), len(changed), unchanged)


def _check_ids(row: dict[str, Any], table: Table, path: Path) -> None:
    """JournalError, naming ``path``, the case and the field, for an id longer than the store
    takes (``MAX_ID_BYTES``)."""
    for name in indexed_text(table):
        size = stored_bytes(row[name])
        if size > MAX_ID_BYTES:
            case = f"case {clipped(shown_name(row['case_id']), 60)}: " if "case_id" in row else ""
            raise JournalError(
                f"{path}: {case}field {name!r} is {size} bytes as stored: the store takes ids "
                f"of at most {MAX_ID_BYTES} bytes"
            )


def _run_row(store: Store, connection: Connection, entry: dict[str, Any]) -> tuple[int, bool]:
    """The run's row id, inserted unless another writer (or an earlier import) has it, and
    whether it was inserted (the inserted id returned: PostgreSQL's row count of an INSERT
    that returns rows is -1 whether or not it inserted one)."""
    upsert = _upsert(store, runs).values(**entry).on_conflict_do_nothing(index_elements=["uid"])
    inserted = connection.execute(upsert.returning(runs.c.id)).scalar()
    if inserted is not None:
        return int(inserted), True
    found = connection.execute(select(runs.c.id).where(runs.c.uid == entry["uid"])).scalar_one()
    if entry["source"] == "run":  # the run's own write: it knows its host
        unknown = update(runs).where(runs.c.id == found).where(runs.c.host == "")
        connection.execute(unknown.values(host=entry["host"]))
    return int(found), False


def run_entry(
    meta: dict[str, Any],
    results: Path,
    host: str,
    source: str,
    vendors: set[str],
    platform_vendors: Mapping[str, str],
) -> dict[str, Any]:
    """The ``runs`` row of a results folder's run.json, whose records' rows name ``vendors``:
    its vendor is run.json's, else (a run written before runs recorded theirs) its records'
    or its platform's (``legacy_vendor``); JournalError when they name two."""
    history = meta.get(HISTORY_KEY) or {}
    started = utc_time(str(meta.get("started", "")))
    shard = meta.get("shard") or {}
    shard_text = f"{shard['index']}/{shard['count']}" if shard else ""
    platform = str(meta.get("platform", ""))
    sdks = [str(sdk) for sdk in meta.get("sdks", [])]
    backend = str(meta.get("backend", ""))
    tier = str(meta.get("tier", ""))
    uid = str(history.get("run", "")) or _legacy_uid(started, platform, sdks, backend, tier, shard)
    vendor = vendor_of([meta], vendors, str(results / RUN_META_NAME)) or legacy_vendor(
        platform_vendors, platform
    )
    versions = meta.get("versions", {})
    return {
        "uid": uid,
        "started": started,
        "night": started[:10],
        "host": host,
        "revision": str(history.get("revision", "")) or str(versions.get("npu_hil", "")),
        # older folders: configured by the SDKs they ran on
        "configuration": str(history.get("configuration", ""))
        or configuration(platform, ",".join(sdks), backend, tier, shard_text),
        "vendor": vendor,
        "platform": platform,
        "backend": backend,
        "tier": tier,
        "shard": shard_text,
        "sdks": ",".join(sdks),
        "versions": _json(versions),
        "results": str(results.absolute()),
        "source": source,
    }


def record_row(
    record: CaseRecord, results: Path, platform_vendors: Mapping[str, str]
) -> dict[str, Any]:
    """A record's ``records`` row (without its run); its vendor ``stored_vendor``'s."""
    perf = record.perf if record.perf and "median_s" in record.perf else None
    return {
        "case_id": record.id,
        "sdk": record.sdk,
        "vendor": stored_vendor(record, platform_vendors),
        "platform": record.platform,
        "op": record.op,
        "dtype": record.dtype,
        "limit_id": record.limit,
        "documented": record.documented,
        "backend": record.backend,
        "verdict": record.verdict,
        "known": str((record.known or {}).get("status", "")),
        "started": record.started,
        "duration_s": float(record.duration_s),
        "definition": definition_digest(record),
        "versions": _json(record.versions),
        "median_s": float(perf["median_s"]) if perf else None,
        "perf": _json(perf) if perf else None,
        "detail": record.detail[:2000],
        "artifacts": record.artifacts,
    }


def definition_digest(record: CaseRecord) -> str:
    """What the case tests, as a digest: a change says the case itself changed that night
    (its parameters, inputs' seed, documented status, deciding limit, checks, tolerance)."""
    definition = {
        "op": record.op,
        "dtype": record.dtype,
        "limit": record.limit,
        "value": record.value,
        "documented": record.documented,
        "deciding_limit": record.deciding_limit,
        "params": record.params,
        "seed": record.seed,
        "source": record.source,
        "tolerance": record.tolerance,
        "checks": [[c["prop"], c["limits"], c["documented"]] for c in record.checks],
    }
    return _digest(definition, 16)


def count_rows(store: Store) -> tuple[int, int]:
    """(runs, records) the store holds."""
    with store.reading() as connection:
        run_count = connection.execute(select(func.count()).select_from(runs)).scalar_one()
        record_count = connection.execute(select(func.count()).select_from(records)).scalar_one()
    return int(run_count), int(record_count)


def _upsert(store: Store, table: Table) -> Any:
    """The store's dialect's INSERT, which knows ON CONFLICT (only that dialect is imported)."""
    dialect = importlib.import_module(f"sqlalchemy.dialects.{store.engine.dialect.name}")
    return dialect.insert(table)


def _legacy_uid(
    started: str, platform: str, sdks: list[str], backend: str, tier: str, shard: dict[str, Any]
) -> str:
    """A folder written before run ids: identified by what its run.json says of the run."""
    return "legacy-" + _digest([started, platform, sdks, backend, tier, shard], 32)


def _digest(value: Any, length: int) -> str:
    """A digest of ``value``'s JSON; "surrogatepass": a lone surrogate (a hand-made journal's)
    is digested too, and UTF-8 text digests as it always did."""
    key = _json(value).encode("utf-8", "surrogatepass")
    return hashlib.sha256(key).hexdigest()[:length]


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=True)
