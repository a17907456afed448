"""Known issues: SDK behaviour a team has reported and accepts for now (``--known-issues``).

A known-issues file (YAML, ``known-issues.schema.yaml``) lists entries, each with case-id
patterns, the verdict the SDK is known to give, a reference (vendor ticket or link), a note and
optionally the versions it applies to. The first entry that matches a record (id and versions)
is the record's: the record gets ``known`` = {"reference", "note", "expected", "status"}, the
status ``as-expected`` when the verdict is the expected one and ``changed`` otherwise (fixed,
or failing differently). An entry that matched no record of a run is stale.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from harness.results.records import CaseRecord
from harness.results.schema import schema_problem

SCHEMA_PATH = Path(__file__).with_name("known-issues.schema.yaml")
AS_EXPECTED = "as-expected"
# An entry's verdict for a case known to be slower than its baseline (``--perf``): it covers
# the performance regression, never the case's correctness verdict.
PERF_REGRESSION = "perf-regression"
CHANGED = "changed"


class KnownIssuesError(ValueError):
    """A known-issues file that cannot be used; the message names the file, entry and field."""


@cache
def case_pattern(glob: str) -> re.Pattern[str]:
    """``*`` and ``?`` are wildcards, everything else literal: case ids contain brackets
    (``[b,c,1,w]:h=8193``), which fnmatch would read as character classes."""
    parts = (
        ".*" if part == "*" else "." if part == "?" else re.escape(part)
        for part in re.split(r"([*?])", glob)
    )
    return re.compile("".join(parts), re.DOTALL)


@dataclass(frozen=True)
class Entry:
    index: int  # position in the file, for messages
    cases: tuple[str, ...]
    verdict: str
    reference: str
    note: str
    versions: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def matches(self, record: CaseRecord) -> bool:
        return any(case_pattern(glob).fullmatch(record.id) for glob in self.cases) and all(
            any(case_pattern(v).fullmatch(record.versions.get(name, "")) for v in wanted)
            for name, wanted in self.versions
        )

    def label(self) -> str:
        return f"known_issues[{self.index}] ({self.reference}: {', '.join(self.cases)})"


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

    def stale(self, records: list[CaseRecord]) -> list[Entry]:
        """Entries that matched none of ``records`` (a run's records)."""
        return [entry for entry in self.entries if not any(map(entry.matches, records))]


@cache
def _schema() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(SCHEMA_PATH.read_text(encoding="utf-8"))
    return data


def load_known_issues(path: str | os.PathLike[str]) -> KnownIssues:
    """Read and validate a known-issues file; raises KnownIssuesError naming file and field."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise KnownIssuesError(f"{path}: cannot read: {exc.strerror}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise KnownIssuesError(f"{path}: not valid YAML: {exc}") from None
    problem = schema_problem(data, _schema())
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


def starting_file(records: list[CaseRecord], failing: tuple[str, ...], sdk: set[str]) -> str:
    """A known-issues file (YAML text) with one entry per failing verdict and limit of
    ``records``, applying to the versions of the ``sdk`` components the records ran with."""
    groups: dict[tuple[str, str], list[CaseRecord]] = {}
    for record in records:
        if record.verdict in failing:
            groups.setdefault((record.verdict, record.limit), []).append(record)
    entries = []
    for (verdict, _limit), members in groups.items():
        first = members[0]
        versions = {name: [first.versions[name]] for name in sorted(sdk) if name in first.versions}
        entry: dict[str, Any] = {
            "cases": [member.id for member in members],
            "verdict": verdict,
            "reference": "unreported: replace with the vendor ticket or a link",
            "note": first.detail.splitlines()[0][:200] if first.detail else "",
        }
        if versions:
            entry["versions"] = versions
        entries.append(entry)
    header = (
        '# Known issues (npu-hil --known-issues; README, "Nightly"), written by\n'
        "# `hil known-issues init` from a run's failures: give each entry its reference.\n"
    )
    body = yaml.safe_dump({"known_issues": entries}, sort_keys=False, allow_unicode=True, width=100)
    return header + body
