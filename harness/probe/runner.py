"""Running searches: every selected bound advances one step per round, a round runs as one
batch of ordinary cases, and each bound's answer becomes a probe record.

A round is the list of the next step of every active search; steps two searches share (the
same model, e.g. GRU's ``batch_size`` restated per tensor) run once, through
``CaseExecutor.execute_many``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

import _pytest.mark.expression as pytest_expression
from _pytest.mark.expression import Expression

from harness.cases.case import Case
from harness.judge.verdict import TESTED_NOTHING
from harness.pipeline import CaseExecutor
from harness.probe.search import INFRA, UNTESTABLE, Search
from harness.probe.steps import Bound, Skipped, behaviour
from harness.results.probes import ProbeRecord, ProbeStep
from harness.results.records import CaseRecord
from harness.text import clipped

# How pytest's -k parser reports bad input: SyntaxError from pytest 8.4, ParseError before.
_BAD_EXPRESSION = (SyntaxError, getattr(pytest_expression, "ParseError", SyntaxError))
DEFAULT_STEPS = 16  # per bound: enough to go from 8192 to a cap and bisect to neighbours


class SelectionError(ValueError):
    """A ``-k`` expression that does not parse."""


class _Named(Protocol):
    @property
    def id(self) -> str: ...


Selected = TypeVar("Selected", bound=_Named)


def select(
    bounds: Iterable[Selected], expression: str | None, operators: frozenset[str] | None = None
) -> list[Selected]:
    """The bounds whose names match a pytest-style ``-k`` expression ("Expand or MaxPool",
    "kernel and not int8"): a word matches when it begins (any case) one of the ``/``-parts of
    the bound's id (platform, limit id, dtype, side), so "MaxPool" is not GlobalMaxPool and
    "kernel" is kernel_shape, kernel_h and kernel_w; with ``operators`` (``--op``/``--entry``),
    only the bounds of those operators (an id's second part)."""
    chosen = [b for b in bounds if operators is None or b.id.split("/")[1] in operators]
    if not expression:
        return chosen
    shown = repr(clipped(expression))
    try:
        compiled = Expression.compile(expression)
    except _BAD_EXPRESSION as exc:
        raise SelectionError(f"-k {shown}: {exc}") from None
    except RecursionError:  # pytest's parser descends once per parenthesis or "not"
        raise SelectionError(f"-k {shown}: nested too deeply") from None

    def matches(bound: Selected) -> bool:
        parts = bound.id.lower().split("/")

        def has(word: str, /, **kwargs: str | int | bool | None) -> bool:
            return any(part.startswith(word.lower()) for part in parts)

        return compiled.evaluate(has)

    return [bound for bound in chosen if matches(bound)]


def search_bounds(
    bounds: list[Bound],
    executor: CaseExecutor,
    budget: int = DEFAULT_STEPS,
    finished: Callable[[ProbeRecord], None] = lambda record: None,
) -> list[ProbeRecord]:
    """Search every bound at once, round by round; ``finished`` gets each bound's record as
    its search ends. Returns the records in the order of ``bounds``."""
    searches = {
        bound.id: Search(bound.edge, bound.direction, budget, bound.floor, bound.skip)
        for bound in bounds
    }
    steps: dict[str, list[ProbeStep]] = {bound.id: [] for bound in bounds}
    records: dict[str, CaseRecord] = {}
    answers: dict[str, ProbeRecord] = {}
    while True:
        wanted: list[tuple[Bound, int, Case]] = []
        for bound in bounds:
            if bound.id in answers:
                continue
            value = searches[bound.id].proposal()
            if value is None:
                answer = answer_of(bound, searches[bound.id], steps[bound.id], records)
                answers[bound.id] = answer
                finished(answer)
            else:
                wanted.append((bound, value, bound.case(value)))
        if not wanted:
            break
        batch = list({case.id: case for _, _, case in wanted if case.id not in records}.values())
        # one batch: the steps of every bound still searching, journaled like any case
        for record in executor.execute_many(batch):
            records[record.id] = record
        for bound, value, case in wanted:
            record = records[case.id]
            behaved, seen = behaviour(record)
            searches[bound.id].observe(value, behaved)
            if record.verdict in TESTED_NOTHING:
                searches[bound.id].tested_nothing()
            steps[bound.id].append(ProbeStep(value, case.id, behaved, seen, record.verdict))
    return [answers[bound.id] for bound in bounds]


def _base(bound: Bound, budget: int = 0) -> ProbeRecord:
    return ProbeRecord(
        id=bound.id,
        platform=bound.catalogue.platform,
        op=bound.op.name,
        limit=bound.limit.id,
        dtype=bound.dtype,
        side=bound.side,
        subject=bound.subject,
        documented=bound.documented,
        edge=bound.edge,
        stop="skipped",
        budget=budget,
    )


def answer_of(
    bound: Bound, search: Search, steps: list[ProbeStep], records: dict[str, CaseRecord]
) -> ProbeRecord:
    """The probe record of a finished search."""
    answer = _base(bound, search.budget)
    answer.stop, answer.stop_detail = search.stop, search.stop_detail
    answer.last_good, answer.first_bad = search.good, search.bad
    answer.steps = steps
    if search.stop in (INFRA, UNTESTABLE) and steps:  # what the step that said nothing saw
        answer.stop_detail = steps[-1].behaviour
    seen = {step.value: step.behaviour for step in steps}
    answer.before = seen.get(search.good, "") if search.good is not None else ""
    answer.after = seen.get(search.bad, "") if search.bad is not None else ""
    if steps:
        first = records[steps[0].case]
        answer.backend, answer.versions = first.backend, first.versions
    return answer


def skipped_record(skipped: Skipped) -> ProbeRecord:
    """The probe record of a bound not searched, with the reason."""
    answer = _base(skipped.bound)
    answer.stop_detail = skipped.reason
    return answer
