"""The verdict vocabulary and how a case's checks make its verdict.

A case is judged property by property (``harness.judge.checks``); each check has a status,
one of ``VERDICTS`` or ``UNOBSERVED`` (the target that ran the case cannot see the property),
and the phase of its property. Unobserved checks never make a case pass or fail. The order of
judgement:

1. infrastructure trouble decides everything (``infra-error``);
2. a check of the placement phase (where and in what precision the layers under test ran,
   a vendor's width limit) that shows a rejected build, a failed run, a CPU fallback or a
   precision fallback (``FALLBACK`` statuses) decides: the most severe of those. The layers
   did not run as asked, so a numeric disagreement is only a note in the detail;
3. otherwise the most severe observed check in ``SEVERITY`` order: placement, the numeric
   result, then the layout properties (strides, NC1HWC2, ...) of model-I/O cases.

A check whose expectation rests on a limit the document contradicts itself on
(``Check.inconsistent``) and whose status depends on the document (``DOCUMENTED_STATUSES``)
counts as ``doc-inconsistent``: the status it would have had is kept (``Check.would_be``)
and its observation names it and the reason (``contradiction_note``); ``wrong-result`` and
``infra-error`` stand whatever the document says.

An operator case is judged against its inside control (``Case.control``: the same model at
the documented edge of the limit it probes, or the operator's typical model), so that a
refusal every build of the platform gets, or a layer the toolkit adds to every model, is not
read as the limit's doing. For an operator case (placement, result and, for int8, precision
checks) this gives:

| documented | observed                                           | verdict          |
|------------|----------------------------------------------------|------------------|
| any        | a user's model or inputs cannot be prepared (no    | bad-input        |
|            | reference runs it, over the size budget...)        |                  |
| any        | board, SSH, toolkit or timeout trouble             | infra-error      |
| any        | rejected, failed, on the CPU or in another         | untestable       |
|            | precision, and its control the same way (refused   |                  |
|            | like it, or on the CPU like it)                    |                  |
| supported  | rejected at build or failed at run time            | violation        |
| outside    | rejected at build or failed at run time            | limit-confirmed  |
| supported  | op under test on CPU, or int8 asked and another    | violation        |
|            | precision ran (any output; a mismatch is a note)   |                  |
| outside    | op under test on CPU, or int8 asked and another    | limit-confirmed  |
|            | precision ran (any output; a mismatch is a note)   |                  |
| outside    | a layer on a CPU that the platform's rules say     | unrunnable       |
|            | cannot run it (RK2118 runs no CPU operator at all) |                  |
| any        | on NPU as asked, output does not match reference   | wrong-result     |
| any        | on NPU as asked, the two host references disagree  | reference-       |
|            | with each other (not an SDK failure)               | disagreement     |
| any        | built, yet no layer of the operator under test     | rewritten-away   |
|            | (Div by a constant built as a Mul)                 |                  |
| supported  | on NPU as asked and correct                        | confirmed        |
| outside    | on NPU and correct, its control did not run as     | untestable       |
|            | asked (or it has no control)                       |                  |
| outside    | on NPU and correct, compiled layers other than its | limit-rewritten  |
|            | control's (the limit holds for the layer)          |                  |
| outside    | on NPU and correct, its control's compiled layers  | doc-drift        |
| any        | one of the above but confirmed, limit-confirmed,   | doc-inconsistent |
|            | limit-rewritten, doc-drift or violation, resting   |                  |
|            | on a limit the document contradicts                |                  |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import jsonschema
import yaml

KINDS_PATH = Path(__file__).with_name("verdicts.yaml")
_KINDS_SCHEMA = Path(__file__).with_name("verdicts.schema.yaml")


@dataclass(frozen=True)
class VerdictKind:
    """One verdict word and what it means to the judge, pytest and the reports (the fields
    of ``verdicts.yaml``, described there)."""

    word: str
    letter: str  # in the report's matrix cells
    severity: int  # 1 the most severe
    pytest: str  # pass, fail, skip or error
    arrays: str  # the narrowest --keep-arrays choice that keeps the case's arrays
    tint: str  # the report's cell background
    colour: str  # the history page's bars
    meaning: str


class VerdictKindsError(ValueError):
    """A verdict kinds table that cannot be used: names the file, the entry's field and the
    value."""


def load_kinds(path: Path = KINDS_PATH) -> dict[str, VerdictKind]:
    """The verdict kinds of ``path``, word -> kind in the file's order. The table is the
    package's own, not a user's file, so PyYAML's safe loader reads it (the reports may not
    import ``harness.safe_yaml``); a table its schema refuses, or with a word, letter or
    severity given twice, is a VerdictKindsError."""
    table = yaml.safe_load(path.read_text(encoding="utf-8"))
    schema = yaml.safe_load(_KINDS_SCHEMA.read_text(encoding="utf-8"))
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(table)
    )
    if error is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise VerdictKindsError(f"{path}: {where.lstrip('.') or 'the table'}: {error.message}")
    kinds: dict[str, VerdictKind] = {}
    for index, entry in enumerate(table["verdicts"]):
        kind = VerdictKind(**entry)
        for field in ("word", "letter", "severity"):
            value = getattr(kind, field)
            twin = next((k.word for k in kinds.values() if getattr(k, field) == value), None)
            if twin is not None:
                raise VerdictKindsError(
                    f"{path}: verdicts[{index}].{field}: {value!r} is the {field} of {twin!r} too"
                )
        kinds[kind.word] = kind
    return kinds


# Every verdict, in the reports' order (the table's)
KINDS = load_kinds()
VERDICTS = tuple(KINDS)
# Most severe first: a case's verdict is the first of these a deciding check has.
SEVERITY = tuple(sorted(VERDICTS, key=lambda word: KINDS[word].severity))
# The verdicts that fail a test (pytest's failure, a repro bundle)
FAILING_VERDICTS = tuple(word for word, kind in KINDS.items() if kind.pytest == "fail")
# The verdicts that are no test result (pytest's error): they say nothing about the SDK
ERROR_VERDICTS = tuple(word for word, kind in KINDS.items() if kind.pytest == "error")
# Verdicts of a case that exercised nothing of its limit: pytest reports them as skipped.
TESTED_NOTHING = tuple(word for word, kind in KINDS.items() if kind.pytest == "skip")
BAD_INPUT = "bad-input"
UNTESTABLE = "untestable"
REWRITTEN_AWAY = "rewritten-away"
CONFIRMED = "confirmed"
# --keep-arrays choice -> the verdicts whose case folders keep no arrays under it, by choice.
# "findings" drops them where the document holds; "failures" also for the document's own
# findings (doc-drift cases are the largest: outside a limit).
_KEEP_ARRAYS = ("failures", "findings", "all")  # each keeps the arrays of more verdicts
ARRAYS_DROPPED_FOR = {
    choice: tuple(
        word
        for word, kind in KINDS.items()
        if _KEEP_ARRAYS.index(kind.arrays) > _KEEP_ARRAYS.index(choice)
    )
    for choice in ("findings", "failures", "all")
}
UNOBSERVED = "unobserved"  # a check's status when the target cannot see the property

# Phases of judgement, in order (see the module docstring).
PLACEMENT_PHASE = "placement"
RESULT_PHASE = "result"
LAYOUT_PHASE = "layout"
# What a placement-phase check reports when the layers under test did not run as asked.
FALLBACK = ("violation", "unrunnable", "limit-confirmed")
# What a result check reports when the numbers are wrong or cannot be decided.
NUMERIC_FAILURES = ("wrong-result", "reference-disagreement")
# Statuses that say what the document is worth; the others stand whatever it says.
DOCUMENTED_STATUSES = ("confirmed", "limit-confirmed", "limit-rewritten", "doc-drift", "violation")


def contradiction_note(would_be: str, inconsistent: Iterable[str]) -> str:
    """What a doc-inconsistent check's observation ends with: the status it would have had and
    the contradictions (limit id: reason) it rests on."""
    return f" [would be {would_be}; the document contradicts {'; '.join(inconsistent)}]"


def own_status(check: Mapping[str, Any]) -> str:
    """A recorded check's own status (a ``CaseRecord.checks`` entry): the status it would have
    had when the document's contradiction made it ``doc-inconsistent``, else its status."""
    return str(check.get("would_be") or check["status"])


