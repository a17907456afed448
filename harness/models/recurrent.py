"""Recurrent operators: GRU and LSTM, weights as seeded initializers, sequence_lens omitted."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from onnx import helper

from harness.models.builder import Graph, OperatorSpec, Parametrization, Params, uniform

DIRECTIONS = ("forward", "reverse", "bidirectional")
RECURRENT_DEFAULTS = {
    "seq_length": 4,
    "batch_size": 1,
    "input_size": 8,
    "hidden_size": 8,
    "direction": "forward",
}


def _read(p: Mapping[str, Any]) -> dict[str, Any]:
    found = {k: p[k] for k in ("seq_length", "batch_size", "input_size", "hidden_size")}
    found["direction"] = p["direction"]
    found["num_directions"] = 2 if p["direction"] == "bidirectional" else 1
    if "linear_before_reset" in p:
        found["linear_before_reset"] = p["linear_before_reset"]
    return found


def _set_num_directions(p: dict[str, Any], value: Any) -> None:
    p["direction"] = "bidirectional" if value == 2 else "forward"


def _size(gates: int) -> Callable[[Mapping[str, Any]], int]:
    """Weights W, R, B of every direction plus the input and output sequences."""

    def size(s: Mapping[str, Any]) -> int:
        h, i, dirs = s["hidden_size"], s["input_size"], s["num_directions"]
        weights = dirs * gates * h * (i + h + 2)
        return weights + s["seq_length"] * s["batch_size"] * (i + dirs * h)

    return size


def _probing(gates: int) -> Parametrization:
    return Parametrization(
        read=_read,
        setters={"num_directions": _set_num_directions},
        size=_size(gates),
        unprobed={
            "layout": "the document's layouts are extensions an ONNX model cannot select",
            "fixed": "ONNX LSTM/GRU models cannot express this extension attribute",
        },
    )


def _recurrent(op: str, gates: int, outputs: list[str]) -> OperatorSpec:
    """An ONNX GRU (3 gates) or LSTM (4 gates) on X [seq_length, batch_size, input_size]."""
    defaults = dict(RECURRENT_DEFAULTS)
    if op == "GRU":
        defaults["linear_before_reset"] = 0  # the ONNX default; 1 is what PyTorch exports

    def build(p: Params, rng: np.random.Generator) -> Graph:
        seq, batch = p.integer("seq_length", 1), p.integer("batch_size", 1)
        inputs, hidden = p.integer("input_size", 1), p.integer("hidden_size", 1)
        direction = p.choice("direction", DIRECTIONS)
        dirs = 2 if direction == "bidirectional" else 1
        attrs: dict[str, Any] = {"hidden_size": hidden, "direction": direction}
        if op == "GRU":
            attrs["linear_before_reset"] = p.choice("linear_before_reset", (0, 1))
        # PyTorch's initialisation range keeps the gates away from saturation; the input
        # weights' range shrinks with a wider input, as their sum grows. Hand-checked: with
        # 1/sqrt(hidden) an 8192-wide input gave gate sums of std 10, and int8 rounding of
        # the inputs and weights alone moved the output by 5 of the 4 steps allowed.
        bound = 1.0 / np.sqrt(hidden)
        input_bound = 1.0 / np.sqrt(max(hidden, inputs))
        x = uniform(rng, [seq, batch, inputs], -1.0, 1.0)
        weights = {
            "W": uniform(rng, [dirs, gates * hidden, inputs], -input_bound, input_bound),
            "R": uniform(rng, [dirs, gates * hidden, hidden], -bound, bound),
            "B": uniform(rng, [dirs, 2 * gates * hidden], -bound, bound),
        }
        node = helper.make_node(op, ["X", "W", "R", "B"], outputs, **attrs)
        return Graph([node], {"X": x}, outputs, weights)

    return OperatorSpec(defaults, build, _probing(gates))


OPERATORS = {
    "GRU": _recurrent("GRU", 3, ["Y", "Y_h"]),
    "LSTM": _recurrent("LSTM", 4, ["Y", "Y_h", "Y_c"]),
}
