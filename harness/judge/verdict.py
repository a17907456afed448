"""The verdict vocabulary and how a case's checks make its verdict.

A case is judged property by property (``harness.judge.checks``); each check has a status,
one of ``VERDICTS`` or ``UNOBSERVED`` (the target that ran the case cannot see the property).
The case's verdict is the most severe observed status in ``SEVERITY`` order; unobserved checks
never make a case pass or fail. For an operator case (a placement and a result check) this
gives the operator verdict table:

| documented | observed                                   | verdict         |
|------------|--------------------------------------------|-----------------|
| any        | board, SSH, toolkit or timeout trouble     | infra-error     |
| supported  | rejected at build or failed at run time    | violation       |
| outside    | rejected at build or failed at run time    | limit-confirmed |
| any        | output does not match the reference        | wrong-result    |
| any        | host references disagree with each other   | reference-disagreement |
| supported  | op under test on CPU                       | violation       |
| outside    | op under test on CPU                       | limit-confirmed |
| supported  | on NPU and correct                         | confirmed       |
| outside    | on NPU and correct                         | doc-drift       |
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

VERDICTS = (
    "confirmed",  # documented supported; on the NPU and correct
    "limit-confirmed",  # documented outside a limit; CPU fallback or rejected at build
    "doc-drift",  # documented outside a limit; still on the NPU and correct
    "violation",  # documented supported; CPU fallback, build error or runtime error
    "wrong-result",  # output does not match the reference
    "reference-disagreement",  # the host references disagree: the result is undecided
    "infra-error",  # board, SSH, toolkit or timeout trouble: never a test failure
)
FAILING_VERDICTS = ("violation", "wrong-result")
# Most severe first: a case's verdict is the first of these any observed check has.
SEVERITY = (
    "infra-error",
    "wrong-result",
    "reference-disagreement",
    "violation",
    "doc-drift",
    "limit-confirmed",
    "confirmed",
)
UNOBSERVED = "unobserved"  # a check's status when the target cannot see the property


@dataclass(frozen=True)
class Check:
    """One expectation of a case against what the target showed (a ``CaseRecord.checks`` entry)."""

    prop: str
    limits: tuple[str, ...]
    documented: str
    observed: str
    status: str  # a verdict, or UNOBSERVED

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["limits"] = list(self.limits)
        return data


@dataclass(frozen=True)
class Verdict:
    verdict: str
    detail: str
    checks: tuple[dict[str, Any], ...] = ()  # Check.to_json() per expectation


def verdict_of(checks: list[Check], infra: str | None, backend: str) -> Verdict:
    """The most severe observed check; infrastructure trouble overrides everything."""
    if infra:
        return Verdict("infra-error", infra, tuple(c.to_json() for c in checks))
    observed = [c for c in checks if c.status != UNOBSERVED]
    if not observed:
        raise ValueError(f"{backend} observed none of the case's properties")
    worst = min(observed, key=lambda c: SEVERITY.index(c.status))
    unobserved = [c.prop for c in checks if c.status == UNOBSERVED]
    detail = f"{worst.prop}: {worst.observed}"
    if unobserved:
        detail += f" (not observable on {backend}: {', '.join(unobserved)})"
    return Verdict(worst.status, detail, tuple(c.to_json() for c in checks))