def own_observation(check: Mapping[str, Any]) -> str:
    """A recorded check's observation without its contradiction note."""
    observed, would_be = str(check["observed"]), check.get("would_be")
    if not would_be:
        return observed
    return observed.removesuffix(contradiction_note(would_be, check.get("inconsistent", ())))


@dataclass(frozen=True)
class Check:
    """One expectation of a case against what the target showed (a ``CaseRecord.checks`` entry)."""

    prop: str
    limits: tuple[str, ...]
    documented: str
    observed: str
    status: str  # a verdict, or UNOBSERVED
    phase: str  # PLACEMENT_PHASE, RESULT_PHASE or LAYOUT_PHASE
    inconsistent: tuple[str, ...]  # "<limit id>: <reason>" the document contradicts
    # the status a doc-inconsistent check would have had by the document's letter; "" otherwise
    would_be: str = ""

    def judged(self) -> Check:
        """This check as the verdict counts it: ``doc-inconsistent`` when its status rests on
        a limit the document contradicts."""
        if not self.inconsistent or self.status not in DOCUMENTED_STATUSES:
            return self
        observed = self.observed + contradiction_note(self.status, self.inconsistent)
        return replace(self, status="doc-inconsistent", observed=observed, would_be=self.status)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["limits"] = list(self.limits)
        data["inconsistent"] = list(self.inconsistent)
        return data


