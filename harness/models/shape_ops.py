"""Data-movement operators: Expand, Gather, Hardmax, Pad."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from onnx import helper

from harness.models.builder import (
    Broadcast,
    Graph,
    OperatorSpec,
    Parametrization,
    Params,
    along_axis,
    broadcast_form,
    dim_setters,
    nchw,
    shape_reader,
    uniform,
)


def _build_expand(p: Params, rng: np.random.Generator) -> Graph:
    src, dst = p.shape("input_shape"), p.shape("output_shape")
    for axis, (s, d) in enumerate(zip(src, dst, strict=True)):
        if s not in (1, d):
            raise p.error("output_shape", f"input_shape {src} cannot expand on axis {axis}")
    node = helper.make_node("Expand", ["X", "shape"], ["Y"])
    shape = np.array(dst, dtype=np.int64)
    return Graph([node], {"X": uniform(rng, src, -2.0, 2.0)}, ["Y"], {"shape": shape})


GATHER_INDICES = ("constant", "input")  # an initializer, or a graph input fed at run time


def _build_gather(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    axis = p.axis("axis")
    size = shape[axis]
    if p.raw("indices") is None:
        # Last, first and middle position: a gather that reorders, whatever the axis size.
        indices = [size - 1, 0, size // 2]
        p.set("indices", indices)
    else:
        indices = p.integers("indices", None, minimum=-size)
        if max(indices) >= size:
            raise p.error("indices", f"entries must be within [-{size}, {size - 1}]")
    node = helper.make_node("Gather", ["X", "indices"], ["Y"], axis=axis)
    data = uniform(rng, shape, -2.0, 2.0)
    index = {"indices": np.array(indices, dtype=np.int64)}
    if p.choice("indices_from", GATHER_INDICES) == "input":  # the document's T2 int(Tensor)
        return Graph([node], {"X": data, **index}, ["Y"])
    return Graph([node], {"X": data}, ["Y"], index)


def _build_hardmax(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    axis = p.axis("axis")
    # Values in [-1, 0.5) with one planted winner in [0.75, 1) per reduced slice: a margin of
    # at least 0.25, so fp16 rounding cannot move the arg-max.
    data = uniform(rng, shape, -1.0, 0.5)
    winners = rng.integers(
        0, shape[axis], size=[1 if i == axis % 4 else s for i, s in enumerate(shape)]
    )
    np.put_along_axis(data, winners, uniform(rng, winners.shape, 0.75, 1.0), axis=axis)
    node = helper.make_node("Hardmax", ["X"], ["Y"], axis=axis)
    return Graph([node], {"X": data}, ["Y"])


PAD_MODES = ("constant", "reflect", "edge")


def _build_pad(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    pads = p.integers("pads", 8, minimum=0)  # [begin of N, C, H, W, end of N, C, H, W]
    mode = p.choice("mode", PAD_MODES)
    value = p.number("constant_value")
    if mode == "reflect" and any(
        pad >= size for pad, size in zip(pads, shape + shape, strict=True)
    ):
        raise p.error("pads", f"reflect needs every pad smaller than its dimension of {shape}")
    initializers = {"pads": np.array(pads, dtype=np.int64)}
    if mode == "constant":
        initializers["constant_value"] = np.array(value, dtype=np.float32)
    node = helper.make_node("Pad", ["X", *initializers], ["Y"], mode=mode)
    return Graph([node], {"X": uniform(rng, shape, -2.0, 2.0)}, ["Y"], initializers)


def _read_expand(p: Mapping[str, Any]) -> dict[str, Any]:
    out = list(p["output_shape"])
    return {**nchw(out), **broadcast_form(p["input_shape"], out)}


def _read_axis(p: Mapping[str, Any]) -> dict[str, Any]:
    """Dims and the axis, a negative one read as the axis it denotes (-1 of a 4-D input is 3):
    the document lists axes by position, so the notation must not decide the status."""
    return {**nchw(p["shape"]), "axis": p["axis"] % len(p["shape"])}


def _set_pad_dim(p: dict[str, Any], axis: int, value: int) -> None:
    p["shape"][axis] = value
    if p["mode"] == "reflect":  # reflect pads must be smaller than the dim
        for side in (axis, axis + 4):
            p["pads"][side] = min(p["pads"][side], value - 1)


# Values off the documented sets that ONNX still accepts: an axis, a further mode. Gather has
# none: its documented axes 0-3 are every axis of a 4-D input, however ONNX spells it.
OPERATORS = {
    "Expand": OperatorSpec(
        {"input_shape": [1, 4, 1, 8], "output_shape": [1, 4, 6, 8]},
        _build_expand,
        Parametrization(
            _read_expand,
            broadcast=Broadcast(
                "input1", lambda source, out: {"input_shape": source, "output_shape": out}
            ),
        ),
    ),
    # Axis 2: the toolkit rewrites a Gather on the channel axis into a 1x1 Conv (gather_to_conv).
    "Gather": OperatorSpec(
        {"shape": [1, 8, 4, 6], "axis": 2, "indices": None, "indices_from": "constant"},
        _build_gather,
        Parametrization(
            _read_axis,
            dim_setters(),
            unprobed={"rank": "the Gather model always feeds rank-1 indices"},
            forms={"indices=input": ("indices_from", "input")},
        ),
    ),
    "Hardmax": OperatorSpec(
        {"shape": [1, 8, 4, 6], "axis": 1},
        _build_hardmax,
        Parametrization(
            _read_axis,
            dim_setters(),
            outside_values={"axis": (0, 2)},
            reduces=along_axis,
        ),
    ),
    "Pad": OperatorSpec(
        {
            "shape": [1, 2, 4, 6],
            "pads": [0, 0, 1, 2, 0, 0, 2, 1],
            "mode": "constant",
            "constant_value": 0.5,
        },
        _build_pad,
        Parametrization(
            shape_reader("mode"),
            dim_setters(_set_pad_dim),
            outside_values={"mode": ("edge",)},
            modes=("mode",),
        ),
    ),
}
