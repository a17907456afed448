"""Variants probing a formula (``h1*w1%8=0``, ``stride_h*(height-1)-pads_top+1<output_h``)
on both sides of its boundary."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from harness.cases.operators.variant import Variant, builds, probe_variants
from harness.documented.formulas import equalities, holds
from harness.documented.limits import Limit
from harness.models import Declarations

_MODULUS = re.compile(r"(\w+(?:\*\w+)*)%(\d+)=0")


def formula_variants(
    models: Declarations, op: str, limit: Limit, base: dict[str, Any]
) -> list[Variant] | str:
    """``h1*w1%8=0``: the first name at the modulus and one above, the others at the smallest
    size above 1 prime to it (3), so the product is a multiple or not as the first is, and no
    dimension of the product is 1 (a Transpose moving an axis of 1 moves data as a simpler
    perm does); any other formula on both sides of it (``_formula_sides``)."""
    match = _MODULUS.fullmatch(limit.rule["expression"].replace(" ", ""))
    if match is None:
        return _formula_sides(models, op, limit, base)
    first, *others = match.group(1).split("*")
    step = int(match.group(2))
    held = next(size for size in itertools.count(2) if math.gcd(size, step) == 1)
    for other in others:
        base = models.with_subject(op, base, other, held)
    return probe_variants(models, op, base, first, [step, step + 1])


_FORMULA_REACH = 1 << 16  # how far a quantity is moved looking for the formula's other side


def _formula_sides(
    models: Declarations, op: str, limit: Limit, base: dict[str, Any]
) -> list[Variant] | str:
    """A formula over several quantities (``stride_h*(height-1)-pads_top+1<output_h``) probed
    on both sides of its boundary: for each quantity, moved alone up (or down) from the
    typical model, the first value on the formula's other side and the last one before it
    (found by doubling, then halving the step), where a valid model takes both; then each
    value the formula allows alone (``_equality_variants``)."""
    rule = limit.rule
    typical = models.subjects(op, base)
    side = holds(rule, typical)
    found: list[Variant] = []
    for name in rule.get("names", ()):
        start = typical.get(name)
        if not isinstance(start, int) or isinstance(start, bool):
            continue

        def flips(value: int, name: str = name) -> bool | None:
            try:
                params = models.with_subject(op, base, name, value)
                return holds(rule, models.subjects(op, params)) != side  # derived sizes follow
            except (KeyError, ValueError, ArithmeticError):  # no such model (a group of 0)
                return None

        edge = first_flip(start, flips)
        if edge is None:
            continue
        for value in (edge, edge - 1 if edge > start else edge + 1):
            params = models.with_subject(op, base, name, value)
            if value != start and builds(models, op, json.dumps(params, sort_keys=True)):
                found.append(Variant(f"{name}={value}", params))
    found += _equality_variants(models, op, rule, base)
    if not found:
        return "no single quantity a valid model can change puts it on the formula's other side"
    return found


def _equality_variants(
    models: Declarations, op: str, rule: Mapping[str, Any], base: dict[str, Any]
) -> list[Variant]:
    """The values a formula's equalities name, together (``height*width=1`` of ``height*width=1
    or height*width>8``; ``kernel_h=1,kernel_w=1`` of ``kernel_h=1 and kernel_w=1``), a
    product's first factor carrying its value and the others at 1; then each value one above.
    Points a one-quantity move from the typical model (4*6, a 3x3 kernel) never reaches."""
    named: list[tuple[tuple[str, ...], int]] = []  # no quantity twice
    for factors, value in equalities(rule["expression"]):
        if not set(factors) & {name for taken, _ in named for name in taken}:
            named.append((factors, value))
    found = []
    for bumped in (None, *range(len(named))):
        point = [(factors, value + (i == bumped)) for i, (factors, value) in enumerate(named)]
        try:
            params = base
            for factors, value in point:
                sizes = (value, *[1] * (len(factors) - 1))
                for factor, size in zip(factors, sizes, strict=True):
                    params = models.with_subject(op, params, factor, size)
        except (KeyError, ValueError):  # not the model's quantities, or no such model
            return []
        if named and builds(models, op, json.dumps(params, sort_keys=True)):
            what = ",".join(f"{'*'.join(factors)}={value}" for factors, value in point)
            found.append(Variant(what, params))
    return found


def first_flip(start: int, flips: Callable[[int], bool | None]) -> int | None:
    """The value nearest ``start`` (up first, then down to 0) at which ``flips`` turns true,
    assuming it stays true beyond; None when it does not within reach."""
    for direction in (1, -1):
        near, step = start, 1
        while 0 <= start + direction * step <= _FORMULA_REACH:
            far = start + direction * step
            flipped = flips(far)
            if flipped is None:
                break
            if flipped:
                while abs(far - near) > 1:  # halve the gap: near stays on its side, far flips
                    middle = (near + far) // 2
                    if flips(middle):
                        far = middle
                    else:
                        near = middle
                return far
            near, step = far, step * 2
    return None
