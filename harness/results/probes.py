"""Probe records: where a documented bound really is, one line per searched bound.

``hil probe`` appends one ``ProbeRecord`` per bound to ``RESULTS/probes.jsonl`` when its search
ends; its steps are ordinary cases in ``RESULTS/journal.jsonl`` (``ProbeStep.case``), so each
point has its artifacts and bundles like any case. Lines are checked against
``PROBE_SCHEMA`` when read; a line that does not fit is a ``JournalError`` naming the file,
the line and the field. A bound id appearing twice (a probe run again into the same folder):
the last record wins.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.results.journal import JournalError, parse_json
from harness.results.records import without_secrets
from harness.results.schema import PROBE_SCHEMA, schema_problem

PROBES_NAME = "probes.jsonl"


@dataclass
class ProbeStep:
    value: int
    case: str  # the step's case id in the journal
    behaved: bool | None  # like a documented-inside value; None: the step says nothing
    behaviour: str  # what was seen, e.g. "NPU, correct", "CPU fallback: MaxPool/..."
    verdict: str


@dataclass
class ProbeRecord:
    """One bound's search: documented against observed, what changed there, how it ended."""

    id: str  # <platform>/<limit id>/<dtype>/<upper|lower>
    platform: str
    op: str
    limit: str
    dtype: str
    side: str  # "upper" or "lower"
    subject: str  # what the value sets, e.g. "kernel_h"
    documented: str  # the documented interval or cap
    edge: int  # the last value documented inside
    stop: str  # one of harness.results.schema.PROBE_STOPS
    stop_detail: str = ""  # the cap's or the skip's reason
    budget: int = 0
    backend: str = ""
    last_good: int | None = None  # the farthest value that behaved like the documented inside
    first_bad: int | None = None  # the nearest value beyond it that did not
    before: str = ""  # the behaviour at last_good
    after: str = ""  # the behaviour at first_bad: what changed
    steps: list[ProbeStep] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def first_bad_case(self) -> str | None:
        return next((s.case for s in self.steps if s.value == self.first_bad), None)

    def observed(self) -> str:
        """The observed boundary in words, e.g. "12 | 13", "> 16384 (cap)", "none behaves"."""
        if self.stop == "skipped":
            return "not probed"
        if self.stop == "untestable":  # the stop's detail says why (refused like its control)
            return "untested"
        if self.last_good is not None and self.first_bad is not None:
            if abs(self.first_bad - self.last_good) == 1:
                return f"{self.last_good} | {self.first_bad}"
            return f"between {self.last_good} and {self.first_bad}"
        if self.last_good is not None:
            beyond = ">" if self.side == "upper" else "<"
            return f"{beyond}= {self.last_good} ({self.stop})"
        if self.first_bad is not None:
            return f"none behaves ({self.stop} at {self.first_bad})"
        return f"unknown ({self.stop})"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProbeRecord:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        known["steps"] = [ProbeStep(**step) for step in known.get("steps", [])]
        return cls(**known)


def append_probe(results_dir: str | os.PathLike[str], record: ProbeRecord) -> None:
    """Append one probe record (redacted) to ``probes.jsonl``."""
    path = Path(results_dir) / PROBES_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(without_secrets(record.to_json()), ensure_ascii=False) + "\n")


def read_probes(results_dir: str | os.PathLike[str]) -> list[ProbeRecord]:
    """Every probe record, last one per id, in order of first appearance; ``[]`` when the run
    probed nothing. Raises JournalError for a line that is not a probe record."""
    path = Path(results_dir) / PROBES_NAME
    if not path.exists():
        return []
    records: dict[str, ProbeRecord] = {}
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = parse_json(line)
        except JournalError as exc:
            raise JournalError(f"{path}:{number}: {exc}") from None
        problem = schema_problem(data, PROBE_SCHEMA)
        if problem:
            raise JournalError(f"{path}:{number}: {problem}")
        record = ProbeRecord.from_json(data)
        records[record.id] = record
    return list(records.values())
