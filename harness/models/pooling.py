"""Pooling operators: MaxPool, AveragePool (explicit pads) and their global forms."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from harness.models.builder import Graph, OperatorSpec, Params, distinct, uniform


def _pool_input(op: str, rng: np.random.Generator, shape: list[int]) -> np.ndarray:
    # Distinct values make a max taken from the wrong window element visible.
    return distinct(rng, [shape])[0] if op.endswith("MaxPool") else uniform(rng, shape, -2.0, 2.0)


def _windowed(op: str) -> OperatorSpec:
    """MaxPool or AveragePool; pads are [top, left, bottom, right] as in ONNX."""
    defaults = {
        "shape": [1, 4, 8, 8],
        "kernel": [3, 3],
        "strides": [2, 2],
        "pads": [1, 1, 1, 1],
        "ceil_mode": 0,
    }
    if op == "AveragePool":
        defaults["count_include_pad"] = 1  # the only value the vendor table lists

    def build(p: Params, rng: np.random.Generator) -> Graph:
        shape = p.shape("shape")
        kernel = p.integers("kernel", 2, minimum=1)
        strides = p.integers("strides", 2, minimum=1)
        pads = p.integers("pads", 4, minimum=0)
        attrs: dict[str, Any] = {"kernel_shape": kernel, "strides": strides, "pads": pads}
        attrs["ceil_mode"] = p.choice("ceil_mode", (0, 1))
        if op == "AveragePool":
            attrs["count_include_pad"] = p.choice("count_include_pad", (0, 1))
        for axis in range(2):
            size, k = shape[2 + axis], kernel[axis]
            if max(pads[axis], pads[axis + 2]) >= k:
                raise p.error("pads", f"a pad must be smaller than the kernel {kernel}")
            if size + pads[axis] + pads[axis + 2] < k:
                raise p.error("kernel", f"larger than the padded input {shape}")
        node = helper.make_node(op, ["X"], ["Y"], **attrs)
        return Graph([node], {"X": _pool_input(op, rng, shape)}, ["Y"])

    return OperatorSpec(defaults, build)


def _global(op: str) -> OperatorSpec:
    def build(p: Params, rng: np.random.Generator) -> Graph:
        shape = p.shape("shape")
        node = helper.make_node(op, ["X"], ["Y"])
        return Graph([node], {"X": _pool_input(op, rng, shape)}, ["Y"])

    return OperatorSpec({"shape": [1, 8, 5, 6]}, build)


OPERATORS = {
    "MaxPool": _windowed("MaxPool"),
    "AveragePool": _windowed("AveragePool"),
    "GlobalMaxPool": _global("GlobalMaxPool"),
    "GlobalAveragePool": _global("GlobalAveragePool"),
}
