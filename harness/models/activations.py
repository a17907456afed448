"""Activations: one declaration factory for the unary operators (Relu, Sigmoid, Clip/ReLU6...)
and the ONNX pattern of each activation, which the fused convolutions reuse after their Conv.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import NodeProto, helper

from harness.models.builder import (
    Graph,
    OperatorSpec,
    Parametrization,
    Params,
    dim_setters,
    shape_reader,
    uniform,
)

# The activation's nodes from ``src`` to ``dst`` for ``channels`` channels, with their constants.
Nodes = tuple[list[NodeProto], dict[str, np.ndarray]]
Pattern = Callable[[str, str, int, np.random.Generator], Nodes]


@dataclass(frozen=True)
class Activation:
    pattern: Pattern
    # Input range: wide enough that every piece of the curve (Clip's 6, HardSigmoid's
    # saturation at +-2.5) is reached.
    span: float = 4.0


def _plain(op: str, **attrs: Any) -> Pattern:
    def pattern(src: str, dst: str, channels: int, rng: np.random.Generator) -> Nodes:
        return [helper.make_node(op, [src], [dst], **attrs)], {}

    return pattern


def _clip(src: str, dst: str, channels: int, rng: np.random.Generator) -> Nodes:
    # ReLU6 as exported: Clip with constant min 0 and max 6.
    bounds = {f"{dst}_min": np.array(0.0, np.float32), f"{dst}_max": np.array(6.0, np.float32)}
    return [helper.make_node("Clip", [src, *bounds], [dst])], bounds


def _prelu(src: str, dst: str, channels: int, rng: np.random.Generator) -> Nodes:
    # One slope per channel, [C, 1, 1]: the per-channel form the document lists.
    slope = {f"{dst}_slope": uniform(rng, [channels, 1, 1], 0.05, 0.5)}
    return [helper.make_node("PRelu", [src, *slope], [dst])], slope


def _swish(src: str, dst: str, channels: int, rng: np.random.Generator) -> Nodes:
    gate = f"{dst}_sigmoid"
    nodes = [
        helper.make_node("Sigmoid", [src], [gate]),
        helper.make_node("Mul", [src, gate], [dst]),
    ]
    return nodes, {}


def _gelu(src: str, dst: str, channels: int, rng: np.random.Generator) -> Nodes:
    # The exact GELU as exported before opset 20: x * 0.5 * (1 + Erf(x / sqrt(2))).
    names = [f"{dst}_{part}" for part in ("scaled", "erf", "plus1", "x")]
    constants = {
        f"{dst}_sqrt2": np.array(np.sqrt(2.0), np.float32),
        f"{dst}_one": np.array(1.0, np.float32),
        f"{dst}_half": np.array(0.5, np.float32),
    }
    sqrt2, one, half = constants
    nodes = [
        helper.make_node("Div", [src, sqrt2], [names[0]]),
        helper.make_node("Erf", [names[0]], [names[1]]),
        helper.make_node("Add", [names[1], one], [names[2]]),
        helper.make_node("Mul", [src, names[2]], [names[3]]),
        helper.make_node("Mul", [names[3], half], [dst]),
    ]
    return nodes, constants


# Non-default attributes where the ONNX default would hide a wrong one (LeakyRelu's 0.01).
ACTIVATIONS: dict[str, Activation] = {
    "Relu": Activation(_plain("Relu")),
    "Sigmoid": Activation(_plain("Sigmoid"), 6.0),
    "Tanh": Activation(_plain("Tanh")),
    "LeakyRelu": Activation(_plain("LeakyRelu", alpha=0.125)),
    "PRelu": Activation(_prelu),
    "Clip": Activation(_clip, 8.0),
    "HardSigmoid": Activation(_plain("HardSigmoid", alpha=0.25, beta=0.5)),
    "HardSwish": Activation(_plain("HardSwish")),
    "Elu": Activation(_plain("Elu", alpha=0.5)),
    "Softplus": Activation(_plain("Softplus")),
    "Mish": Activation(_plain("Mish")),
    "Swish": Activation(_swish),
    "Gelu": Activation(_gelu),
}

# The unary operators: the document names each entry after its activation (the list's
# "Clip/ReLU6" is Clip).
UNARY = (
    "Relu",
    "Sigmoid",
    "Tanh",
    "LeakyRelu",
    "PRelu",
    "Clip",
    "HardSigmoid",
    "HardSwish",
    "Elu",
    "Softplus",
)


def unary(name: str) -> OperatorSpec:
    """The activation ``name`` alone on one 4-D input."""
    activation = ACTIVATIONS[name]

    def build(p: Params, rng: np.random.Generator) -> Graph:
        shape = p.shape("shape")
        x = uniform(rng, shape, -activation.span, activation.span)
        nodes, constants = activation.pattern("X", "Y", shape[1], rng)
        return Graph(nodes, {"X": x}, ["Y"], constants)

    probing = Parametrization(shape_reader(), dim_setters())
    return OperatorSpec({"shape": [1, 4, 6, 8]}, build, probing)


OPERATORS = {name: unary(name) for name in UNARY}
