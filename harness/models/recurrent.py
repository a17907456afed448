"""Recurrent operators: GRU and LSTM, weights as seeded initializers, sequence_lens omitted."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from harness.models.builder import Graph, OperatorSpec, Params, uniform

DIRECTIONS = ("forward", "reverse", "bidirectional")
RECURRENT_DEFAULTS = {
    "seq_length": 4,
    "batch_size": 1,
    "input_size": 8,
    "hidden_size": 8,
    "direction": "forward",
}


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
        # PyTorch's initialisation range keeps the gates away from saturation.
        bound = 1.0 / np.sqrt(hidden)
        x = uniform(rng, [seq, batch, inputs], -1.0, 1.0)
        weights = {
            "W": uniform(rng, [dirs, gates * hidden, inputs], -bound, bound),
            "R": uniform(rng, [dirs, gates * hidden, hidden], -bound, bound),
            "B": uniform(rng, [dirs, 2 * gates * hidden], -bound, bound),
        }
        node = helper.make_node(op, ["X", "W", "R", "B"], outputs, **attrs)
        return Graph([node], {"X": x}, outputs, weights)

    return OperatorSpec(defaults, build)


OPERATORS = {
    "GRU": _recurrent("GRU", 3, ["Y", "Y_h"]),
    "LSTM": _recurrent("LSTM", 4, ["Y", "Y_h", "Y_c"]),
}
