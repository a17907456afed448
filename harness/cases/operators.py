"""Test cases from the operator catalogue: each documented limit probed at and beyond its bounds.

For every limit the generator proposes parameter variants of the operator's typical model
(``Declarations.defaults``): each bound of a range and the first value outside it
(8192 and 8193 for ``(0,8192]``), the neighbours of a "multiples of 4" rule (1, 4, 8 and 3,
5), every allowed value plus a documented-absent one (Pow exponent 4), products either side
of their cap (Hardmax h*w = 16383 and 16384), the values a formula allows alone (h*w = 1 of
"h*w = 1 or h*w > 8") and one above. Whether a variant is documented as supported
is not decided by the proposer but by ``documented_status``, which checks the variant's
subjects against *every* limit of the operator; so a pad of 7 that needs a kernel of 8 is
honestly "outside" (because of the kernel). Each case expects a placement (on the NPU when
documented supported; CPU fallback or rejection when outside), for int8 the precision asked,
and a result matching the host reference.

A probe should cross only the bound it probes. Where a range's bound value cannot be had
alone (ONNX wants a pad below the kernel), the generator adds the nearest value that can (a
pad of 6 with a kernel of 7; a GRU batch of 8196, outside the range yet a multiple of 4), and
every case records the limit deciding its status and, when not isolable, what else it needs
(``Case.deciding_limit``, ``Case.not_isolable``). A probe that makes the model large keeps
the dimensions it does not probe small (``shrunk``): the toolkit takes minutes to build an
8M-element Transpose whose bound is on one dimension.

A case exercises what its rule names (``harness.cases.validity``): a proposal that would not
(a Transpose moving an axis of 1, a softmax over one element) is repaired where it can be
(``exercised``), else listed as unprobed with the reason, never made a case.

The generator names no operator: what a limit's subject is in a model's parameters, which
values off a documented set a model can still take, which limits it cannot express and why,
all come from the operator model's declaration (``Declarations.probing`` of the run's
vendor: the neutral operators' and its own).

Every case exists once per dtype the operator documents, plus its typical model in each
dtype it does not document (an "outside" case, e.g. int8 Div). Limits that a tiny model on
the simulator cannot probe are returned as ``Untested`` with the reason, so reports can
account for every documented limit.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from harness.cases.case import Case, CaseSet, Expect, Untested, model_seed
from harness.cases.controls import TYPICAL, with_controls
from harness.cases.validity import Degenerate, deciding_dims, degeneracy, limit_subjects
from harness.documented.formulas import applies, equalities, holds
from harness.documented.formulas import names as formula_names
from harness.documented.limits import Limit
from harness.documented.operators import CpuRule, DocumentedOperator, OperatorCatalogue
from harness.documented.properties import CPU_RULE, PLACEMENT, PRECISION, RESULT
from harness.models import Broadcast, Declarations
from harness.models.budget import SizeBudget, size_budget

DTYPES = ("int8", "float16")


def element_count(models: Declarations, op: str, params: Mapping[str, Any]) -> int:
    """Float32 elements of weights and activations: the size budget's measure."""
    return models.probing[op].size(models.subjects(op, params))


# -- the documented status of a set of subjects ---------------------------------------------


def governing_limits(catalogue: OperatorCatalogue, op: DocumentedOperator) -> list[Limit]:
    """The operator's limits plus those it adopts ("broadcasting constraints same as Expand")."""
    limits = op.limits()
    adopted = {
        str(lim.rule["same_as"])
        for lim in limits
        if lim.kind == "broadcast-support" and "same_as" in lim.rule
    }
    for name in sorted(adopted & set(catalogue.operators)):
        limits += [lim for lim in catalogue.operators[name].limits() if lim.kind == "broadcast"]
    return limits


