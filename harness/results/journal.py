"""The results journal: append-only JSONL, safe for concurrent pytest-xdist workers, resumable.

Results directory layout (the contract between execution, the plugin and the reports)::

    RESULTS/
      journal.jsonl          one CaseRecord.to_json() per line, appended when a case finishes
      probes.jsonl           ``hil probe`` only: one ProbeRecord per searched bound
                             (``harness.results.probes``), its steps being journal cases
      run.json               run metadata (started, platforms, "vendor", backend, versions,
                             the documented rows reports list: "unprobed", "documented_rows";
                             what the header and changes read: "tier", "baseline",
                             "known_issues", "left_out"); no host data
      cases/<case_slug(record_key)>/  per-case artifacts (CaseRecord.artifacts = "cases/<slug>",
                             one per case and SDK), emptied whenever the case runs again:
        model.onnx
        inputs/<index>_<name>.npy
        reference/<index>_<name>.npy       the host reference the comparison used
        reference-ort/<index>_<name>.npy   onnxruntime's outputs, where it ran (each host
                             reference's own folder: ``HostReference.folder``)
        observed/<index>_<name>.npy   absent when the backend produced no output
        the vendor's job recipe   what reproduces the job with the vendor's own tools; e.g.
                             toolkit.json, dataset.txt + dataset/ (int8), reproduce.py
        build.log
      report.md, report.html         written by ``hil report``
      bundles/<slug>/, bundles/<slug>.tar.gz   repro bundles (``hil repro``, failing cases)

Every line read must fit ``harness.results.schema.RECORD_SCHEMA`` and ``run.json`` must fit
``RUN_SCHEMA``. Reading tolerates a truncated last line (a run killed mid-write: skipped with a
warning) but refuses anything else that does not fit: ``JournalError`` names the file, the
line and the field, and ``hil report``/``diff``/``repro`` exit with status 2 and that message
(a journal is written by the harness alone, so a bad line means damage worth looking at, not
a record to drop quietly from a report). A record is identified by its case id and its SDK
(``record_key``): runs on several SDKs share one directory. A key may appear several times (a
resumed run re-ran it): the last record wins. ``--resume`` skips every case and SDK whose last
verdict is anything but ``infra-error`` or ``bad-input``, so a resumed run retries
infrastructure trouble and users' models refused before they ran (fixed since, perhaps), and
nothing else. Records and run.json are written with the run's secrets redacted
(``harness.text``).
"""

from __future__ import annotations

import fcntl
import gc
import json
import os
import re
import warnings
from collections.abc import Callable, Iterator
from operator import attrgetter
from pathlib import Path
from typing import Any, TypeVar

from harness.results.records import CaseRecord, record_key, without_secrets
from harness.results.schema import RECORD_SCHEMA, RUN_SCHEMA, schema_problem
from harness.text import UNDECODED

_T = TypeVar("_T")

JOURNAL_NAME = "journal.jsonl"
RUN_META_NAME = "run.json"
RETRIED_ON_RESUME = frozenset({"infra-error", "bad-input"})


class JournalError(ValueError):
    """A journal or run metadata file that cannot be used; the message names file and line."""


def _shown_in_json(match: re.Match[str]) -> str:
    return f"\\\\x{ord(match[0]) - 0xDC00:02x}"  # an escaped backslash, then xNN


class JournalWriteError(OSError):
    """The journal cannot take a record (a full disk, say); the message names the file. The
    records appended before stay readable."""


