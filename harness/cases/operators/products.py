"""Variants probing a product's cap (``h*w < 16384``), and the products near a variant's."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from harness.cases.operators.variant import Variant, probe_variants
from harness.documented.limits import Limit
from harness.models import Declarations


def product_variants(
    models: Declarations, op: str, limit: Limit, base: dict[str, Any]
) -> list[Variant]:
    """Two factors whose product is just inside and at the cap, each pair the one nearest a
    square (127*129 and 128*128 for < 16384; 1*8191 and 64*128 for < 8192), further factors
    held at 1; a single factor at the cap's two sides. A product of three or more factors is
    probed with all of them balanced as well: just inside the cap, just past it, and at a half
    and a quarter of it, where a bound the NPU really has far inside the documented one shows
    (the held-at-1 pair alone never moves the other factors)."""
    rule = limit.rule
    cap = rule["less_than"] if "less_than" in rule else rule["at_most"] + 1
    factors: list[str] = list(rule["factors"])
    if len(factors) == 1:
        return probe_variants(models, op, base, factors[0], [cap - 1, cap])
    *held, a, b = factors
    pinned = base
    for factor in held:
        pinned = models.with_subject(op, pinned, factor, 1)
    found = []
    for x, y in (_nearest_square_pair(cap - 1), _nearest_square_pair(cap)):
        p = models.with_subject(op, models.with_subject(op, pinned, a, x), b, y)
        found.append(Variant(f"{a}*{b}={x * y}", p))
    if held:
        targets = ((cap - 1, False), (cap, True), (cap // 2, False), (cap // 4, False))
        for target, at_least in targets:
            sizes = balanced_factors(target, len(factors), at_least)
            p = base
            for factor, size in zip(factors, sizes, strict=True):
                p = models.with_subject(op, p, factor, size)
            what = f"{'*'.join(factors)}={'*'.join(map(str, sizes))}"
            found.append(Variant(what, p))
    return found


def balanced_factors(n: int, k: int, at_least: bool) -> tuple[int, ...]:
    """``k`` factors within one of each other whose product is the largest at most ``n`` (or,
    ``at_least``, the smallest at least ``n``): 20*20*20 for at most 8191, 21*20*20 for at
    least 8192."""
    side = max(1, round(n ** (1 / k)))
    while side > 1 and side**k > n:
        side -= 1
    sizes = [side] * k
    for i in range(k):  # raise factors one by one while the product stays at most n
        if math.prod(sizes) * (sizes[i] + 1) // sizes[i] <= n:
            sizes[i] += 1
    while at_least and math.prod(sizes) < n:  # then the smallest up until it reaches n
        sizes[sizes.index(min(sizes))] += 1
    return tuple(sorted(sizes, reverse=True))


def _nearest_square_pair(n: int) -> tuple[int, int]:
    """``(x, y)`` with ``x * y == n`` and ``x <= y`` as close as can be."""
    x = next(d for d in range(math.isqrt(n), 0, -1) if n % d == 0)
    return x, n // x


def product_cap(limit: Limit) -> int:
    """The smallest product a ``product`` limit leaves outside (``< 16384``, ``<= 8192``)."""
    rule = limit.rule
    return int(rule["less_than"] if "less_than" in rule else rule["at_most"] + 1)


_PRODUCT_REACH = 64  # how far from its probe a product moves looking for factors above 1


def product_moves(
    models: Declarations, op: str, limit: Limit, variant: Variant
) -> Iterator[Variant]:
    """For a ``product`` limit's ``variant``, the products next to its own, away from the cap
    (an inside one down, an outside one up), as the factors probed the nearest pair to a
    square and the further ones at 2: the model at 1*8191 moves to 90*91=8190."""
    if limit.kind != "product" or len(limit.rule.get("factors", ())) < 2:
        return
    factors: list[str] = list(limit.rule["factors"])
    *held, a, b = factors
    found, cap = models.subjects(op, variant.params), product_cap(limit)
    start = math.prod(found[factor] for factor in factors)
    step = -1 if start < cap else 1
    for distance in range(_PRODUCT_REACH):
        n, rest = divmod(start + step * distance, 2 ** len(held))
        x, y = _nearest_square_pair(n) if n > 0 and not rest else (1, 1)
        if x < 2:
            continue
        sizes = {**dict.fromkeys(held, 2), a: x, b: y}
        params = variant.params
        for factor in factors:
            params = models.with_subject(op, params, factor, sizes[factor])
        what = f"{'*'.join(factors)}={'*'.join(str(sizes[f]) for f in factors)}"
        yield Variant(what, params, variant.bound)
