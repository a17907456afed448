"""Single variants, for a search along one bound (``harness.probe``)."""

from __future__ import annotations

import math

from harness.cases.operators.products import product_cap
from harness.cases.operators.proposals import broadcast_variants
from harness.cases.operators.status import limit_key
from harness.cases.operators.variant import Variant, condition_params, probe_variants
from harness.documented.limits import Limit
from harness.documented.operators import DocumentedOperator
from harness.models import Declarations


def held_factors(limit: Limit, along: str) -> dict[str, int]:
    """The other factors of a product searched ``along`` one of them: of two, the first at
    the square root of the cap; of more, each at the balanced share of the cap (c*h*w < 8192
    along w: c = h = 20)."""
    factors, cap = list(limit.rule["factors"]), product_cap(limit)
    others = [f for f in factors if f != along]
    side = math.isqrt(cap) if len(factors) == 2 else max(1, round(cap ** (1 / len(factors))))
    return dict.fromkeys(others, side)


def bound_variant(
    models: Declarations, op: DocumentedOperator, limit: Limit, value: int, along: str = ""
) -> Variant:
    """The model probing a numeric ``limit`` (range, broadcast, product) at ``value``: the
    parameters the generator's cases of ``limit`` vary, set to ``value``; a product's factor
    ``along`` (default the last), the others held (``held_factors``).

    Raises KeyError when no model parameter expresses the limit's subject, ValueError for a
    kind with no single numeric subject.
    """
    key, declared = limit_key(limit), models.probing[op.name]
    base = condition_params(limit)
    if limit.kind == "range":
        return probe_variants(models, op.name, base, key, [value])[0]
    if limit.kind == "broadcast" and declared.broadcast:
        return broadcast_variants(declared.broadcast, limit, [value])[0]
    if limit.kind == "product":
        factors = list(limit.rule["factors"])
        along = along or factors[-1]
        sizes = {**held_factors(limit, along), along: value}
        params = base
        for factor in factors:
            params = models.with_subject(op.name, params, factor, sizes[factor])
        what = f"{'*'.join(factors)}={'*'.join(str(sizes[f]) for f in factors)}"
        return Variant(what, params)
    raise ValueError(f"{limit.id}: a {limit.kind} limit has no single numeric bound to search")
