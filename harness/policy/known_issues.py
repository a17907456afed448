"""Known issues: SDK behaviour a team has reported and accepts for now (``--known-issues``).

A known-issues file (YAML, ``known-issues.schema.yaml``) lists entries, each with case-id
patterns, the verdict the SDK is known to give, a reference (vendor ticket or link), a note and
optionally the versions it applies to. The first entry that matches a record (id and versions)
is the record's: the record gets ``known`` = {"reference", "note", "expected", "status"}, the
status ``as-expected`` when the verdict is the expected one and ``changed`` otherwise (fixed,
or failing differently). An entry that matched no record of a run is stale, unless
the run's selection left out every case it names.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from harness.judge.verdict import ERROR_VERDICTS, VERDICTS
from harness.report.causes import causes
from harness.results.records import CaseRecord
from harness.results.schema import schema_problem
from harness.safe_yaml import DataLoader

SCHEMA_PATH = Path(__file__).with_name("known-issues.schema.yaml")
MAX_BYTES = 1024**2
AS_EXPECTED = "as-expected"
# An entry's verdict for a case known to be slower than its baseline (``--perf``): it covers
# the performance regression, never the case's correctness verdict.
PERF_REGRESSION = "perf-regression"
CHANGED = "changed"


class KnownIssuesError(ValueError):
    """A known-issues file that cannot be used; the message names the file, entry and field."""


def glob_match(glob: str, text: str) -> bool:
    """Whether ``text`` (a case id, a version) is matched by ``glob``: ``*`` any run of
    characters, ``?`` one, ``\\*``, ``\\?`` and ``\\\\`` those characters, everything else
    literal (case ids contain brackets, ``[b,c,1,w]:h=8193``, which fnmatch would read as
    character classes). No backtracking: the parts between stars are each matched at their
    leftmost place, so the time is at most len(glob) x len(text), whatever the glob."""
    head, *middle = _parts(glob)
    if not middle:
        return len(head.chars) == len(text) and head.fits(text, 0)
    *middle, tail = middle
    end = len(text) - len(tail.chars)
    if end < len(head.chars) or not head.fits(text, 0) or not tail.fits(text, end):
        return False
    start = len(head.chars)
    for part in middle:
        found = part.find(text, start, end)
        if found < 0:
            return False
        start = found + len(part.chars)
    return True


def escape_glob(text: str) -> str:
    """A glob that matches ``text`` only."""
    return "".join("\\" + char if char in "*?\\" else char for char in text)


@dataclass(frozen=True)
class _Part:
    """The glob between two stars: characters, any one at the positions of ``?``."""

    chars: str
    ones: frozenset[int]

    def fits(self, text: str, at: int) -> bool:
        if not self.ones:
            return text.startswith(self.chars, at)
        return len(text) - at >= len(self.chars) and all(
            i in self.ones or char == text[at + i] for i, char in enumerate(self.chars)
        )

    def find(self, text: str, start: int, end: int) -> int:
        """The first position in ``text[start:end]`` the part fits at, or -1."""
        if not self.ones:
            return text.find(self.chars, start, end)
        last = end - len(self.chars)
        return next((at for at in range(start, last + 1) if self.fits(text, at)), -1)


@cache
def _parts(glob: str) -> list[_Part]:
    parts: list[tuple[str, set[int]]] = [("", set())]
    chars = iter(glob)
    for char in chars:
        chars_so_far, ones = parts[-1]
        if char == "*":
            parts.append(("", set()))
            continue
        if char == "?":
            ones.add(len(chars_so_far))
        elif char == "\\":
            char = next(chars, "\\")  # a backslash at the end stands for itself
        parts[-1] = (chars_so_far + char, ones)
    return [_Part(chars, frozenset(ones)) for chars, ones in parts]


@dataclass(frozen=True)
class Entry:
    index: int  # position in the file, for messages
    cases: tuple[str, ...]
    verdict: str
    reference: str
    note: str
    versions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    file: str = ""  # the file of a folder of known-issues files it comes from

    def matches(self, record: CaseRecord) -> bool:
        return any(glob_match(glob, record.id) for glob in self.cases) and all(
            any(glob_match(v, record.versions.get(name, "")) for v in wanted)
            for name, wanted in self.versions
        )

    def names_any(self, ids: Iterable[str]) -> bool:
        """Whether one of the entry's case patterns matches one of ``ids``."""
        return any(glob_match(glob, case_id) for case_id in ids for glob in self.cases)

    def names_platform(self, platforms: Collection[str]) -> bool:
        """Whether one of the entry's case patterns is of one of ``platforms`` (a case id
        starts with its platform: an entry of a platform a run does not target says
        nothing about that run)."""
        return any(
            glob_match(glob.split("/", 1)[0], platform)
            for glob in self.cases
            for platform in platforms
        )

    def label(self) -> str:
        where = f"{self.file}: " if self.file else ""
        return f"{where}known_issues[{self.index}] ({self.reference}: {', '.join(self.cases)})"


