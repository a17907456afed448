"""The "Real limits" section and boundary diffs, from the probe records of ``hil probe``.

Per searched bound: the documented bound, the observed boundary (the last value that behaved
like the documented inside and the first that did not), what changed there, the steps taken
and why the search stopped; bounds not searched are listed with the reason (``rows``, which
the report's templates write: the ``real_limits`` macros of ``templates/report.html`` and
``templates/report.md``). ``boundary_changes`` compares two runs (two SDKs, two boards)
bound by bound.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from harness.report.cells import natural_key
from harness.results.probes import ProbeRecord
from harness.text import printable

HEADER = ("bound", "dtype", "documented", "observed boundary", "what changed", "steps", "stop")


def rows(probes: list[ProbeRecord]) -> list[tuple[str, ...]]:
    """One row of ``HEADER`` per bound, in bound order."""
    found: list[tuple[str, ...]] = []
    for probe in sorted(probes, key=lambda p: natural_key(p.id)):
        bound = f"{probe.limit} ({probe.side})"
        documented = f"{probe.subject} in {probe.documented} (edge {probe.edge})"
        if probe.stop == "skipped":
            found.append((bound, probe.dtype, documented, "not probed", "", "0", probe.stop_detail))
            continue
        change = f"{probe.before} → {probe.after}" if probe.after else f"none ({probe.before})"
        stop = f"{probe.stop}: {probe.stop_detail}" if probe.stop_detail else probe.stop
        steps = f"{len(probe.steps)}/{probe.budget}"
        found.append((bound, probe.dtype, documented, probe.observed(), change, steps, stop))
    return found


def format_table(probes: list[ProbeRecord]) -> str:
    """The section as tab-separated lines for a terminal."""
    return "".join("\t".join(map(printable, row)) + "\n" for row in [HEADER, *rows(probes)])


@dataclass(frozen=True)
class BoundaryChange:
    """A bound whose observed boundary or change differs between two runs."""

    bound: str
    old: str  # the observed boundary and what changed there, or "absent"
    new: str
    old_versions: str
    new_versions: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _summary(probe: ProbeRecord | None) -> str:
    if probe is None:
        return "absent"
    return f"{probe.observed()}: {probe.after}" if probe.after else probe.observed()


def _versions(probe: ProbeRecord | None) -> str:
    if probe is None:
        return ""
    return ", ".join(f"{k}={v}" for k, v in sorted(probe.versions.items()) if "toolkit" in k)


def boundary_changes(old: list[ProbeRecord], new: list[ProbeRecord]) -> list[BoundaryChange]:
    """Bounds whose observed boundary (or the behaviour past it) moved, appeared or vanished,
    ordered by bound id; the SDK versions of each side alongside."""
    before = {p.id: p for p in old}
    after = {p.id: p for p in new}
    changes = []
    for bound in sorted(before.keys() | after.keys(), key=natural_key):
        a, b = before.get(bound), after.get(bound)
        if _summary(a) != _summary(b):
            changes.append(
                BoundaryChange(bound, _summary(a), _summary(b), _versions(a), _versions(b))
            )
    return changes


def format_changes(changes: list[BoundaryChange]) -> str:
    lines = ["bound\told\tnew\told SDK\tnew SDK"]
    lines += [
        "\t".join(map(printable, (c.bound, c.old, c.new, c.old_versions, c.new_versions)))
        for c in changes
    ]
    return "\n".join(lines) + "\n"
