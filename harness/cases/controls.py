"""Which case each generated case is judged against: its inside control.

An observation alone cannot say what a value did: a build that every float16 model of the
platform gets refused says nothing about a kernel bound, and a compiled graph with one layer
more than the model has nodes may be the toolkit's own input layer. So every case but the
operator's first typical one names a control (``Case.control``), already a case of the run,
and is judged by what differs between the two (``harness.judge.observers``):

- a case outside the limit it probes at a number: the case of the same dtype nearest to it
  inside that limit (8192 for 8193 of ``(0, 8192]``) that crosses only limits the case crosses
  too, else the typical case of its dtype;
- any other case (a value off a set of names, an exponent's dtype or a mode, too): the
  typical case of its dtype (an inside case refused like its typical model says nothing
  about its own limit);
- the typical case of a further dtype: the typical case of the first dtype documented
  supported (a platform that refuses a whole dtype says so once per operator, there).

A case is read against its control only where both did not run as asked the same way
(``harness.judge.checks.ControlSeen``): an int8 model on the CPU beside a float16 control
the platform refuses is judged on its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from harness.cases.case import Case, Control, model_seed

TYPICAL = "typical"  # the value of an operator's typical case


def with_controls(cases: Sequence[Case]) -> list[Case]:
    """``cases`` (one operator's, in generation order) each with its control, a case moved
    after its control where it came first (a run then builds each control once, before the
    cases judged against it)."""
    typical = {case.dtype: case for case in cases if case.value == TYPICAL}
    first = next(
        (case for case in typical.values() if case.documented == "supported"),
        next(iter(typical.values()), None),
    )
    found = []
    for case in cases:
        control = _control_of(case, cases, typical, first)
        found.append(replace(case, control=_as_control(control) if control else None))
    return _controls_first(found)


def _controls_first(cases: list[Case]) -> list[Case]:
    position = {case.id: (index,) for index, case in enumerate(cases)}
    by_id = {case.id: case for case in cases}

    def place(case: Case) -> tuple[int, ...]:
        control = by_id.get(case.control.id) if case.control else None
        own = position[case.id]
        return own if control is None else max(own, (*place(control), 1))

    return sorted(cases, key=place)


def _control_of(
    case: Case, cases: Sequence[Case], typical: dict[str, Case], first: Case | None
) -> Case | None:
    if case.value == TYPICAL:
        return None if first is None or case.id == first.id else first
    if case.documented == "outside" and _NUMBER.search(case.value):
        # inside the probed limit and crossing fewer of the limits the case crosses (so no
        # two cases are each other's control), of the same subject first, then the nearest;
        # a value off a set of names (a dtype, a mode) has no nearest: the typical model's
        broken = set(case.outside_because)
        inside = [
            other
            for other in cases
            if other.dtype == case.dtype
            and case.limit in other.limits
            and set(other.outside_because) < broken
            and case.limit not in other.outside_because
        ]
        if inside:
            return min(
                inside,
                key=lambda other: (
                    _subject(other.value) != _subject(case.value),
                    _distance(case.value, other.value),
                ),
            )
    return typical.get(case.dtype)


def _as_control(case: Case) -> Control:
    return Control(case.id, case.dtype, case.params)


_NUMBER = re.compile(r"=(-?\d+(?:\.\d+)?)")


def _subject(value: str) -> str:
    """What a probed value sets ("kernel_h" of "kernel_h=8"), with its condition
    ("@axis=3")."""
    name, _, rest = value.partition("=")
    return name + "".join(part for part in rest.split("@")[1:])


def _distance(value: str, other: str) -> float:
    """How far two probed values lie apart ("kernel_h=8" and "kernel_h=7": 1); values that are
    not numbers are equally far (the first candidate wins)."""
    a, b = _NUMBER.search(value), _NUMBER.search(other)
    if a is None or b is None:
        return 0.0
    return abs(float(a.group(1)) - float(b.group(1)))


def control_case(case: Case) -> Case:
    """The control of ``case`` as a case to run (the same model, seed and dtype as the
    generated control), for a run whose selection left it out: only its observation is read
    (``harness.judge.observers.control_seen``), so it carries no expectations."""
    control = case.control
    if control is None:
        raise ValueError(f"{case.id} has no control")
    return replace(
        case,
        id=control.id,
        dtype=control.dtype,
        params=control.params,
        seed=model_seed(case.op, control.params),
        value="control",
        documented="supported",
        limits=(),
        outside_because=(),
        expects=(),
        deciding_limit="",
        not_isolable="",
        control=None,
    )