def documented_status(
    models: Declarations,
    op: DocumentedOperator,
    limits: Iterable[Limit],
    dtype: str,
    found: Mapping[str, Any],
) -> tuple[str, ...]:
    """Ids of the ``limits`` (of ``op``) that ``found`` (subjects) and ``dtype`` break.

    A limit stated for one type variable only (Transpose's ``type: T2``) applies to the cases
    whose dtype that variable documents: ``found`` gains the ``type`` of ``dtype``."""
    broken = []
    documented = op.data_dtypes()
    if documented and dtype not in documented:
        broken.append(f"{op.name}/dtype")
    dtype_subjects = models.probing[op.name].dtype_subjects
    found = {**found, TYPE: _type_variables(limits, dtype)}
    broken += [limit.id for limit in limits if not satisfies(limit, found, dtype_subjects)]
    broken += _undocumented_constant(limits, found)
    return tuple(broken)


def _undocumented_constant(limits: Iterable[Limit], found: Mapping[str, Any]) -> list[str]:
    """A constant operand (``constant_B``) where the dtype limits list Tensor kinds only (Max:
    ``T1: int8(Tensor), float16(Tensor)``): it breaks the first of them, a reading the
    document contradicts (``CONSTANT_READING``)."""
    typed = [limit for limit in limits if limit.kind == "dtype" and limit.rule.get("kinds")]
    kinds = [str(kind) for limit in typed for kind in limit.rule["kinds"].values()]
    if not found.get(CONSTANT_OPERAND) or not typed or any("const" in kind for kind in kinds):
        return []
    return [typed[0].id]


CONSTANT_OPERAND = "constant_B"  # the subject a model reads a constant operand as
# Why a case resting on ``_undocumented_constant`` is judged doc-inconsistent: each group of
# the operator lists types Add's constant operand apart from its Tensors, yet Convolution's
# weight, a constant in every model, as a Tensor only.
CONSTANT_READING = (
    "whether a constant operand is among Tensor-only types the document does not say "
    "consistently: Add/dtype/T2 types a constant operand 'float(const Tensor)', apart from "
    "T1's Tensors, while Convolution/dtype/T1 types Convolution's weight, a constant, "
    "'int8(Tensor), float16(Tensor)'"
)


def _inconsistent(limits: Iterable[Limit], found: Mapping[str, Any]) -> dict[str, str]:
    """Limit id -> why the document contradicts itself there, for a case with subjects
    ``found``: the catalogue's marks, and the dtype limit a constant operand breaks."""
    marked = {limit.id: limit.inconsistent for limit in limits if limit.inconsistent}
    return dict.fromkeys(_undocumented_constant(limits, found), CONSTANT_READING) | marked


TYPE = "type"  # the condition key naming type variables


def _type_variables(limits: Iterable[Limit], dtype: str) -> frozenset[str]:
    """The type variables whose Tensor types include ``dtype``."""
    return frozenset(
        limit.subject
        for limit in limits
        if limit.kind == "dtype" and limit.rule.get("kinds", {}).get(dtype) == "Tensor"
    )


def _key(limit: Limit) -> str:
    return str(limit.rule.get("element", limit.subject))


def condition_applies(limit: Limit, found: Mapping[str, Any]) -> bool:
    return all(_one_of(found.get(k), allowed) for k, allowed in limit.condition.items())


def _one_of(value: Any, allowed: Iterable[Any]) -> bool:
    """Whether a subject's value is among a condition's; a document's ``3/-1`` or ``T1/T2``
    names either, and ``type`` holds every variable of the case's dtype."""
    if isinstance(value, frozenset):
        return any(part in value for option in allowed for part in str(option).split("/"))
    return value in allowed or any(
        str(value) in str(option).split("/") for option in allowed if isinstance(option, str)
    )


