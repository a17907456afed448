"""One tiny ONNX model per documented operator, parametrised, with seeded host inputs.

``build_model(op, params, seed)`` fills the operator's defaults in, checks every value (a
nonsense value raises :class:`ModelParamError`; a value merely outside the vendor's documented
limits is built, since probing those limits is the point) and returns a :class:`BuiltModel`.

Each operator's model also declares how the catalogue's limits map onto it (:class:`Probing`):
``subjects`` reads the documented quantities off parameters, ``with_subject`` sets one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np

from harness.models import (
    activations,
    convolution,
    data_movement,
    elementwise,
    fused,
    normalization,
    pooling,
    recurrent,
    resize,
    shape_ops,
)
from harness.models.builder import (
    NCHW,
    Broadcast,
    BuiltModel,
    ModelParamError,
    OperatorSpec,
    Params,
    Probing,
    assemble,
)

__all__ = [
    "DEFAULT_PARAMS",
    "FAMILIES",
    "NCHW",
    "OPERATORS",
    "OPERATOR_SPECS",
    "PROBING",
    "Broadcast",
    "BuiltModel",
    "ModelParamError",
    "Probing",
    "build_model",
    "draw_inputs",
    "subjects",
    "with_subject",
]

# The documented operators' models, by the module that declares them: an operator family
# (the benchmarks time each family apart). Other case sources (a vendor's model-I/O probes)
# bring their own declarations and pass them to ``build_model``.
_FAMILY_MODULES = (
    elementwise,
    pooling,
    recurrent,
    shape_ops,
    data_movement,
    activations,
    convolution,
    resize,
    normalization,
    fused,
)
FAMILIES: dict[str, tuple[str, ...]] = {
    module.__name__.rsplit(".", 1)[-1]: tuple(sorted(module.OPERATORS))
    for module in _FAMILY_MODULES
}
OPERATOR_SPECS: dict[str, OperatorSpec] = {
    op: spec for module in _FAMILY_MODULES for op, spec in module.OPERATORS.items()
}

OPERATORS: tuple[str, ...] = tuple(sorted(OPERATOR_SPECS))

# Typical small values inside every documented limit, per operator; a case generator overrides
# only the dimension or attribute it probes. A copy: changing it does not change the builders.
DEFAULT_PARAMS: dict[str, dict[str, Any]] = {
    op: copy.deepcopy(dict(spec.defaults)) for op, spec in OPERATOR_SPECS.items()
}


def _probing(op: str, spec: OperatorSpec) -> Probing:
    if spec.probing is None:
        raise TypeError(f"operator {op} declares no Probing: its limits could not be probed")
    return spec.probing


PROBING: dict[str, Probing] = {op: _probing(op, spec) for op, spec in OPERATOR_SPECS.items()}

# The compiler passes that add layers to an operator's typical model on every build (the build
# log's fuse_ops lines, rknn-toolkit2 2.5.0): its ordinary lowering, never a rewrite meeting
# a documented edge (``harness.judge.observers.rewrite_of``).
ROUTINE_REWRITES: dict[str, tuple[str, ...]] = {
    "Div": ("convert_div_to_expand_div",),
    "Sub": ("convert_sub_to_expand_sub",),
    "PRelu": ("input_align_4D_prelu",),
    "GlobalMaxPool": ("tiling_global_maxpool",),
    "exMatMul": (
        "convert_matmul_to_exmatmul",
        "convert_reshape_to_transpose",
        "fuse_two_transpose",
    ),
}


def subjects(op: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The documented quantities (dims, attributes) the model of ``op`` with ``params`` has."""
    probing = PROBING[op]
    return {**probing.fixed, **probing.read({**DEFAULT_PARAMS[op], **params})}


def with_subject(op: str, params: Mapping[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``params`` (defaults filled in) with the subject ``key`` set: the inverse of ``subjects``.

    Raises KeyError when the model has no parameter expressing ``key``.
    """
    p = copy.deepcopy({**DEFAULT_PARAMS[op], **params})
    setter = PROBING[op].setters.get(key)
    if setter is not None:
        setter(p, value)
    elif key in p and not isinstance(p[key], list):  # a scalar parameter of the same name
        p[key] = value
    else:
        raise KeyError(f"{op}: no model parameter for subject {key!r}")
    return p


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
        calibration=graph.calibration,
        expected=graph.expected,
        nodes=tuple(node.op_type for node in model.graph.node),
    )


def draw_inputs(
    op: str,
    params: Mapping[str, Any],
    seed: int,
    specs: Mapping[str, OperatorSpec] = OPERATOR_SPECS,
) -> list[np.ndarray]:
    """The inputs ``build_model`` draws from ``seed``, without assembling and checking the
    model (further int8 calibration samples of a model built once)."""
    spec = specs[op]
    graph = spec.build(Params(op, spec.defaults, params), np.random.default_rng(seed))
    return list(graph.inputs.values())
