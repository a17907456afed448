"""One run read from one results directory, or from the directories of its shards.

A run split with ``--shard I/N`` (one CI job per shard) leaves one results directory per
shard, each with its own journal and ``run.json`` whose ``"shard"`` entry names its part and a
digest of the whole selection. ``read_run`` reads such directories as one run: their journals
merged, their run metadata as one, with ``"shard"`` listing the shards present. It refuses
(``JournalError``, which ``hil report``/``hil diff`` turn into exit status 2) directories that
are not shards of one run (no shard entry, another selection or count) or that overlap (the
same shard twice, a case in two of them).

One results directory holds one run: ``check_unused`` refuses a run into a directory another
run wrote (its ``run.json``), naming the way out, and ``append_run`` records a run a user
adds to one on purpose (``--append``) as a run of its own, in run.json's ``"appended"``; a
run of another vendor is never added.

A run has one vendor (run.json's ``"vendor"``, every record's ``vendor``): ``vendor_of`` reads
it, ``check_same_vendor`` refuses to compare runs of two vendors (a baseline, ``hil diff``). A
run written before vendors were recorded names none: its vendor is unknown, never guessed, and
it is compared only with another such run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.results.journal import (
    RUN_META_NAME,
    JournalError,
    read_records,
    read_run_metadata,
    write_run_metadata,
)
from harness.results.probes import ProbeRecord, read_probes
from harness.results.records import CaseRecord, record_key

SHARD_KEY = "shard"  # run.json: {"index", "count", "selection", "cases"}; merged: "indices"
APPENDED_KEY = "appended"  # run.json: the runs added with --append, each its own run.json
VENDOR_KEY = "vendor"  # run.json: the run's vendor (``Vendor.name``); absent: unknown


@dataclass(frozen=True)
class Part:
    """One results directory of a run: its records and run metadata."""

    directory: Path
    records: list[CaseRecord]
    meta: dict[str, Any]


@dataclass(frozen=True)
class Run:
    parts: list[Part]
    records: list[CaseRecord]  # every part's, in the order of the directories given
    meta: dict[str, Any]

    def probes(self) -> list[ProbeRecord]:
        """Every part's ``hil probe`` records (``probes.jsonl``)."""
        return [probe for part in self.parts for probe in read_probes(part.directory)]

    def vendor(self) -> str:
        """The run's vendor ("": unknown); JournalError when its parts or records name two."""
        where = ", ".join(str(part.directory) for part in self.parts)
        metas = [part.meta for part in self.parts]
        return vendor_of(metas, (record.vendor for record in self.records), where)


def read_run(directories: Sequence[str | os.PathLike[str]]) -> Run:
    """The run in ``directories``: one results directory, or the shards of one run."""
    if not directories:
        raise JournalError("no results directory given")
    if len(directories) == 1:
        path = Path(directories[0])
        part = Part(path, read_records(path), read_run_metadata(path))
        return Run([part], part.records, part.meta)
    resolved = [Path(d).resolve() for d in directories]
    twice = next((d for d in directories if resolved.count(Path(d).resolve()) > 1), None)
    if twice is not None:
        raise JournalError(f"{twice}: given twice")
    parts = [
        Part(Path(d), read_records(d, allow_empty=True), read_run_metadata(d)) for d in directories
    ]
    shards = [_shard(part) for part in parts]
    first = parts[0]
    for part, shard in zip(parts[1:], shards[1:], strict=True):
        if (shard["selection"], shard["count"]) != (shards[0]["selection"], shards[0]["count"]):
            raise JournalError(
                f"{part.directory} and {first.directory} are not shards of one run: shard "
                f"{shard['index']}/{shard['count']} of selection {shard['selection']} against "
                f"{shards[0]['index']}/{shards[0]['count']} of selection {shards[0]['selection']}"
            )
    _refuse_overlaps(parts, shards)
    records = [record for part in parts for record in part.records]
    if not records:
        raise JournalError(f"{', '.join(map(str, directories))}: no journal holds a record")
    count = shards[0]["count"]
    merged = {
        "count": count,
        "indices": sorted(shard["index"] for shard in shards),
        "selection": shards[0]["selection"],
        "cases": sum(shard["cases"] for shard in shards),
    }
    started = min(str(part.meta.get("started", "")) for part in parts)
    return Run(parts, records, {**first.meta, "started": started, SHARD_KEY: merged})


def _shard(part: Part) -> dict[str, Any]:
    shard = part.meta.get(SHARD_KEY)
    if not isinstance(shard, dict):
        raise JournalError(
            f"{part.directory}: not a shard (its run.json names no --shard): several results "
            "directories are read as one run only when each holds one shard of it"
        )
    return shard


