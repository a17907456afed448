"""The documented status of a case: which of its operator's limits its subjects break, which
limit decides it, and where the document contradicts itself."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.documented.formulas import applies, holds
from harness.documented.limits import Limit
from harness.documented.operators import DocumentedOperator, OperatorCatalogue
from harness.models import Declarations

DTYPES = ("int8", "float16")  # the data dtypes cases are made in


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
    found = {**found, TYPE: type_variables(limits, dtype)}
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


def inconsistencies(limits: Iterable[Limit], found: Mapping[str, Any]) -> dict[str, str]:
    """Limit id -> why the document contradicts itself there, for a case with subjects
    ``found``: the catalogue's marks, and the dtype limit a constant operand breaks."""
    marked = {limit.id: limit.inconsistent for limit in limits if limit.inconsistent}
    return dict.fromkeys(_undocumented_constant(limits, found), CONSTANT_READING) | marked


TYPE = "type"  # the condition key naming type variables


def type_variables(limits: Iterable[Limit], dtype: str) -> frozenset[str]:
    """The type variables whose Tensor types include ``dtype``."""
    return frozenset(
        limit.subject
        for limit in limits
        if limit.kind == "dtype" and limit.rule.get("kinds", {}).get(dtype) == "Tensor"
    )


def limit_key(limit: Limit) -> str:
    """The subject a limit bounds: its element (``kernel_h`` of ``kernel_shape``), else itself."""
    return str(limit.rule.get("element", limit.subject))


def condition_applies(limit: Limit, found: Mapping[str, Any]) -> bool:
    return all(one_of(found.get(k), allowed) for k, allowed in limit.condition.items())


def one_of(value: Any, allowed: Iterable[Any]) -> bool:
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
    key = limit_key(limit)
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
    return (a.kind, limit_key(a), a.interval, a.values, dict(a.condition), dict(a.rule)) == (
        b.kind,
        limit_key(b),
        b.interval,
        b.values,
        dict(b.condition),
        dict(b.rule),
    )


def crossed_besides(bound: Limit, broken: Iterable[str], limits: Sequence[Limit]) -> list[Limit]:
    """Of the ``broken`` limit ids, the limits other than ``bound`` (and its restatements),
    one per statement."""
    crossed: list[Limit] = []
    for limit in limits:
        if limit.id in broken and not any(
            _same_statement(limit, seen) for seen in (bound, *crossed)
        ):
            crossed.append(limit)
    return crossed


def decision(
    bound: str, broken: tuple[str, ...], limits: Sequence[Limit], found: Mapping[str, Any]
) -> tuple[str, str]:
    """``Case.deciding_limit`` and ``Case.not_isolable`` of a case probing ``bound``."""
    if not broken:
        return "", ""
    probed = next((limit for limit in limits if limit.id == bound), None)
    if probed is None:  # the operator's data dtype, or a typical model of an absent operator
        return (bound if bound in broken else broken[0]), ""
    reasons = []
    for other in crossed_besides(probed, broken, limits):
        key = limit_key(other)
        differs = key in found and key != limit_key(probed)
        reasons.append(f"needs {key}={found[key]}" if differs else f"also crosses {other.id}")
    return (bound if bound in broken else broken[0]), "; ".join(reasons)