@dataclass(frozen=True)
class KnownIssues:
    path: str
    entries: tuple[Entry, ...]

    def entry_for(self, record: CaseRecord) -> Entry | None:
        return next(
            (e for e in self.entries if e.verdict != PERF_REGRESSION and e.matches(record)), None
        )

    def slowdown_entry(self, record: CaseRecord) -> Entry | None:
        """The first ``perf-regression`` entry matching the record, if any."""
        return next(
            (e for e in self.entries if e.verdict == PERF_REGRESSION and e.matches(record)), None
        )

    def mark(self, record: CaseRecord) -> CaseRecord:
        """The record with its ``known`` field set from the first matching entry, if any."""
        entry = self.entry_for(record)
        if entry is None:
            return record
        status = AS_EXPECTED if record.verdict == entry.verdict else CHANGED
        known = {
            "reference": entry.reference,
            "note": entry.note,
            "status": status,
            "expected": entry.verdict,
        }
        return replace(record, known=known)

    def stale(self, records: list[CaseRecord], not_selected: Collection[str] = ()) -> list[Entry]:
        """Entries that matched none of ``records`` (a run's records) although they could
        have: a case they name ran, or they name no case that the selection left out
        (``not_selected``: the ids deselected by ``-k``, ``-m``, the tier or the shard)."""
        ran = {record.id for record in records}
        platforms = _platforms(ran, not_selected)
        return [
            entry
            for entry in self.entries
            if not any(map(entry.matches, records))
            and entry.names_platform(platforms)
            and (entry.names_any(ran) or not entry.names_any(not_selected))
        ]

    def not_selected(self, records: list[CaseRecord], not_selected: Collection[str]) -> int:
        """How many entries name only cases that the selection left out (not stale)."""
        ran = {record.id for record in records}
        return sum(
            not entry.names_any(ran) and entry.names_any(not_selected) for entry in self.entries
        )

    def elsewhere(self, records: list[CaseRecord], not_selected: Collection[str]) -> int:
        """How many entries are of platforms the run does not target (the vendor's files of
        the other platform groups): neither stale nor left out by the selection."""
        platforms = _platforms({record.id for record in records}, not_selected)
        return sum(not entry.names_platform(platforms) for entry in self.entries)


def _platforms(*ids: Collection[str]) -> set[str]:
    """The platforms of case ids (their first part)."""
    return {case_id.split("/", 1)[0] for group in ids for case_id in group}


@cache
def schema() -> dict[str, Any]:
    """The known-issues file's JSON schema, its verdicts from the verdict kinds table."""
    data: dict[str, Any] = yaml.safe_load(SCHEMA_PATH.read_text(encoding="utf-8"))
    verdict = data["properties"]["known_issues"]["items"]["properties"]["verdict"]
    verdict["enum"][:0] = [v for v in VERDICTS if v not in ERROR_VERDICTS]
    return data


def load_known_issues(path: str | os.PathLike[str]) -> KnownIssues:
    """Read and validate a known-issues file, or every ``*.yaml`` file of a folder (a vendor's
    one file per platform group); raises KnownIssuesError naming file and field."""
    if Path(path).is_dir():
        files = sorted(Path(path).glob("*.yaml"))
        if not files:
            raise KnownIssuesError(f"{path}: a folder with no known-issues (*.yaml) file")
        entries = tuple(
            replace(entry, file=file.name) for file in files for entry in _load_file(file).entries
        )
        return KnownIssues(str(path), entries)
    return _load_file(Path(path))


def _load_file(path: Path) -> KnownIssues:
    try:
        text = _read(Path(path))
    except OSError as exc:
        raise KnownIssuesError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise KnownIssuesError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        data = yaml.load(text, Loader=DataLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise KnownIssuesError(f"{path}: not valid YAML{where}: {exc.problem}") from None
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: a date such as 2024-13-45
        raise KnownIssuesError(f"{path}: not valid YAML: {str(exc)[:200]}") from None
    problem = schema_problem(data, schema())
    if problem:
        raise KnownIssuesError(f"{path}: {problem}")
    entries = tuple(
        Entry(
            index=index,
            cases=tuple(item["cases"]),
            verdict=item["verdict"],
            reference=item["reference"],
            note=item["note"],
            versions=tuple((name, tuple(v)) for name, v in item.get("versions", {}).items()),
        )
        for index, item in enumerate(data["known_issues"])
    )
    return KnownIssues(str(path), entries)


def _read(path: Path) -> str:
    """The text of ``path`` if it is a regular file of at most ``MAX_BYTES`` (a FIFO or a
    device would block or never end)."""
    if not stat.S_ISREG(path.stat().st_mode):
        raise KnownIssuesError(f"{path}: not a regular file")
    with path.open("rb") as handle:
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise KnownIssuesError(
            f"{path}: larger than a known-issues file may be ({MAX_BYTES} bytes)"
        )
    return data.decode("utf-8")


def starting_file(
    records: list[CaseRecord],
    failing: tuple[str, ...],
    sdk: set[str],
    aliases: Mapping[str, str] | None = None,
    readings: KnownIssues | None = None,
) -> str:
    """A known-issues file (YAML text) with one entry per cause of the failing ``records``
    (``harness.report.causes``: one vendor behaviour seen in many cases is one entry, its
    reading the note), applying to the versions of the ``sdk`` components they ran with.

    A cause whose example an entry of ``readings`` (the file being refreshed) records with the
    same verdict keeps that entry's reference and note: refreshing loses no one's reading."""
    found = causes((r for r in records if r.verdict in failing), aliases)
    entries = []
    for cause in found:
        members, first = cause.records, cause.example
        versions = {name: [first.versions[name]] for name in sorted(sdk) if name in first.versions}
        earlier = readings.entry_for(first) if readings else None
        if earlier is not None and earlier.verdict != cause.signature.status:
            earlier = None
        entry: dict[str, Any] = {
            "cases": sorted(escape_glob(member.id) for member in members),
            "verdict": cause.signature.status,
            "reference": earlier.reference
            if earlier
            else "unreported: replace with the vendor ticket or a link",
            "note": earlier.note if earlier else cause.signature.reading()[:300],
        }
        if versions:
            entry["versions"] = versions
        entries.append(entry)
    header = (
        "# Known issues (npu-hil --known-issues; docs/nightly.md), written by\n"
        "# `hil known-issues init` from a run's failures: give each entry its reference.\n"
    )
    body = yaml.safe_dump({"known_issues": entries}, sort_keys=False, allow_unicode=True, width=100)
    return header + body