def _refuse_overlaps(parts: list[Part], shards: list[dict[str, Any]]) -> None:
    seen: dict[int, Path] = {}
    for part, shard in zip(parts, shards, strict=True):
        other = seen.setdefault(shard["index"], part.directory)
        if other != part.directory:
            raise JournalError(
                f"{other} and {part.directory} overlap: both hold shard "
                f"{shard['index']}/{shard['count']}"
            )
    where: dict[str, Path] = {}
    for part in parts:
        for record in part.records:
            other = where.setdefault(record_key(record), part.directory)
            if other != part.directory:
                raise JournalError(
                    f"{other} and {part.directory} overlap: both hold case {record_key(record)}"
                )


def vendor_of(metas: Iterable[Mapping[str, Any]], vendors: Iterable[str], where: str) -> str:
    """The one vendor the run.json entries ``metas`` and the record vendors ``vendors`` of the
    run in ``where`` name; "" when none names one (a run written before vendors were
    recorded). JournalError naming ``where`` and the vendors when they name two."""
    named = {str(meta.get(VENDOR_KEY) or "") for meta in metas} | set(vendors)
    named.discard("")
    if len(named) > 1:
        raise JournalError(
            f"{where}: holds the runs of vendors {', '.join(sorted(named))}; a run has one vendor"
        )
    return named.pop() if named else ""


def check_same_vendor(old: str, old_where: str, new: str, new_where: str) -> None:
    """JournalError naming both runs and their vendors unless the run in ``old_where`` (of
    vendor ``old``) and the one in ``new_where`` have one vendor: runs of two vendors, or of a
    known vendor and an unknown one, are never compared."""
    if old == new:
        return
    raise JournalError(
        f"{_of_vendor(old_where, old)} and {_of_vendor(new_where, new)}: runs of two vendors "
        "are never compared (their cases, SDKs and verdicts mean different things)"
    )


def _of_vendor(where: str, vendor: str) -> str:
    if vendor:
        return f"{where} is a run of vendor {vendor}"
    return f"{where} names no vendor (written before runs recorded theirs)"


def check_unused(results: Path, new_folder: str, configuration: str | None = None) -> None:
    """JournalError when ``results`` holds another run's ``run.json``: one folder is one run.

    ``new_folder`` is how this command names another folder (``--results DIR``). A suite run
    gives its job's ``configuration`` (``harness.history.runinfo.configuration``): the same
    job again into its own folder (the same platform, SDK, backend, tier and shard) is no
    other run; a ``hil`` command's run.json names no job, so it always is one.
    """
    meta = read_run_metadata(results)
    if not meta:
        return
    if configuration is not None and meta.get("history", {}).get("configuration") == configuration:
        return
    raise JournalError(
        f"{results} holds another run ({described(meta)}; its {RUN_META_NAME}): one results "
        f"folder is one run. Give a new folder ({new_folder}), or --append to add this run to "
        "it as a run of its own"
    )


def described(meta: dict[str, Any]) -> str:
    """A run by what tells it apart: its command, platform and start."""
    parts = [
        str(meta.get("command") or "the suites"),
        f"platform {meta.get('platform', '?')}",
        f"started {meta.get('started', '?')}",
    ]
    return ", ".join(parts)


def folder_vendor(results: Path, found: Mapping[str, Any] | None = None) -> str:
    """The vendor of the runs in ``results`` (its run.json, ``found`` when read already): ""
    when none names one; JournalError when they name two (``vendor_of``)."""
    found = read_run_metadata(results) if found is None else found
    runs = [found, *found.get(APPENDED_KEY, [])]
    return vendor_of(runs, (), str(results / RUN_META_NAME))


def append_run(results: Path, meta: dict[str, Any]) -> None:
    """Record the run ``meta`` describes as a run of its own in ``results``: its run.json,
    written first when the folder has none, else added to the folder's ``"appended"``."""
    found = read_run_metadata(results)
    if not found:
        write_run_metadata(results, meta)
        return
    vendor = folder_vendor(results, found)
    if VENDOR_KEY in meta and meta[VENDOR_KEY] != vendor:
        raise JournalError(
            f"{_of_vendor(str(results), vendor)}, this run is vendor {meta[VENDOR_KEY]}'s: runs "
            "of two vendors never share a results folder. Give a new folder"
        )
    write_run_metadata(results, {**found, APPENDED_KEY: [*found.get(APPENDED_KEY, []), meta]})


def this_run(meta: dict[str, Any], appended: bool) -> dict[str, Any]:
    """Of a folder's run.json, the entries of the run that wrote last: with ``appended``
    (--append) the last appended run's, else the folder's own."""
    return dict((meta.get(APPENDED_KEY) or [meta])[-1]) if appended else meta


def update_run(results: Path, entries: dict[str, Any], appended: bool) -> None:
    """Add ``entries`` to the run.json entries of the run that wrote last (``this_run``)."""
    meta = read_run_metadata(results)
    runs = meta.get(APPENDED_KEY) if appended else None
    if runs:
        meta = {**meta, APPENDED_KEY: [*runs[:-1], {**runs[-1], **entries}]}
    else:
        meta = {**meta, **entries}
    write_run_metadata(results, meta)
