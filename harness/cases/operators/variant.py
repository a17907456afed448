"""A variant of an operator's typical model, and whether it can be built."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from harness.cases.operators.status import TYPE
from harness.documented.limits import Limit
from harness.models import Declarations
from harness.models.budget import size_budget


class Variant(NamedTuple):
    what: str  # what is probed, e.g. "kernel_h=8"
    params: dict[str, Any]  # the parameter overrides
    bound: str = ""  # the limit id whose bound it sits at, when not the proposing limit's


def element_count(models: Declarations, op: str, params: Mapping[str, Any]) -> int:
    """Float32 elements of weights and activations: the size budget's measure."""
    return models.probing[op].size(models.subjects(op, params))


def probe_variants(
    models: Declarations, op: str, base: dict[str, Any], key: str, values: Iterable[Any]
) -> list[Variant]:
    """The model ``base`` with subject ``key`` at each of ``values``."""
    return [Variant(f"{key}={v}", models.with_subject(op, base, key, v)) for v in values]


def builds(models: Declarations, op: str, params_json: str) -> bool:
    """Whether ``op``'s model with these parameters passes ONNX's checker and shape inference."""
    return refusal(models, op, params_json) is None


@functools.lru_cache(maxsize=4096)
def refusal(models: Declarations, op: str, params_json: str) -> str | None:
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


def condition_params(limit: Limit) -> dict[str, Any]:
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