def satisfies(limit: Limit, found: Mapping[str, Any], dtype_subjects: Mapping[str, str]) -> bool:
    """Whether subjects ``found`` keep ``limit``; one whose condition does not apply, or over a
    subject ``found`` lacks, is kept."""
    if not condition_applies(limit, found) or not applies(limit.rule, found):
        return True
    key = _key(limit)
    kind = limit.kind
    if kind == "range" and key in found and limit.interval is not None:
        return found[key] in limit.interval
    if kind == "multiple-of" and key in found:
        value = found[key]
        return value <= limit.rule["when_greater_than"] or value % limit.rule["multiple_of"] == 0
    if kind in ("values", "fixed", "enum") and key in found and limit.values is not None:
        return found[key] in limit.values
    if kind == "unsupported" and key in found:
        return not found[key]
    if kind == "absent":
        return False
    if kind == "product" and "expression" in limit.rule:  # an operator list's: when, at_most
        return holds(limit.rule, found)
    if kind == "product":
        factors = limit.rule["factors"]
        if all(f in found for f in factors):
            return math.prod(found[f] for f in factors) < limit.rule["less_than"]
    if kind == "formula":
        return holds(limit.rule, found)
    if kind == "broadcast" and found.get("form") == form_text(limit.rule["from"]) and key in found:
        assert limit.interval is not None
        return found[key] in limit.interval
    if kind == "broadcast-support" and limit.values and "form" in found:  # the forms it lists
        return found["form"] in {form_text(str(value)) for value in limit.values}
    if kind == "dtype" and dtype_subjects.get(limit.subject) in found:
        return found[dtype_subjects[limit.subject]] in (limit.values or ())
    return True


def form_text(text: str) -> str:
    """A broadcast form as the models write it: ``[b, c, 1, w]`` is ``[b,c,1,w]``."""
    return text.replace(" ", "")


def _same_statement(a: Limit, b: Limit) -> bool:
    """Whether two limits state one thing (GRU's batch_size range, repeated per tensor)."""
    return (a.kind, _key(a), a.interval, a.values, dict(a.condition), dict(a.rule)) == (
        b.kind,
        _key(b),
        b.interval,
        b.values,
        dict(b.condition),
        dict(b.rule),
    )


def _crossed_besides(bound: Limit, broken: Iterable[str], limits: Sequence[Limit]) -> list[Limit]:
    """Of the ``broken`` limit ids, the limits other than ``bound`` (and its restatements),
    one per statement."""
    crossed: list[Limit] = []
    for limit in limits:
        if limit.id in broken and not any(
            _same_statement(limit, seen) for seen in (bound, *crossed)
        ):
            crossed.append(limit)
    return crossed


def _decision(
    bound: str, broken: tuple[str, ...], limits: Sequence[Limit], found: Mapping[str, Any]
) -> tuple[str, str]:
    """``Case.deciding_limit`` and ``Case.not_isolable`` of a case probing ``bound``."""
    if not broken:
        return "", ""
    probed = next((limit for limit in limits if limit.id == bound), None)
    if probed is None:  # the operator's data dtype, or a typical model of an absent operator
        return (bound if bound in broken else broken[0]), ""
    reasons = []
    for other in _crossed_besides(probed, broken, limits):
        key = _key(other)
        differs = key in found and key != _key(probed)
        reasons.append(f"needs {key}={found[key]}" if differs else f"also crosses {other.id}")
    return (bound if bound in broken else broken[0]), "; ".join(reasons)


# -- proposing variants ---------------------------------------------------------------------


class Variant(NamedTuple):
    what: str  # what is probed, e.g. "kernel_h=8"
    params: dict[str, Any]  # the parameter overrides
    bound: str = ""  # the limit id whose bound it sits at, when not the proposing limit's


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
        return _probes(models, op.name, base, _key(limit), lower)
    key, (lo, hi) = _key(limit), limit.interval.integer_bounds()
    probes = _range_probes(limit)

    def alone(value: int) -> bool:
        found = models.subjects(op.name, models.with_subject(op.name, base, key, value))
        broken = documented_status(models, op, limits, (*op.data_dtypes(), *DTYPES)[0], found)
        return not _crossed_besides(limit, broken, limits)

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
    return _probes(models, op.name, base, key, probes)


def _condition_params(limit: Limit) -> dict[str, Any]:
    """The parameters a conditional limit needs: each condition's first value (of a
    document's ``3/-1``, the first); a type variable is left to the case's dtype."""
    params: dict[str, Any] = {}
    for key, values in limit.condition.items():
        first = values[0]
        if isinstance(first, str) and re.fullmatch(r"-?\d+(/-?\d+)+", first):
            first = int(first.split("/")[0])
        if key != TYPE:
            params[key] = first
    return params


