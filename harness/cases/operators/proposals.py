"""The variants probing a limit, by the limit's kind, or why it is not probed."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from harness.cases.controls import TYPICAL
from harness.cases.operators.formulas import first_flip, formula_variants
from harness.cases.operators.products import product_variants
from harness.cases.operators.status import (
    DTYPES,
    crossed_besides,
    documented_status,
    form_text,
    governing_limits,
    limit_key,
)
from harness.cases.operators.variant import (
    Variant,
    builds,
    condition_params,
    probe_variants,
)
from harness.documented.formulas import applies
from harness.documented.formulas import names as formula_names
from harness.documented.limits import Limit
from harness.documented.operators import DocumentedOperator, OperatorCatalogue
from harness.models import Broadcast, Declarations


def _range_probes(limit: Limit) -> list[int]:
    assert limit.interval is not None
    lo, hi = limit.interval.integer_bounds()
    floor = 0 if limit.interval.lo_closed and limit.interval.lo == 0 else 1
    probes = [lo, hi, hi + 1]
    if lo - 1 >= floor:
        probes.append(lo - 1)
    return probes


def _range_variants(
    models: Declarations,
    op: DocumentedOperator,
    limit: Limit,
    base: dict[str, Any],
    limits: Sequence[Limit],
) -> list[Variant]:
    """The bounds of ``limit`` and the first value above, each with the nearest value crossing
    no other limit when it cannot (inward for a bound, outward up to twice the upper bound,
    beyond which a value no longer probes it)."""
    assert limit.interval is not None
    if math.isinf(limit.interval.hi):  # "(0, ∞]": the lower end is the one bound
        lowest = limit.interval.lowest_integer()
        lower = [lowest, lowest - 1][: 1 + (lowest > 1)]
        return probe_variants(models, op.name, base, limit_key(limit), lower)
    key, (lo, hi) = limit_key(limit), limit.interval.integer_bounds()
    probes = _range_probes(limit)

    def alone(value: int) -> bool:
        found = models.subjects(op.name, models.with_subject(op.name, base, key, value))
        broken = documented_status(models, op, limits, (*op.data_dtypes(), *DTYPES)[0], found)
        return not crossed_besides(limit, broken, limits)

    nearest = {
        hi: range(hi - 1, lo - 1, -1),
        lo: range(lo + 1, hi + 1),
        hi + 1: range(hi + 2, 2 * hi + 1),
    }
    for edge, nearer in nearest.items():
        if not alone(edge):
            found = next((value for value in nearer if alone(value)), None)
            if found is not None and found not in probes:
                probes.append(found)
    return probe_variants(models, op.name, base, key, probes)


def probing_variants(
    models: Declarations, op: DocumentedOperator, limit: Limit, catalogue: OperatorCatalogue
) -> list[Variant] | str:
    """Parameter variants probing ``limit``, or the reason it cannot be probed; a limit with a
    precondition (``width < 16383`` when ``dilated_kernel_h > 1``) is probed where the
    typical model meets it, and each variant again with the precondition off."""
    when = limit.rule.get("when")
    if when and not applies(limit.rule, models.subjects(op.name, condition_params(limit))):
        return f"applies only when {when}, which the typical model does not meet"
    found = _limit_variants(models, op, limit, catalogue)
    if when and not isinstance(found, str):
        found += _precondition_off(models, op.name, limit, found)
    return found


def _precondition_off(
    models: Declarations, op: str, limit: Limit, variants: list[Variant]
) -> list[Variant]:
    """Each of ``variants`` with the one quantity of the limit's precondition changed that
    turns it off nearest the typical model (its other branch: the limit no longer applies)."""
    rule, base = limit.rule, condition_params(limit)
    typical = models.subjects(op, base)
    named = sorted(formula_names(rule["when"]))
    # the precondition's own quantities first; a derived one (dilated_kernel_h) is set
    # through the quantities it comes from
    for name in [*named, *sorted(set(typical) - set(named))]:
        start = typical.get(name)
        if not isinstance(start, int) or isinstance(start, bool):
            continue

        def off(value: int, name: str = name) -> bool | None:
            try:
                return not applies(
                    rule, models.subjects(op, models.with_subject(op, base, name, value))
                )
            except (KeyError, ValueError, ArithmeticError):  # no such model (a group of 0)
                return None

        value = first_flip(start, off)
        if value is None:
            continue
        found = []
        for variant in variants:
            try:
                params = models.with_subject(op, variant.params, name, value)
            except (KeyError, ValueError):
                continue
            if builds(models, op, json.dumps(params, sort_keys=True)):
                found.append(Variant(f"{variant.what}@{name}={value}", params, variant.bound))
        if found:  # else no valid model has that value (a dilation of 0): the next quantity
            return found
    return []


def _limit_variants(
    models: Declarations, op: DocumentedOperator, limit: Limit, catalogue: OperatorCatalogue
) -> list[Variant] | str:
    name, key = op.name, limit_key(limit)
    kind = limit.kind
    declared = models.probing[name]
    base = condition_params(limit)
    try:
        if kind == "range":
            return _range_variants(models, op, limit, base, governing_limits(catalogue, op))
        if kind == "multiple-of":
            step, above = limit.rule["multiple_of"], limit.rule["when_greater_than"]
            return probe_variants(
                models, name, base, key, sorted({above, step, 2 * step, step - 1, step + 1})
            )
        if kind in ("values", "enum"):
            assert limit.values is not None
            if len(limit.values) == 1 and key in declared.fixed:
                return f"the model builder always sets {key}={limit.values[0]}; nothing to vary"
            outside = (*declared.outside_values.get(key, ()), *set_neighbours(key, limit.values))
            return probe_variants(models, name, base, key, limit.values) + _expressible_probes(
                models,
                name,
                base,
                key,
                [v for v in dict.fromkeys(outside) if v not in limit.values],
            )
        # A value documented as unsupported (Transpose perm=[0,1,3,2] on RK3566) is probed
        # as that value; an attribute, switched on, if the model has it.
        if kind == "unsupported" and base:
            return [Variant(",".join(f"{k}={v}" for k, v in base.items()), base)]
        if kind == "unsupported" and key in models.subjects(name, base):
            return probe_variants(models, name, base, key, [1])
        if kind == "product":
            return product_variants(models, name, limit, base)
        if kind == "formula":
            return formula_variants(models, name, limit, base)
        if kind == "absent":
            return [Variant(TYPICAL, {})]
        if kind == "broadcast" and declared.broadcast:
            sizes = _range_probes(limit)
            if form_text(limit.rule["from"]).strip("[]").split(",") == [
                "1" if letter == key else letter for letter in "bchw"
            ]:  # the form's one broadcast axis: from 1 to 1 would broadcast nothing
                sizes = [max(2, size) for size in sizes]
            return broadcast_variants(declared.broadcast, limit, sizes)
        if (
            kind == "broadcast-support"
            and declared.broadcast
            and limit.role == declared.broadcast.operand
            and "same_as" in limit.rule
        ):
            return _adopted_broadcast_variants(declared.broadcast, limit, catalogue)
        if kind == "dtype" and limit.subject in declared.dtype_subjects:
            assert limit.values is not None
            subject = declared.dtype_subjects[limit.subject]
            values = (*limit.values, *declared.outside_values.get(subject, ()))
            return probe_variants(models, name, {}, subject, values)
    except KeyError as exc:
        return f"no model parameter expresses it ({exc.args[0]})"
    if kind in declared.unprobed:
        return declared.unprobed[kind]
    if kind == "broadcast-support" and declared.broadcast:  # the forms go on one operand only
        return f"probed once per operator, through role {declared.broadcast.operand}"
    return _UNPROBED_REASONS.get(kind, f"{kind} limits are not probed by the operator suites")


_UNPROBED_REASONS = {
    "rank": "the models have the documented rank; other ranks are not built",
    "broadcast-support": "the statement names no broadcast forms to probe",
    "no-limit": "the document states no limit",
    "free-text": "kept as the document's words only: nothing to vary",
    "quantization": "the int8 cases use the toolkit's default per-layer quantization; the "
    "scheme itself is not varied",
    "multi-core": "the simulator has no NPU cores to observe",
    "dtype": "the data dtype is probed by every case (one per dtype)",
    "unsupported": "the ONNX operator has no such attribute",  # not among the model's subjects
}


RANK = 4  # the operator models' tensors: the axes a set of axes is completed with


def set_neighbours(key: str, values: Sequence[Any]) -> list[int]:
    """Integers just outside a documented set of integers: the first of each gap inside it
    (3 for ``{1, 2, 4, 8}``), one past its largest and, down to 1, one below its smallest; for
    a set of flags (within 0 and 1) the other flag; for a set of axes every other axis of a
    rank-4 tensor (a negative axis names a positive one, so none is proposed)."""
    ints = sorted({v for v in values if isinstance(v, int) and not isinstance(v, bool)})
    if not ints or len(ints) != len(values):
        return []
    if "axis" in key or "axes" in key:
        return [axis for axis in range(RANK) if axis not in ints]
    if set(ints) <= {0, 1}:
        return [flag for flag in (0, 1) if flag not in ints]
    gaps = [a + 1 for a, b in itertools.pairwise(ints) if b > a + 1]
    below = [ints[0] - 1] if ints[0] > 1 else []
    return [*gaps, ints[-1] + 1, *below]


def _expressible_probes(
    models: Declarations, op: str, base: dict[str, Any], key: str, values: Iterable[Any]
) -> list[Variant]:
    """``probe_variants`` of the ``values`` a valid ONNX model of ``op`` can take (a proposed value
    outside a documented set may be no valid attribute at all: a stride of 0)."""
    found = []
    for value in values:
        try:
            params = models.with_subject(op, base, key, value)
        except (KeyError, ValueError):
            continue
        if builds(models, op, json.dumps(params, sort_keys=True)):
            found.append(Variant(f"{key}={value}", params))
    return found


def broadcast_variants(
    broadcast: Broadcast, limit: Limit, sizes: Iterable[int], prefix: str = ""
) -> list[Variant]:
    """The form ``limit`` describes, its subject at each of ``sizes``, the others small."""
    source = form_text(limit.rule["from"]).strip("[]").split(",")
    variants = []
    for value in sizes:
        out = [1, 2, 3, 4]  # b, c, h, w; the probed one replaced below
        out["bchw".index(limit.subject)] = value
        shape = [1 if s == "1" else o for s, o in zip(source, out, strict=True)]
        what = f"{prefix}{limit.rule['from']}:{limit.subject}={value}"
        variants.append(Variant(what, broadcast.params(shape, out), limit.id))
    return variants


def _adopted_broadcast_variants(
    broadcast: Broadcast, limit: Limit, catalogue: OperatorCatalogue
) -> list[Variant]:
    """Each form of the operator whose broadcasting ``limit`` adopts, on the broadcast operand,
    at a small size, at the top of the form's range and beyond it."""
    variants = []
    for form in catalogue.operators[limit.rule["same_as"]].limits():
        if form.kind == "broadcast":
            assert form.interval is not None
            top = form.interval.integer_bounds()[1]
            sizes = (5, top, top + 1)
            variants += broadcast_variants(broadcast, form, sizes, prefix=limit.role)
    return variants
