"""One tiny ONNX model per documented operator, parametrised, with seeded host inputs.

``build_model(op, params, seed)`` fills the operator's defaults in, checks every value (a
nonsense value raises :class:`ModelParamError`; a value merely outside the vendor's documented
limits is built, since probing those limits is the point) and returns a :class:`BuiltModel`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np

from harness.models import elementwise, pooling, recurrent, shape_ops
from harness.models.builder import BuiltModel, ModelParamError, OperatorSpec, Params, assemble

__all__ = [
    "DEFAULT_PARAMS",
    "OPERATORS",
    "OPERATOR_SPECS",
    "BuiltModel",
    "ModelParamError",
    "build_model",
]

# The documented operators' models. Other case sources (a vendor's model-I/O probes) bring
# their own declarations and pass them to ``build_model``.
OPERATOR_SPECS: dict[str, OperatorSpec] = {
    **elementwise.OPERATORS,
    **pooling.OPERATORS,
    **recurrent.OPERATORS,
    **shape_ops.OPERATORS,
}

OPERATORS: tuple[str, ...] = tuple(sorted(OPERATOR_SPECS))

# Typical small values inside every documented limit, per operator; a case generator overrides
# only the dimension or attribute it probes. A copy: changing it does not change the builders.
DEFAULT_PARAMS: dict[str, dict[str, Any]] = {
    op: copy.deepcopy(dict(spec.defaults)) for op, spec in OPERATOR_SPECS.items()
}


def build_model(
    op: str,
    params: Mapping[str, Any],
    seed: int,
    specs: Mapping[str, OperatorSpec] = OPERATOR_SPECS,
) -> BuiltModel:
    """The model of ``op`` (declared in ``specs``) with ``params`` over its defaults; inputs
    drawn from ``seed``."""
    if op not in specs:
        raise ValueError(f"unknown operator {op!r}; known: {sorted(specs)}")
    spec = specs[op]
    resolver = Params(op, spec.defaults, params)
    graph = spec.build(resolver, np.random.default_rng(seed))
    model = assemble(op, graph)
    return BuiltModel(
        op=op,
        seed=seed,
        params=resolver.resolved(),
        onnx_bytes=model.SerializeToString(),
        inputs=list(graph.inputs.values()),
        input_names=list(graph.inputs),
        output_names=list(graph.outputs),
        feeds=graph.feeds,
    )
