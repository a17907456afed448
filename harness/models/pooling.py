"""Pooling operators: MaxPool, AveragePool (explicit pads) and their global forms."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from onnx import helper

from harness.models.builder import (
    Graph,
    OperatorSpec,
    Parametrization,
    Params,
    Setter,
    dim_setters,
    distinct,
    nchw,
    uniform,
)

PADS = ("pad_top", "pad_left", "pad_bottom", "pad_right")


def _pool_input(op: str, rng: np.random.Generator, shape: list[int]) -> np.ndarray:
    # Distinct values make a max taken from the wrong window element visible.
    return distinct(rng, [shape])[0] if op.endswith("MaxPool") else uniform(rng, shape, -2.0, 2.0)


def _read_windowed(p: Mapping[str, Any]) -> dict[str, Any]:
    found = nchw(p["shape"])
    found |= dict(zip(("kernel_h", "kernel_w"), p["kernel"], strict=True))
    found |= dict(zip(("strides_h", "strides_w"), p["strides"], strict=True))
    found |= dict(zip(PADS, p["pads"], strict=True))
    found["ceil_mode"] = p["ceil_mode"]
    found["count_include_pad"] = p.get("count_include_pad", 1)  # MaxPool has none: the default
    return found


def _read_global(p: Mapping[str, Any]) -> dict[str, Any]:
    found = nchw(p["shape"])
    return found | {"kernel_h": found["height"], "kernel_w": found["width"]}


def _set_kernel(axis: int) -> Setter:
    def set_kernel(p: dict[str, Any], value: Any) -> None:
        p["kernel"][axis] = value
        for side in (axis, axis + 2):  # ONNX needs each pad smaller than the kernel
            p["pads"][side] = min(p["pads"][side], value - 1)
        p["shape"][2 + axis] = max(p["shape"][2 + axis], value)

    return set_kernel


def _set_strides(axis: int) -> Setter:
    def set_strides(p: dict[str, Any], value: Any) -> None:
        p["strides"][axis] = value

    return set_strides


def _set_pad(index: int) -> Setter:
    def set_pad(p: dict[str, Any], value: Any) -> None:
        p["pads"][index] = value
        axis = index % 2
        p["kernel"][axis] = max(p["kernel"][axis], value + 1)  # the kernel stays above the pad

    return set_pad


# One table for the family: a global pool has no kernel, strides or pads parameter, so those
# setters fail on it with a KeyError naming the missing parameter (left unprobed, with it).
SETTERS: dict[str, Setter] = {
    **dim_setters(),
    "kernel_h": _set_kernel(0),
    "kernel_w": _set_kernel(1),
    "strides_h": _set_strides(0),
    "strides_w": _set_strides(1),
    **{name: _set_pad(index) for index, name in enumerate(PADS)},
}
# Attributes no builder here sets: their ONNX defaults hold.
FIXED = {"auto_pad": "NOTSET", "storage_order": 0}


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

    # 0 is the value off the vendor's list an ONNX AveragePool can still take.
    outside = {"count_include_pad": (0,)} if op == "AveragePool" else {}
    modes = ("ceil_mode", "count_include_pad") if op == "AveragePool" else ("ceil_mode",)
    probing = Parametrization(
        _read_windowed, SETTERS, outside_values=outside, fixed=FIXED, modes=modes
    )
    return OperatorSpec(defaults, build, probing)


def _plane(found: Mapping[str, Any]) -> tuple[str, ...]:
    return ("height", "width")  # a global pool's window: the whole plane


def _global(op: str) -> OperatorSpec:
    def build(p: Params, rng: np.random.Generator) -> Graph:
        shape = p.shape("shape")
        node = helper.make_node(op, ["X"], ["Y"])
        return Graph([node], {"X": _pool_input(op, rng, shape)}, ["Y"])

    # The toolkit may lower a global pool to the windowed one over the whole input.
    windowed = op.removeprefix("Global")
    probing = Parametrization(
        _read_global, SETTERS, layer_aliases=(windowed,), fixed=FIXED, reduces=_plane
    )
    return OperatorSpec({"shape": [1, 8, 5, 6]}, build, probing)


OPERATORS = {
    "MaxPool": _windowed("MaxPool"),
    "AveragePool": _windowed("AveragePool"),
    "GlobalMaxPool": _global("GlobalMaxPool"),
    "GlobalAveragePool": _global("GlobalAveragePool"),
}
