"""Judging a case expectation by expectation: the observer registry and the judge.

The judge reads the expectations the case carries (``Case.expects``) and looks up an observer
for each property in its registry: the generic ones (``harness.judge.observers``) plus those
a vendor hands in through the plugin. A property is checked only when the target that ran the
case says it can see it (``Observation.observes``); otherwise its check is ``unobserved``, the
reason naming that target and what it takes to observe the property. Each observer belongs
to a phase of judgement (``harness.judge.verdict``), and each check carries the document's
contradictions its expectation rests on (``Expect.inconsistent``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from harness.cases.case import Case, Expect
from harness.judge.compare import Comparison
from harness.judge.verdict import FALLBACK, PLACEMENT_PHASE, UNOBSERVED, Check, Verdict, verdict_of
from harness.targets.observation import Observation

Outcome = tuple[str, str]  # (status, observed text)


# How the operator under test did not run as asked. A case is read against its control only
# when both fell back the same way: a build refused like its control's, or moved to the CPU
# like it, says nothing of its own limit; an int8 model on the CPU beside a float16 control
# the platform refuses says what int8 does.
REFUSED = "refused"  # the build or the run failed
ON_CPU = "on the CPU"
OTHER_PRECISION = "in another precision"
INFRA = "infrastructure"  # nothing about the model: alike with no fallback of a case


@dataclass(frozen=True)
class ControlSeen:
    """What a case's inside control (``Case.control``) showed, as its cases are judged by."""

    id: str
    trouble: str  # how the operator under test did not run as asked ("" when it did)
    layers: tuple[str, ...]  # its compiled layers (``observers.compiled_layers``)
    fell_back: str = ""  # the kind of its trouble: REFUSED, ON_CPU, OTHER_PRECISION or INFRA

    def failed(self) -> str:
        """Why a case cannot be judged against this control ("" when the control ran as
        asked)."""
        if not self.trouble:
            return ""
        return (
            f"its control {self.id} did not run as asked either ({self.trouble}): "
            "the case says nothing about its limit"
        )


@dataclass(frozen=True)
class Seen:
    """Everything an observer may look at for one case."""

    case: Case
    observation: Observation
    comparison: Comparison | None
    failure: str | None  # the model was rejected: a failed stage or what the vendor reads as one
    infra: str | None  # trouble that says nothing about the model
    control: ControlSeen | None = None  # what the case's control showed, when it has one


@dataclass(frozen=True)
class Observer:
    """How one property is checked, and what a target must see to check it."""

    check: Callable[[Expect, Seen], Outcome] | None  # None: no target observes it yet
    needs: str  # the reason a target without the property in its ``observes`` cannot see it
    phase: str  # PLACEMENT_PHASE, RESULT_PHASE or LAYOUT_PHASE (harness.judge.verdict)
    fell_back: str = ""  # how a fallback it reports happened, unless refused (ON_CPU...)


Rejection = Callable[[Observation], tuple[str | None, str | None]]  # -> (failure, infra)


def rejection(observation: Observation) -> tuple[str | None, str | None]:
    """(how the target rejected the model, infrastructure trouble), as the target reported:
    "build failed: <message>", or "build aborted (SIGSEGV): <message>" for a crash."""
    failure = None
    if observation.failed_stage:
        how = f"aborted ({observation.aborted})" if observation.aborted else "failed"
        failure = f"{observation.failed_stage} {how}: {observation.error or 'no message'}"
    return failure, observation.infra_error


@dataclass(frozen=True)
class Judge:
    """Judges cases with ``observers`` (property -> Observer); ``rejected`` reads failures."""

    observers: Mapping[str, Observer]
    rejected: Rejection = rejection

    def __call__(
        self,
        case: Case,
        observation: Observation,
        comparison: Comparison | None,
        control: ControlSeen | None = None,
    ) -> Verdict:
        """The case's verdict, with one check per expectation; ``control``: what the case's
        inside control showed, against which its fallback or compiled layers are read."""
        if not case.expects:
            raise ValueError(f"{case.id} carries no expectations to judge")
        failure, infra = self.rejected(observation)
        seen = Seen(case, observation, comparison, failure, infra, control)
        checks = [self._check(expect, seen) for expect in case.expects]
        alike = control is not None and control.fell_back in self._fell_back(seen, checks)
        failed = control.failed() if control is not None and alike else ""
        return verdict_of(checks, infra, observation.backend, failed)

    def _fell_back(self, seen: Seen, checks: list[Check]) -> set[str]:
        """The kinds of fallback the case's checks report (``ControlSeen.fell_back``)."""
        if seen.failure:
            return {REFUSED}
        return {
            self.observers[check.prop].fell_back
            for check in checks
            if check.phase == PLACEMENT_PHASE and check.status in FALLBACK
        }

    def _check(self, expect: Expect, seen: Seen) -> Check:
        observer = self.observers.get(expect.prop)
        if observer is None:
            raise LookupError(f"no observer for property {expect.prop!r} of {seen.case.id}")
        backend = seen.observation.backend
        if observer.check is None or expect.prop not in seen.observation.observes:
            status, observed = UNOBSERVED, f"{backend} does not observe this: {observer.needs}"
        elif seen.infra:
            status, observed = "infra-error", seen.infra
        else:
            status, observed = observer.check(expect, seen)
        return Check(
            expect.prop,
            expect.limits,
            expect.documented,
            observed,
            status,
            observer.phase,
            expect.inconsistent,
        )
