"""What a case did, as releases and runs are compared: build outcome, placement and precision
per layer type, numeric result; and the words for a change between two records.

A verdict can stay while the behaviour changes (a Hardmax on the CPU, a violation, then
aborting the compiler, still a violation), so the SDK section and ``hil diff`` compare these
four observations, not only the verdict. Layer types are compared through the vendor's alias
table (``aliases``: compiled type -> the type it stands for, a release's rename) and per type, not
per layer, so a renamed layer or an operator tiled into several layers of its type is a
compiler internal (``internal_only``), not a change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from harness.judge.verdict import UNOBSERVED
from harness.results.records import CaseRecord

# How the judge words a rejected model in a check and the detail ("build failed: ...",
# "placement: build aborted (SIGSEGV): ..."); the match is the outcome.
_REJECTED = re.compile(
    r"\b(build|runtime) (failed|aborted(?: \((?:SIG[A-Z0-9]+|exit code -?\d+)\))?)"
)
RAN = "built and ran"
_RESULTS = {"wrong-result": "mismatch", "reference-disagreement": "references disagree"}


@dataclass(frozen=True)
class Behaviour:
    outcome: str  # RAN, "build failed", "build aborted (SIGSEGV)", "runtime failed", "infra-error"
    placement: Mapping[str, str]  # layer type -> targets of its layers ("NPU", "CPU, NPU")
    precision: Mapping[str, str]  # layer type -> data types of its layers
    result: str  # "match", "mismatch", "references disagree", "unobserved", "no outputs"


def behaviour(record: CaseRecord, aliases: Mapping[str, str] | None = None) -> Behaviour:
    """``record``'s observations, layer types through ``aliases`` (none: as compiled)."""
    aliases = aliases or {}
    return Behaviour(
        _outcome(record),
        _per_type(record, "target", aliases),
        _per_type(record, "dtype", aliases),
        _result(record),
    )


def _outcome(record: CaseRecord) -> str:
    if record.verdict == "infra-error":
        return "infra-error"
    for text in [*(str(check.get("observed", "")) for check in record.checks), record.detail]:
        found = _REJECTED.search(text)
        if found:
            return found.group(0)
    return RAN


def _per_type(record: CaseRecord, field: str, aliases: Mapping[str, str]) -> dict[str, str]:
    seen: dict[str, set[str]] = {}
    for layer in record.placement:
        if not layer.get("io"):
            op = str(layer.get("op", "?"))
            seen.setdefault(aliases.get(op, op), set()).add(str(layer.get(field, "?")))
    return {op: ", ".join(sorted(values)) for op, values in sorted(seen.items())}


def _result(record: CaseRecord) -> str:
    if _outcome(record) != RAN:
        return "no outputs"
    check = next((c for c in record.checks if c.get("prop") == "result"), None)
    if check is None:
        return "match" if record.metrics else "no outputs"
    status = str(check.get("status"))
    return "unobserved" if status == UNOBSERVED else _RESULTS.get(status, "match")


def internal_only(old: CaseRecord, new: CaseRecord, aliases: Mapping[str, str]) -> bool:
    """Whether the two records' layers differ only by the compiler's internals: names in the
    alias table, or how many layers of a type it made."""
    raw = behaviour(old) != behaviour(new) or _layers(old) != _layers(new)
    return raw and behaviour(old, aliases) == behaviour(new, aliases)


def _layers(record: CaseRecord) -> list[tuple[str, str, str]]:
    return [
        (str(x.get("op")), str(x.get("target")), str(x.get("dtype")))
        for x in record.placement
        if not x.get("io")
    ]


def differences(old: Behaviour, new: Behaviour) -> list[tuple[str, str, str]]:
    """(aspect, old, new) per observation that changed, e.g. ("build", "built and ran",
    "build aborted (SIGABRT)"), ("placement Hardmax", "CPU", "NPU"); placement, precision and
    result only when the outcome stayed (a build that failed has none)."""
    if old.outcome != new.outcome:
        return [("build", old.outcome, new.outcome)]
    found = [
        (f"placement {op}", old.placement.get(op, "none"), new.placement.get(op, "none"))
        for op in sorted(old.placement.keys() | new.placement.keys())
        if old.placement.get(op) != new.placement.get(op)
    ]
    found += [  # of the layer types on both sides: a new type's precision is in its placement
        (f"precision {op}", old.precision[op], new.precision[op])
        for op in sorted(old.precision.keys() & new.precision.keys())
        if old.precision[op] != new.precision[op]
    ]
    if old.result != new.result:
        found.append(("result", old.result, new.result))
    return found


def in_words(aspect: str, old: str, new: str, old_label: str, new_label: str) -> str:
    """ "build aborted (SIGABRT) on 2.3.0 (built and ran on 2.2.0)", "placement Hardmax: NPU
    on 2.5.0 (CPU on 2.3.2)"."""
    head = "" if aspect == "build" else f"{aspect}: "
    return f"{head}{new} on {new_label} ({old} on {old_label})"
