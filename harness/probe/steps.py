"""What a search walks along: the numeric bounds of the catalogue, a value as a normal case,
and a step's record read back as behaviour.

A ``Bound`` is one side of one numeric limit in one dtype: a range's or a broadcasting form's
upper bound (its lower bound too when values below it can be built), or a product cap along
its second factor (the first held at the square root of the cap, so Hardmax's
``height*width < 16384`` becomes ``width <= 127`` at ``height = 128``); a product of three or
four factors is searched along each of them, the others held at their balanced share of the
cap (``channel*height*width <= 8192`` along width at channel = height = 20), so a bound the
NPU has far inside the documented one is found. A step at a value is
exactly the case the operator generator would make of that value (``variant_case``): same id
scheme, documented status, expectations, model and artifacts, so every step is reproducible
and bundles like any case.

Bounds whose edge or first outside model would exceed the size budget, or that no model
parameter expresses, are not searched: they are listed with the reason (``Skipped``). Limit
kinds without a single numeric bound (multiple-of rules, value sets, dtypes) are not bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from harness.cases.case import Case, Control
from harness.cases.controls import TYPICAL
from harness.cases.operators import DTYPES
from harness.cases.operators.generator import variant_case
from harness.cases.operators.products import product_cap
from harness.cases.operators.search import bound_variant, held_factors
from harness.cases.operators.variant import Variant, element_count
from harness.documented.limits import Limit
from harness.documented.operators import DocumentedOperator, OperatorCatalogue
from harness.judge.verdict import (
    FALLBACK,
    NUMERIC_FAILURES,
    TESTED_NOTHING,
    own_observation,
    own_status,
)
from harness.models import Declarations, ModelParamError
from harness.models.budget import SizeBudget, size_budget
from harness.results.records import CaseRecord

NUMERIC_KINDS = ("range", "broadcast", "product")
UPPER, LOWER = "upper", "lower"


@dataclass(frozen=True)
class Bound:
    """One side of one numeric limit, in one dtype: what one search walks along (with the
    models of the run's vendor)."""

    models: Declarations
    catalogue: OperatorCatalogue
    op: DocumentedOperator
    limit: Limit
    dtype: str
    side: str  # UPPER or LOWER
    edge: int  # the last value documented inside
    floor: int  # inward, the search goes no further than this (the other documented bound)
    subject: str  # what the value sets, e.g. "kernel_h" or "[b,c,1,w]:h"
    documented: str  # the documented interval or cap, as the document gives it
    smallest: int = 1  # the smallest value a model takes (0 for a pad, 1 for a dimension)
    along: str = ""  # the factor a product of three or more is searched along

    @property
    def id(self) -> str:
        along = f"/{self.along}" if self.along else ""
        return f"{self.catalogue.platform}/{self.limit.id}/{self.dtype}/{self.side}{along}"

    @property
    def direction(self) -> int:
        return 1 if self.side == UPPER else -1

    def case(self, value: int) -> Case:
        """The step at ``value``: a normal case of the limit, judged against its control (the
        step at the edge for a value past it, else the operator's typical model in the
        dtype), as the generator's cases are (``harness.cases.controls``)."""
        step = self._case(value)
        outside = (value - self.edge) * self.direction > 0
        control = self._case(self.edge) if outside else self._typical()
        return replace(step, control=Control(control.id, control.dtype, control.params))

    def _case(self, value: int) -> Case:
        variant = bound_variant(self.models, self.op, self.limit, value, self.along)
        return variant_case(self.models, self.catalogue, self.op, self.limit, self.dtype, variant)

    def _typical(self) -> Case:
        typical = Variant(TYPICAL, {})
        return variant_case(self.models, self.catalogue, self.op, self.limit, self.dtype, typical)

    def skip(self, value: int, max_elements: int | None = None) -> str | None:
        """Why the step at ``value`` is not tried (no model can express it, or the model is
        over the size budget), or None."""
        if value < self.smallest:
            return f"{self.subject}={value}: below the smallest value a model can take"
        try:
            case = self.case(value)
            elements = element_count(self.models, self.op.name, case.params)
        except (KeyError, ValueError) as exc:
            return f"{self.subject}={value}: no model expresses it ({exc})"
        budget = SizeBudget(max_elements) if max_elements is not None else size_budget()
        over = budget.over_elements("model", elements)
        if over is not None:
            return f"{self.subject}={value}: {over}"
        try:  # what the builder refuses (a reflect pad as large as its dimension)
            self.models.build(self.op.name, case.params, 0)
        except ModelParamError as exc:
            return f"{self.subject}={value}: no model expresses it ({exc})"
        return None


@dataclass(frozen=True)
class Skipped:
    """A bound not searched, with the reason."""

    bound: Bound
    reason: str


def numeric_bounds(
    catalogue: OperatorCatalogue,
    models: Declarations,
    ops: list[str] | None = None,
    dtypes: tuple[str, ...] | None = None,
    max_elements: int | None = None,
) -> tuple[list[Bound], list[Skipped]]:
    """Every searchable bound of the catalogue's operators (or of ``ops``), in catalogue
    order, per documented dtype (or those of ``dtypes``), and the numeric limits skipped;
    ``models``: the run's vendor's (``Vendor.declarations``)."""
    bounds: list[Bound] = []
    skipped: list[Skipped] = []
    for op in catalogue.operators.values():
        if (ops is not None and op.name not in ops) or op.name not in models.probing:
            continue  # an operator no model is declared for has no bound to search
        op_dtypes = [d for d in op.data_dtypes() if d in (dtypes or DTYPES)]
        for limit in op.limits():
            if limit.kind not in NUMERIC_KINDS:
                continue
            for dtype in op_dtypes:
                for bound in _sides(models, catalogue, op, limit, dtype):
                    reason = bound.skip(bound.edge, max_elements)
                    if reason is None:
                        outward = bound.edge + bound.direction
                        reason = bound.skip(outward, max_elements)
                    if reason is not None:
                        skipped.append(Skipped(bound, reason))
                    else:
                        bounds.append(bound)
    return bounds, skipped


def _sides(
    models: Declarations,
    catalogue: OperatorCatalogue,
    op: DocumentedOperator,
    limit: Limit,
    dtype: str,
) -> list[Bound]:
    def bound(
        side: str, edge: int, floor: int, subject: str, documented: str, smallest: int = 1
    ) -> Bound:
        return Bound(
            models, catalogue, op, limit, dtype, side, edge, floor, subject, documented, smallest
        )

    if limit.kind == "product":
        factors = list(limit.rule["factors"])
        if len(factors) < 2 or limit.rule.get("when"):
            return []  # one factor is a range; a product that holds only when... is not varied
        cap = product_cap(limit)
        most = limit.rule.get("at_most")
        stated = f"{'*'.join(factors)} " + (f"<= {most}" if most is not None else f"< {cap}")
        # two factors: along the second; more: along each, the others at their share
        found = []
        for along in factors[-1:] if len(factors) == 2 else factors:
            held = held_factors(limit, along)
            edge = -(-cap // math.prod(held.values())) - 1  # the largest value still inside
            at = ", ".join(f"{f}={v}" for f, v in held.items())
            name = along if len(factors) > 2 else ""
            found.append(
                Bound(
                    models,
                    catalogue,
                    op,
                    limit,
                    dtype,
                    UPPER,
                    edge,
                    1,
                    f"{along} at {at}",
                    stated,
                    along=name,
                )
            )
        return found
    assert limit.interval is not None
    if math.isinf(limit.interval.hi):  # "(0, ∞]" (an epsilon): no integer bound to search
        return []
    lo, hi = limit.interval.integer_bounds()
    subject = str(limit.rule.get("element", limit.subject))
    if limit.kind == "broadcast":
        subject = f"{limit.rule['from']}:{limit.subject}"
    smallest = 0 if limit.interval.lo_closed and limit.interval.lo == 0 else 1
    found = [bound(UPPER, hi, lo, subject, str(limit.interval), smallest)]
    if lo - 1 >= smallest:
        found.append(bound(LOWER, lo, hi, subject, str(limit.interval), smallest))
    return found


@dataclass(frozen=True)
class Unsearchable:
    """A documented limit with no numeric bound a search can walk, with the reason."""

    id: str  # platform/limit id, what ``-k`` selects on
    reason: str


_NO_BOUND = {
    "values": "a value set: its cases probe every member and the values just outside it",
    "enum": "a value set: its cases probe every member and the values just outside it",
    "fixed": "a fixed value: nothing to search",
    "multiple-of": "a multiple-of rule: its cases probe the multiples around it",
    "formula": "a formula over several quantities: its cases probe both sides of it",
    "dtype": "a data type rule: every case runs in one of the dtypes",
    "rank": "a rank: the models are built at the documented rank",
    "quantization": "a quantization scheme, not a number",
    "unsupported": "a documented unsupported value, probed by its own case",
    "absent": "an operator the section does not document: its typical case probes it",
    "free-text": "kept as the document's words only",
    "multi-core": "a multi-core rule: the cases run on one core",
    "no-limit": "the document states no limit",
}


def unsearchable(catalogue: OperatorCatalogue) -> list[Unsearchable]:
    """The catalogue's limits that ``numeric_bounds`` cannot walk, each with the reason."""
    found = []
    for op in catalogue.operators.values():
        for limit in op.limits():
            if limit.kind in NUMERIC_KINDS and (
                limit.kind != "product" or not limit.rule.get("when")
            ):
                continue
            reason = _NO_BOUND.get(limit.kind, f"a {limit.kind} limit has no numeric bound")
            if limit.kind == "product":
                reason = f"a product that applies only when {limit.rule['when']}"
            found.append(Unsearchable(f"{catalogue.platform}/{limit.id}", reason))
    return found


# -- a step's record as behaviour -----------------------------------------------------------

INSIDE = "NPU, correct"  # how a value documented inside behaves


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def behaviour(record: CaseRecord) -> tuple[bool | None, str]:
    """Whether the step behaved like a documented-inside value (on the NPU, in the precision
    asked, correct), None when it says nothing (infra error, or it tested nothing: refused
    like its control, its operator rewritten away), and what was seen, e.g.
    "NPU, correct", "CPU fallback", "build failed: ...", "precision fallback: FLOAT16 (INT8
    asked)", "NPU, wrong result (max_abs=3)"."""
    if record.verdict in TESTED_NOTHING:  # the search's stop names the verdict
        return None, _first_line(" ".join(record.detail.split()))
    if record.verdict == "infra-error":
        return None, f"infra error: {_first_line(record.detail)}"
    seen: list[str] = []
    good = True
    for check in record.checks:
        status = own_status(check)
        if status in FALLBACK:
            good = False
            seen.append(_first_line(own_observation(check)))
        elif status in NUMERIC_FAILURES:
            good = False
            metrics = ", ".join(f"{k}={v:.4g}" for k, v in sorted(record.metrics.items()))
            seen.append(f"NPU, {status}" + (f" ({metrics})" if metrics else ""))
    if good:
        return True, INSIDE
    return False, "; ".join(dict.fromkeys(seen))