def _variants(
    models: Declarations, op: DocumentedOperator, limit: Limit, catalogue: OperatorCatalogue
) -> list[Variant] | str:
    """Parameter variants probing ``limit``, or the reason it cannot be probed; a limit with a
    precondition (``width < 16383`` when ``dilated_kernel_h > 1``) is probed where the
    typical model meets it, and each variant again with the precondition off."""
    when = limit.rule.get("when")
    if when and not applies(limit.rule, models.subjects(op.name, _condition_params(limit))):
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
    rule, base = limit.rule, _condition_params(limit)
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

        value = _first_flip(start, off)
        if value is None:
            continue
        found = []
        for variant in variants:
            try:
                params = models.with_subject(op, variant.params, name, value)
            except (KeyError, ValueError):
                continue
            if _builds(models, op, json.dumps(params, sort_keys=True)):
                found.append(Variant(f"{variant.what}@{name}={value}", params, variant.bound))
        if found:  # else no valid model has that value (a dilation of 0): the next quantity
            return found
    return []


def _limit_variants(
    models: Declarations, op: DocumentedOperator, limit: Limit, catalogue: OperatorCatalogue
) -> list[Variant] | str:
    name, key = op.name, _key(limit)
    kind = limit.kind
    declared = models.probing[name]
    base = _condition_params(limit)
    try:
        if kind == "range":
            return _range_variants(models, op, limit, base, governing_limits(catalogue, op))
        if kind == "multiple-of":
            step, above = limit.rule["multiple_of"], limit.rule["when_greater_than"]
            return _probes(
                models, name, base, key, sorted({above, step, 2 * step, step - 1, step + 1})
            )
        if kind in ("values", "enum"):
            assert limit.values is not None
            if len(limit.values) == 1 and key in declared.fixed:
                return f"the model builder always sets {key}={limit.values[0]}; nothing to vary"
            outside = (*declared.outside_values.get(key, ()), *set_neighbours(key, limit.values))
            return _probes(models, name, base, key, limit.values) + _expressible_probes(
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
            return _probes(models, name, base, key, [1])
        if kind == "product":
            return _product_variants(models, name, limit, base)
        if kind == "formula":
            return _formula_variants(models, name, limit, base)
        if kind == "absent":
            return [Variant(TYPICAL, {})]
        if kind == "broadcast" and declared.broadcast:
            sizes = _range_probes(limit)
            if form_text(limit.rule["from"]).strip("[]").split(",") == [
                "1" if letter == key else letter for letter in "bchw"
            ]:  # the form's one broadcast axis: from 1 to 1 would broadcast nothing
                sizes = [max(2, size) for size in sizes]
            return _broadcast_variants(declared.broadcast, limit, sizes)
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
            return _probes(models, name, {}, subject, values)
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


def _probes(
    models: Declarations, op: str, base: dict[str, Any], key: str, values: Iterable[Any]
) -> list[Variant]:
    """The model ``base`` with subject ``key`` at each of ``values``."""
    return [Variant(f"{key}={v}", models.with_subject(op, base, key, v)) for v in values]


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
    """``_probes`` of the ``values`` a valid ONNX model of ``op`` can take (a proposed value
    outside a documented set may be no valid attribute at all: a stride of 0)."""
    found = []
    for value in values:
        try:
            params = models.with_subject(op, base, key, value)
        except (KeyError, ValueError):
            continue
        if _builds(models, op, json.dumps(params, sort_keys=True)):
            found.append(Variant(f"{key}={value}", params))
    return found


def _builds(models: Declarations, op: str, params_json: str) -> bool:
    """Whether ``op``'s model with these parameters passes ONNX's checker and shape inference."""
    return _refusal(models, op, params_json) is None


@functools.lru_cache(maxsize=4096)
def _refusal(models: Declarations, op: str, params_json: str) -> str | None:
    """Why ``op``'s model with these parameters cannot be built, or None; a model over the
    size budget is not built here (its inputs alone may not fit in memory): the generator
    lists it as over the budget."""
    params = json.loads(params_json)
    if size_budget().over_elements("model", element_count(models, op, params)) is not None:
        return None
    try:
        models.build(op, params, seed=0)
    except Exception as exc:  # any refusal by the builder or ONNX means "cannot be had"
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def _product_variants(
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
        return _probes(models, op, base, factors[0], [cap - 1, cap])
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


_MODULUS = re.compile(r"(\w+(?:\*\w+)*)%(\d+)=0")


def _formula_variants(
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
    return _probes(models, op, base, first, [step, step + 1])


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

        edge = _first_flip(start, flips)
        if edge is None:
            continue
        for value in (edge, edge - 1 if edge > start else edge + 1):
            params = models.with_subject(op, base, name, value)
            if value != start and _builds(models, op, json.dumps(params, sort_keys=True)):
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
        if named and _builds(models, op, json.dumps(params, sort_keys=True)):
            what = ",".join(f"{'*'.join(factors)}={value}" for factors, value in point)
            found.append(Variant(what, params))
    return found


def _first_flip(start: int, flips: Callable[[int], bool | None]) -> int | None:
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


def _broadcast_variants(
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
            variants += _broadcast_variants(broadcast, form, sizes, prefix=limit.role)
    return variants


# -- single variants, for a search along one bound (``harness.probe``) ----------------------


def product_cap(limit: Limit) -> int:
    """The smallest product a ``product`` limit leaves outside (``< 16384``, ``<= 8192``)."""
    rule = limit.rule
    return int(rule["less_than"] if "less_than" in rule else rule["at_most"] + 1)


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
    key, declared = _key(limit), models.probing[op.name]
    base = _condition_params(limit)
    if limit.kind == "range":
        return _probes(models, op.name, base, key, [value])[0]
    if limit.kind == "broadcast" and declared.broadcast:
        return _broadcast_variants(declared.broadcast, limit, [value])[0]
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


LARGE = 1 << 20  # elements (4 MiB of float32) above which a case's bystanders are shrunk


def shrunk(
    models: Declarations,
    op: DocumentedOperator,
    limits: Sequence[Limit],
    limit: Limit,
    variant: Variant,
) -> Variant:
    """``variant``, when over ``LARGE`` elements, with the model's shrinkable dimensions it does
    not probe halved, down to 2: the probed subjects keep their values and every dtype its
    documented status (a Transpose at n1=8192 becomes [8192, 2, 2, 2], not 8M elements,
    whose build takes the toolkit minutes; h1 stays 16 where the perm wants h1%16=0)."""
    declared = models.probing[op.name]
    params = variant.params
    if not declared.shrinkable or element_count(models, op.name, params) <= LARGE:
        return variant
    named = limit_subjects(limit)
    start = _judged(models, op, limits, named, params)
    for name in declared.shrinkable:
        if name in named:
            continue
        while (value := models.subjects(op.name, params)[name]) > 2:
            smaller = models.with_subject(op.name, params, name, max(2, value // 2))
            if _judged(models, op, limits, named, smaller) != start or not _builds(
                models, op.name, json.dumps(smaller, sort_keys=True)
            ):
                break
            params = smaller
    return variant._replace(params=params)


def _judged(
    models: Declarations,
    op: DocumentedOperator,
    limits: Sequence[Limit],
    named: set[str],
    params: Mapping[str, Any],
) -> tuple[dict[str, Any], list[tuple[str, ...]]]:
    """What a resized model must keep: the ``named`` subjects' values and, in every dtype,
    the limits it breaks."""
    found = models.subjects(op.name, params)
    dtypes = list(dict.fromkeys((*op.data_dtypes(), *DTYPES)))
    held = {name: found.get(name) for name in named}
    return held, [documented_status(models, op, limits, dtype, found) for dtype in dtypes]


def exercised(
    models: Declarations,
    op: DocumentedOperator,
    limits: Sequence[Limit],
    limit: Limit | None,
    variant: Variant,
) -> Variant | Degenerate:
    """``variant``, probing ``limit``, made to exercise what its rule names
    (``harness.cases.validity``), breaking in every dtype no limit it did not break and
    ``limit`` as it did: where it is degenerate, each dimension of size 1 it does not probe
    that decides it (``validity.deciding_dims``) grown to 2 (a Transpose's batch of 1 that its
    perm moves, a softmax's batch of 1 at axis 0); where a product's factor of 1
    is what it probes (a prime 8191 is 1*8191 only), the nearest product on the same side of
    the cap whose factors are all 2 or more (``_product_moves``). Else why it stays
    degenerate."""
    probed = [limit] if limit is not None else []
    found = degeneracy(models, op.name, variant.params, probed)
    if found is None:
        return variant
    named = limit_subjects(limit) if limit is not None else set()
    start = _judged(models, op, limits, named, variant.params)[1]

    def kept(params: Mapping[str, Any]) -> bool:
        now = _judged(models, op, limits, named, params)[1]
        return all(
            set(new) <= set(old) and (probed_id in new) == (probed_id in old)
            for new, old in zip(now, start, strict=True)
            for probed_id in [limit.id if limit is not None else ""]
        )

    moves = _product_moves(models, op.name, limit, variant) if limit is not None else []
    for candidate in (variant, *moves):
        params = candidate.params
        for name in deciding_dims(models, op.name, params):
            if name in named or models.subjects(op.name, params)[name] != 1:
                continue
            larger = models.with_subject(op.name, params, name, 2)
            over = size_budget().over_elements("model", element_count(models, op.name, larger))
            if over is None and kept(larger):
                params = larger
        if (
            kept(params)
            and degeneracy(models, op.name, params, probed) is None
            and _builds(models, op.name, json.dumps(params, sort_keys=True))
        ):
            return candidate._replace(params=params)
    return found


_PRODUCT_REACH = 64  # how far from its probe a product moves looking for factors above 1


def _product_moves(
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


def variant_case(
    models: Declarations,
    catalogue: OperatorCatalogue,
    op: DocumentedOperator,
    limit: Limit,
    dtype: str,
    variant: Variant,
) -> Case:
    """The case the generator makes of ``variant`` probing ``limit`` in ``dtype``: the same
    id, documented status, deciding limit and expectations."""
    result = CaseSet()
    variant = shrunk(models, op, governing_limits(catalogue, op), limit, variant)
    _add_case(models, result, {}, set(), catalogue, op, dtype, limit, variant)
    return result.cases[0]


# -- the generator --------------------------------------------------------------------------


def operator_cases(
    catalogue: OperatorCatalogue,
    models: Declarations,
    ops: Iterable[str] | None = None,
    max_elements: int | None = None,
) -> CaseSet:
    """Every case of every operator (or of ``ops``) with the models of ``models`` (the run's
    vendor's ``Vendor.declarations``), in catalogue order, ids unique; a model
    over ``max_elements`` (default: the size budget's) is listed as unprobed instead, as are
    the limits of an operator no model is declared for."""
    budget = SizeBudget(max_elements) if max_elements is not None else size_budget()
    result = CaseSet()
    by_params: dict[tuple[str, str, str], int] = {}
    ids: set[str] = set()  # the case ids so far, for _unique_id
    wanted = set(ops) if ops is not None else None
    for op in catalogue.operators.values():
        if wanted is not None and op.name not in wanted:
            continue
        if op.name not in models.probing:
            why = f"no model of {op.name} is declared yet (harness.models)"
            result.unprobed.extend(Untested(limit, why) for limit in op.limits())
            continue
        first = len(result.cases)  # this operator's cases start here
        proposals: list[tuple[Limit | None, Variant]] = [(None, Variant(TYPICAL, {}))]
        adopted = {limit.id for limit in op.adopted}
        governing = governing_limits(catalogue, op)
        for limit in op.limits():
            found = _variants(models, op, limit, catalogue) if limit.id not in adopted else _ADOPTED
            if isinstance(found, str):
                result.unprobed.append(Untested(limit, found))
                continue
            for variant in found:
                # a documented value the model does not build (a mode no ONNX pattern becomes)
                refused = _refusal(models, op.name, json.dumps(variant.params, sort_keys=True))
                if refused is not None and limit.kind in ("values", "enum"):
                    why = f"{variant.what}: the model cannot be built ({refused})"
                    result.unprobed.append(Untested(limit, why))
                else:
                    proposals.append((limit, shrunk(models, op, governing, limit, variant)))
        proposals.extend((None, variant) for variant in operand_forms(models, op.name))
        for probed, proposed in proposals:
            what = proposed.what
            over = budget.over_elements("model", element_count(models, op.name, proposed.params))
            if over is not None:
                assert probed is not None  # the typical model is always small
                result.unprobed.append(Untested(probed, f"{what}: {over}"))
                continue
            made = exercised(models, op, governing, probed, proposed)
            if isinstance(made, Degenerate):  # never a case: what it would run is not its rule
                if probed is None:  # the typical model and its operand forms are declared
                    raise ValueError(f"{op.name}: model {what} is {made.reason()}")
                result.unprobed.append(Untested(probed, f"{what}: {made.reason()}"))
                continue
            what, params, bound = made
            dtypes = DTYPES if probed is None else _probed_dtypes(op, probed)
            if not dtypes:
                assert probed is not None
                types = "/".join(str(t) for t in probed.condition.get(TYPE, ()))
                why = f"stated for {types}, whose dtypes are neither int8 nor float16"
                result.unprobed.append(Untested(probed, why))
            for dtype in dtypes:
                variant = Variant(what, params, bound)
                _add_case(models, result, by_params, ids, catalogue, op, dtype, probed, variant)
        result.cases[first:] = with_controls(result.cases[first:])
    return result


def operand_forms(models: Declarations, op: str) -> list[Variant]:
    """The typical model in the forms users' models take that no limit varies, each judged
    against every limit like any case: a binary operator's B as a constant (the toolkit
    rewrites a constant divisor into a Mul), of A's full shape, per channel and of one
    element; an operator with an axis on every other axis of its rank-4 input; the forms the
    model declares (``Parametrization.forms``: Gather's indices fed at run time)."""
    declared, typical = models.probing[op], models.subjects(op, {})
    proposed: dict[str, dict[str, Any]] = {}
    if declared.broadcast is not None and CONSTANT_OPERAND in declared.setters:
        out = [typical[letter] for letter in "bchw"]
        proposed["B=constant"] = models.with_subject(op, {}, CONSTANT_OPERAND, "float")
        for source in (out, [out[0], out[1], 1, 1], [1, 1, 1, 1]):
            form = "[" + ",".join(map(str, source)) + "]"
            proposed[f"B={form}"] = declared.broadcast.params(source, out)
    if isinstance(typical.get("axis"), int) and "axis" not in declared.fixed:
        for axis in range(RANK):
            if axis != typical["axis"]:
                proposed[f"axis={axis}"] = models.with_subject(op, {}, "axis", axis)
    for what, (key, value) in declared.forms.items():
        proposed[what] = models.with_subject(op, {}, key, value)
    return [
        Variant(what, params)
        for what, params in proposed.items()
        if _builds(models, op, json.dumps(params, sort_keys=True))
    ]


# A fused entry's bounds are its base entry's: probed there, the entry's cases check the fusion.
_ADOPTED = "stated by the entry this one fuses onto, and probed on that entry's operator"


def _probed_dtypes(op: DocumentedOperator, limit: Limit) -> list[str]:
    """The dtypes a limit is probed in: those the operator documents (all, when it documents
    none), of the limit's type variables when it names some."""
    limits, types = op.limits(), limit.condition.get(TYPE)
    documented = [dtype for dtype in op.data_dtypes() if dtype in DTYPES] or DTYPES
    return [
        dtype
        for dtype in documented
        if types is None or _one_of(_type_variables(limits, dtype), types)
    ]


def _add_case(
    models: Declarations,
    result: CaseSet,
    by_params: dict[tuple[str, str, str], int],
    ids: set[str],
    catalogue: OperatorCatalogue,
    op: DocumentedOperator,
    dtype: str,
    limit: Limit | None,
    variant: Variant,
) -> None:
    what, params = variant.what, variant.params
    limit_id = limit.id if limit else f"{op.name}/dtype"
    limits = governing_limits(catalogue, op)
    found = models.subjects(op.name, params)
    marked = _inconsistent(limits, found)
    key = (op.name, dtype, json.dumps(params, sort_keys=True))
    if key in by_params:
        index = by_params[key]
        existing = result.cases[index]
        # a form no limit proposes (limit None) adds nothing to a case a limit probes
        if limit is not None and limit_id not in existing.limits:
            result.cases[index] = _with_limit(existing, limit_id, marked, catalogue.cpu_rule)
        return
    case_id = _unique_id(ids, f"{catalogue.platform}/{op.name}/{dtype}/{what}", limit)
    ids.add(case_id)
    broken = documented_status(models, op, limits, dtype, found)
    if limit is None and broken and limit_id not in broken:  # a form outside another limit
        limit_id = broken[0]  # (a constant operand no dtype lists) probes that limit
    deciding, not_isolable = _decision(variant.bound or limit_id, broken, limits, found)
    stated = op.limits()
    source_limit = limit or next((lim for lim in stated if lim.kind == "dtype"), None)
    source_limit = source_limit or next(iter(stated), None)
    if source_limit is None:  # an entry that states no limit at all: only its typical cases
        source_limit = Limit(f"{op.name}/dtype", "no-limit", "", catalogue.source.file)
    seed_file, _, section = source_limit.source.partition(" § ")
    by_params[key] = len(result.cases)
    result.cases.append(
        Case(
            id=case_id,
            platform=catalogue.platform,
            op=op.name,
            dtype=dtype,
            limit=limit_id,
            value=what,
            documented="outside" if broken else "supported",
            params=params,
            seed=model_seed(op.name, params),
            source={"seed": seed_file, "section": section, "text": source_limit.text},
            layer_types=models.layer_types(op.name),
            limits=(limit_id,),
            outside_because=broken,
            expects=_expects(
                (limit_id,), broken, dtype, marked, deciding, not_isolable, catalogue.cpu_rule
            ),
            deciding_limit=deciding,
            not_isolable=not_isolable,
        )
    )


def _unique_id(taken: set[str], case_id: str, limit: Limit | None) -> str:
    """``case_id``, or when another model already has it (the same value probed under another
    condition: Transpose's h1=16 for each perm) the id with the condition appended."""
    if case_id not in taken:
        return case_id
    condition = ",".join(f"{k}={v}" for k, v in _condition_params(limit).items()) if limit else ""
    candidate = f"{case_id}@{condition}" if condition else case_id
    index = 2
    while candidate in taken:
        candidate, index = f"{case_id}@{condition}#{index}", index + 1
    return candidate


def _with_limit(
    case: Case, limit_id: str, marked: Mapping[str, str], cpu_rule: CpuRule | None
) -> Case:
    limits = (*case.limits, limit_id)
    expects = _expects(
        limits,
        case.outside_because,
        case.dtype,
        marked,
        case.deciding_limit,
        case.not_isolable,
        cpu_rule,
    )
    return replace(case, limits=limits, expects=expects)


def _expects(
    limits: tuple[str, ...],
    broken: tuple[str, ...],
    dtype: str,
    marked: Mapping[str, str],
    deciding: str,
    not_isolable: str,
    cpu_rule: CpuRule | None,
) -> tuple[Expect, ...]:
    """Where the op runs (the NPU when documented supported; an outside case names the limit
    deciding it), in the precision asked (int8 cases), that nothing lands on a CPU the
    platform's rule says cannot run it, and that its output is right; each naming the limits
    of ``marked`` (limit id -> why the document contradicts itself) the case probes or
    breaks."""
    why = f"; not isolable: {not_isolable}" if not_isolable else ""
    where = (
        f"CPU fallback or rejected (outside: {', '.join(broken)}; decided by {deciding}{why})"
        if broken
        else "on the NPU (documented supported)"
    )
    inconsistent = tuple(
        f"{i}: {marked[i]}" for i in dict.fromkeys((*limits, *broken)) if i in marked
    )
    expects = [Expect(PLACEMENT, limits, where, not broken, inconsistent)]
    if dtype == "int8":
        asked = "the layers under test run in int8, as the build asks"
        expects.append(Expect(PRECISION, limits, asked, "int8", inconsistent))
    if cpu_rule is not None:
        runs = tuple(op.lower() for op in cpu_rule.operators)
        expects.append(Expect(CPU_RULE, limits, f"{cpu_rule.text} ({cpu_rule.source})", runs))
    result = "the output matches the host reference"
    return (*expects, Expect(RESULT, limits, result, inconsistent=inconsistent))