class Journal:
    """Appends records to ``RESULTS/journal.jsonl``; one instance per process is fine."""

    def __init__(self, results_dir: str | os.PathLike[str]) -> None:
        self.path = Path(results_dir) / JOURNAL_NAME

    def append(self, record: CaseRecord, sync: bool = True) -> CaseRecord:
        """Write one line atomically with respect to other appenders, and (``sync``) make it
        durable; the record as written, the run's secrets redacted (the journal is the one
        place that redacts a record). A batch appends without ``sync`` and calls ``sync`` once
        at its end: a process killed meanwhile loses nothing written, a machine that goes
        down loses at most that batch's lines (which ``--resume`` runs again).
        JournalWriteError when the line cannot be written."""
        data = without_secrets(record.to_json())
        text = json.dumps(data, ensure_ascii=False, allow_nan=True)
        # A file name's byte that is not UTF-8 (a lone surrogate) that reached a message is
        # kept as the text \xNN (``harness.text.shown_name``), as the names in ids are.
        line = (UNDECODED.sub(_shown_in_json, text) + "\n").encode("utf-8", "backslashreplace")
        try:
            self._append(line, sync)
        except OSError as exc:
            raise JournalWriteError(
                f"{self.path}: cannot append the record of {record.id}: {exc.strerror or exc}"
            ) from None
        return CaseRecord.from_json(data)

    def _append(self, line: bytes, sync: bool) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            _repair_tail(fd, self.path)
            rest = memoryview(line)
            while rest:  # after a short write, the next one says why (a full disk: ENOSPC);
                rest = rest[os.write(fd, rest) :]  # the next append drops the fragment
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)  # closing releases the lock

    def sync(self) -> None:
        """Make every line appended so far durable."""
        if not self.path.exists():
            return
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _repair_tail(fd: int, path: Path) -> None:
    """Before appending after a killed run: end a complete last line, drop a truncated one.

    Without this the next record would be glued onto the fragment and the journal would have a
    malformed line in the middle, which reading rightly refuses.
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    data = os.pread(fd, size, 0)
    start = data.rfind(b"\n") + 1
    try:
        _parse_line(data[start:])
    except JournalError:
        warnings.warn(
            f"{path}: dropping a truncated last line ({size - start} bytes) left by an "
            "interrupted run",
            stacklevel=3,
        )
        os.ftruncate(fd, start)
    else:
        os.write(fd, b"\n")


def read_records(
    results_dir: str | os.PathLike[str], allow_empty: bool = False
) -> list[CaseRecord]:
    """All records, last one per id, in order of first appearance; raises JournalError.

    ``allow_empty``: a missing or empty journal gives ``[]`` (a run with no cases yet) instead
    of an error (a report of nothing, or a mistyped directory).
    """
    path = Path(results_dir) / JOURNAL_NAME
    if allow_empty and not path.exists():
        return []
    return list(_latest(path, lambda record: record, allow_empty).values())


def read_verdicts(
    results_dir: str | os.PathLike[str],
) -> dict[str, tuple[str, dict[str, Any]]]:
    """``record_key`` -> (verdict, perf) of the last record of each key; raises JournalError.
    Holds one record at a time, so a baseline of 100,000 records costs its verdicts (and
    timings, where it has them) only."""
    return read_latest(results_dir, attrgetter("verdict", "perf"))


def read_latest(
    results_dir: str | os.PathLike[str], value: Callable[[CaseRecord], _T]
) -> dict[str, _T]:
    """``record_key`` -> ``value`` of the last record of each key, one record held at a time
    (as ``read_verdicts``); raises JournalError."""
    return _latest(Path(results_dir) / JOURNAL_NAME, value, allow_empty=False)


def _latest(path: Path, value: Callable[[CaseRecord], _T], allow_empty: bool) -> dict[str, _T]:
    """``value`` of the last record of each key, keys in order of first appearance."""
    # Records are trees, never cycles: the cyclic collector, which would rescan the growing
    # heap again and again while a large journal is read, has nothing to find until the end.
    collecting = gc.isenabled()
    gc.disable()
    try:
        found = {record_key(record): value(record) for record in _records(path)}
    finally:
        if collecting:
            gc.enable()
    if not found and not allow_empty:
        raise JournalError(f"{path}: journal holds no records")
    return found


def _records(path: Path) -> Iterator[CaseRecord]:
    """Every record in file order, read one line at a time; a truncated last line (no newline:
    a run killed mid-write) is skipped with a warning."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise JournalError(f"{path}: no journal (not a results directory?)") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = _parse_line(line)
            except JournalError as exc:
                if not line.endswith(b"\n"):  # only the last line can lack its newline
                    message = f"{path}:{number}: skipping truncated last line ({exc})"
                    warnings.warn(message, stacklevel=4)
                    continue
                raise JournalError(f"{path}:{number}: {exc}") from None
            yield record


def _parse_line(line: bytes) -> CaseRecord:
    data = parse_json(line)
    problem = schema_problem(data, RECORD_SCHEMA)
    if problem:
        raise JournalError(problem)
    return CaseRecord.from_json(data)


def parse_json(text: bytes) -> Any:
    """One JSON line of a results file; JournalError (without the file) when it is not one."""
    try:
        return json.loads(text.decode("utf-8"))
    # UnicodeDecodeError is a ValueError too; RecursionError: nesting deeper than Python's stack
    except (ValueError, RecursionError) as exc:
        raise JournalError(f"not valid JSON ({exc})") from None


def finished_ids(results_dir: str | os.PathLike[str]) -> set[str]:
    """Record keys (``record_key``: case and SDK) a resumed run may skip: every journaled case
    except infrastructure errors and bad-input records."""
    records = read_records(results_dir, allow_empty=True)
    return {record_key(record) for record in records if record.verdict not in RETRIED_ON_RESUME}


def write_run_metadata(results_dir: str | os.PathLike[str], meta: dict[str, Any]) -> Path:
    """Write ``run.json`` atomically (a crash leaves the old file or the new one, never half)."""
    path = Path(results_dir) / RUN_META_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{RUN_META_NAME}.{os.getpid()}.tmp")
    text = json.dumps(without_secrets(meta), indent=2, sort_keys=True) + "\n"
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a full disk, say: leave no fragment taking its space
        tmp.unlink(missing_ok=True)
        raise
    return path


def read_run_metadata(results_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """``run.json`` as a dict; ``{}`` when the run wrote none; raises JournalError."""
    path = Path(results_dir) / RUN_META_NAME
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        data = parse_json(text)
    except JournalError as exc:
        raise JournalError(f"{path}: {exc}") from None
    problem = schema_problem(data, RUN_SCHEMA)
    if problem:
        raise JournalError(f"{path}: {problem}")
    assert isinstance(data, dict)  # the schema's top-level type
    shard = data.get("shard")
    if shard is not None and shard["index"] > shard["count"]:
        raise JournalError(
            f"{path}: shard: index {shard['index']} is above the shard count {shard['count']}"
        )
    return data
