"""One tiny ONNX model per documented operator, parametrised, with seeded host inputs.

``build_model(op, params, seed, specs)`` fills the operator's defaults in, checks every value
(a nonsense value raises :class:`ModelParamError`; a value merely outside the vendor's
documented limits is built, since probing those limits is the point) and returns a
:class:`BuiltModel`.

Each operator's model also declares how the catalogue's limits map onto it
(:class:`Parametrization`). The models of a run are a :class:`Declarations`: the
vendor-neutral ones here (``DECLARATIONS``) and those of the run's vendor
(``Vendor.models``); ``subjects`` reads the documented quantities off parameters,
``with_subject`` sets one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from harness.models import (
    activations,
    convolution,
    data_movement,
    elementwise,
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
    Parametrization,
    Params,
    assemble,
)

__all__ = [
    "DECLARATIONS",
    "NCHW",
    "OPERATOR_SPECS",
    "Broadcast",
    "BuiltModel",
    "Declarations",
    "ModelParamError",
    "Parametrization",
    "build_model",
    "draw_inputs",
    "families",
]


def families(*modules: ModuleType) -> dict[str, Mapping[str, OperatorSpec]]:
    """The ``OPERATORS`` of each module by the module's name: an operator family (the
    benchmarks time each family apart)."""
    return {module.__name__.rsplit(".", 1)[-1]: module.OPERATORS for module in modules}


@dataclass(frozen=True, eq=False)
class Declarations:
    """Operator models by family, and what a vendor's toolkit adds to an operator's cases:
    the layer types its compiled model names the operator by besides the operator's own and
    the declaration's (``layers``). Whether a build rewrote a model is read against the case's
    inside control, never from a list of passes (``harness.cases.controls``)."""

    by_family: Mapping[str, Mapping[str, OperatorSpec]]
    layers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        specs = {op: spec for ops in self.by_family.values() for op, spec in ops.items()}
        object.__setattr__(self, "specs", specs)
        # Typical small values inside every documented limit, per operator; a case generator
        # overrides only the dimension or attribute it probes. A copy: changing it does not
        # change the builders.
        defaults = {op: copy.deepcopy(dict(spec.defaults)) for op, spec in specs.items()}
        object.__setattr__(self, "defaults", defaults)
        # The operators whose limits can be probed (a case source's own models declare none)
        probing = {op: spec.probing for op, spec in specs.items() if spec.probing is not None}
        object.__setattr__(self, "probing", probing)

    specs: dict[str, OperatorSpec] = field(init=False, repr=False)
    defaults: dict[str, dict[str, Any]] = field(init=False, repr=False)
    probing: dict[str, Parametrization] = field(init=False, repr=False)

    @property
    def families(self) -> dict[str, tuple[str, ...]]:
        """Family -> its operators, sorted."""
        return {family: tuple(sorted(ops)) for family, ops in self.by_family.items()}

    def __or__(self, other: Declarations) -> Declarations:
        """Both, a family of the same name in both one family; ``other`` wins a clash."""
        by_family = {
            family: {**self.by_family.get(family, {}), **other.by_family.get(family, {})}
            for family in {**self.by_family, **other.by_family}
        }
        layers = {
            op: (*self.layers.get(op, ()), *other.layers.get(op, ()))
            for op in {**self.layers, **other.layers}
        }
        return Declarations(by_family, layers)

    def layer_types(self, op: str) -> tuple[str, ...]:
        """The layer types a compiled model of ``op`` names it by: its name first."""
        return (op, *self.probing[op].layer_aliases, *self.layers.get(op, ()))

    def subjects(self, op: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """The documented quantities (dims, attributes) the model of ``op`` with ``params``
        has."""
        probing = self.probing[op]
        return {**probing.fixed, **probing.read({**self.defaults[op], **params})}

    def with_subject(
        self, op: str, params: Mapping[str, Any], key: str, value: Any
    ) -> dict[str, Any]:
        """``params`` (defaults filled in) with the subject ``key`` set: the inverse of
        ``subjects``. Raises KeyError when the model has no parameter expressing ``key``."""
        p = copy.deepcopy({**self.defaults[op], **params})
        setter = self.probing[op].setters.get(key)
        if setter is not None:
            setter(p, value)
        elif key in p and not isinstance(p[key], list):  # a scalar parameter of the same name
            p[key] = value
        else:
            raise KeyError(f"{op}: no model parameter for subject {key!r}")
        return p

    def build(self, op: str, params: Mapping[str, Any], seed: int) -> BuiltModel:
        return build_model(op, params, seed, self.specs)


# The vendor-neutral operators' models; a vendor adds its own (``Vendor.models``).
DECLARATIONS = Declarations(
    families(
        elementwise,
        pooling,
        recurrent,
        shape_ops,
        data_movement,
        activations,
        convolution,
        resize,
        normalization,
    )
)
OPERATOR_SPECS = DECLARATIONS.specs  # what a model is built from when no other is given


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
        build_config=graph.build_config,
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
