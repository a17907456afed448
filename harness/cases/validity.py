"""Whether a generated case exercises what its rule names, or is degenerate.

A case is degenerate when its model does not do the thing its rule is about, so that any
verdict on it would say nothing of that rule:

- ``no-move``: a permutation that moves fewer than two axes of size > 1 (no element moves);
- ``same-move``: a permutation that moves an axis of size 1, so its data moves as another,
  simpler permutation's does (the one keeping the size-1 axes in place);
- ``size-1 reduction``: a reduction, softmax or normalisation over axes of one element in all
  (its output does not depend on the other elements), unless a limit the case probes names
  one of those axes (its rule is about that size);
- ``no broadcast``: a case probing a broadcasting limit whose operands have one shape;
- ``same output``: a mode or attribute variant whose host reference output is the typical
  value's for the same model otherwise.

What an operator's model permutes, reduces over, broadcasts and which parameters are modes
are its declaration's (``Parametrization.permutes``, ``reduces``, ``broadcast``, ``modes``).
The generator (``harness.cases.operators``) checks every case it proposes and lists one it
cannot make valid as unprobed (``DEGENERATE`` starts the reason); it never makes it a case.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

from harness.documented.formulas import names as formula_names
from harness.documented.limits import Limit
from harness.models import Declarations, ModelParamError
from harness.models.data_movement import perm_axes
from harness.models.reference import NoReferenceError, host_references

DEGENERATE = "degenerate"  # how the reason of a limit left unprobed for it starts
NO_MOVE, SAME_MOVE, SIZE_1, NO_BROADCAST, SAME_OUTPUT = (
    "no-move",
    "same-move",
    "size-1 reduction",
    "no broadcast",
    "same output",
)
FULL_FORM = "[b,c,h,w]"  # the broadcasting form of an operand of the output's shape


class Degenerate(NamedTuple):
    kind: str  # NO_MOVE, SAME_MOVE, SIZE_1, NO_BROADCAST or SAME_OUTPUT
    why: str  # what the model does instead, in plain words

    def reason(self) -> str:
        """The reason a limit's case is left unprobed: ``degenerate (kind): why``."""
        return f"{DEGENERATE} ({self.kind}): {self.why}"


def limit_subjects(limit: Limit) -> set[str]:
    """The subjects ``limit`` names: its own, its factors, its formulas' and conditions'."""
    rule = limit.rule
    own = str(rule.get("element", limit.subject))
    found = {own, *rule.get("factors", ()), *rule.get("names", ()), *limit.condition}
    for text in (rule.get("expression"), rule.get("when")):
        if isinstance(text, str):
            found |= formula_names(text)
    return found


def degeneracy(
    models: Declarations, op: str, params: Mapping[str, Any], probed: Iterable[Limit]
) -> Degenerate | None:
    """Why the model of ``op`` with ``params``, a case of the limits ``probed``, is
    degenerate, or None when it exercises what they name."""
    probed = list(probed)
    declared, found = models.probing[op], models.subjects(op, params)
    if declared.permutes is not None:
        subject, dims = declared.permutes
        moved = _movement(found[subject], [found[dim] for dim in dims])
        if moved is not None:
            return moved
    if declared.reduces is not None:
        axes = declared.reduces(found)
        named = set().union(*(limit_subjects(limit) for limit in probed))
        if all(found[axis] == 1 for axis in axes) and not named & set(axes):
            sizes = ", ".join(f"{axis}={found[axis]}" for axis in axes)
            return Degenerate(SIZE_1, f"reduces over {sizes} only")
    broadcasting = any(_broadcasts(limit) for limit in probed)
    if declared.broadcast is not None and broadcasting and found.get("form") == FULL_FORM:
        return Degenerate(
            NO_BROADCAST, f"operand {declared.broadcast.operand} has the output's shape"
        )
    return _same_output(models, op, params, found)


def deciding_dims(models: Declarations, op: str, params: Mapping[str, Any]) -> tuple[str, ...]:
    """The dimension subjects whose sizes decide whether the model of ``op`` with ``params``
    permutes or reduces anything: those its perm moves, those it reduces over."""
    declared, found = models.probing[op], models.subjects(op, params)
    dims = declared.permutes[1] if declared.permutes is not None else ()
    reduced = declared.reduces(found) if declared.reduces is not None else ()
    return tuple(dict.fromkeys((*dims, *reduced)))


def _broadcasts(limit: Limit) -> bool:
    """Whether ``limit`` is a broadcasting form's, its own or one it adopts ("same as
    Expand"): its cases broadcast an operand."""
    return limit.kind == "broadcast" or (
        limit.kind == "broadcast-support" and "same_as" in limit.rule
    )


def _movement(perm_text: Any, sizes: list[int]) -> Degenerate | None:
    perm = perm_axes(perm_text)
    large = [axis for axis in range(len(sizes)) if sizes[axis] > 1]
    order = [axis for axis in perm if axis in large]  # the axes that hold data, as moved
    if order == large:
        return Degenerate(NO_MOVE, f"perm {perm_text} of {sizes} moves no element")
    simpler = list(range(len(sizes)))  # size-1 axes kept in place, the others as perm orders
    for place, axis in zip(large, order, strict=True):
        simpler[place] = axis
    if simpler != perm:
        text = "[" + ",".join(map(str, simpler)) + "]"
        return Degenerate(SAME_MOVE, f"perm {perm_text} of {sizes} moves data as {text} does")
    return None


def _same_output(
    models: Declarations, op: str, params: Mapping[str, Any], found: Mapping[str, Any]
) -> Degenerate | None:
    """A mode of ``params`` off its typical value whose output is the typical value's."""
    defaults = models.defaults[op]
    typical = models.subjects(op, {})
    for mode in models.probing[op].modes:
        if found[mode] == typical[mode]:
            continue
        plain = {**defaults, **params, mode: defaults[mode]}
        try:
            outputs = [_outputs(models, op, p) for p in (params, plain)]
        except ModelParamError:  # the typical value does not build with the rest: it differs
            continue
        except NoReferenceError:  # no host output to compare: nothing says they are alike
            continue
        if len(outputs[0]) == len(outputs[1]) and all(
            np.array_equal(a, b) for a, b in zip(*outputs, strict=True)
        ):
            why = f"{mode}={found[mode]} gives the output of {mode}={typical[mode]}"
            return Degenerate(SAME_OUTPUT, why)
    return None


def _outputs(models: Declarations, op: str, params: Mapping[str, Any]) -> list[np.ndarray]:
    built = models.build(op, params, seed=0)
    references = host_references(built)
    return references.outputs[references.used]