@dataclass(frozen=True)
class Verdict:
    verdict: str
    detail: str
    checks: tuple[dict[str, Any], ...] = ()  # Check.to_json() per expectation, as judged


def verdict_of(
    checks: list[Check], infra: str | None, backend: str, control_failed: str = ""
) -> Verdict:
    """The case's verdict by the order of judgement (module docstring); ``control_failed``:
    why the case's inside control did not run as asked, given when the case fell back the
    same way ("" otherwise, or when it has none). A case that fell back like its control
    says nothing of its limit: each of its fallback statuses becomes ``untestable``."""
    # the fallback rule reads the observers' own statuses, before they are reread
    fell_back = [c.phase == PLACEMENT_PHASE and c.status in FALLBACK for c in checks]
    if control_failed and any(fell_back):
        checks = [
            replace(c, status=UNTESTABLE, observed=f"{c.observed}; {control_failed}")
            if c.status in FALLBACK
            else c
            for c in checks
        ]
    judged = [check.judged() for check in checks]
    recorded = tuple(check.to_json() for check in judged)
    if infra:
        return Verdict("infra-error", infra, recorded)
    observed = [check for check in judged if check.status != UNOBSERVED]
    if not observed:
        raise ValueError(f"{backend} observed none of the case's properties")
    fallbacks = [check for is_fallback, check in zip(fell_back, judged, strict=True) if is_fallback]
    worst = min(fallbacks or observed, key=_severity)
    detail = f"{worst.prop}: {worst.observed}"
    if fallbacks:  # the numbers of layers that did not run as asked are a note, not the verdict
        detail += "".join(
            f" (not run as asked; {check.prop}: {check.observed})"
            for check in observed
            if check.phase == RESULT_PHASE
            and check.status in ("wrong-result", "reference-disagreement")
        )
    unobserved = [c.prop for c in checks if c.status == UNOBSERVED]
    if unobserved:
        detail += f" (not observable on {backend}: {', '.join(unobserved)})"
    return Verdict(worst.status, detail, recorded)


def _severity(check: Check) -> int:
    return SEVERITY.index(check.status)
