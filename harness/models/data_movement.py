"""Data-movement operators of the full operator list: Transpose, Reshape, Concat, Slice, Split,
Tile. Each moves a seeded 4-D input without arithmetic, so host and NPU results compare exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from onnx import helper

from harness.models.builder import (
    NCHW,
    Graph,
    OperatorSpec,
    Parametrization,
    Params,
    dim_setters,
    nchw,
    shape_reader,
    uniform,
)

SHAPE_DIMS = dim_setters()  # batch..width of the one input "shape"

# -- Transpose: the document's own names, n1 c1 h1 w1 in and n2 c2 h2 w2 out ------------------

TRANSPOSE_IN = ("n1", "c1", "h1", "w1")
TRANSPOSE_OUT = ("n2", "c2", "h2", "w2")


def perm_text(perm: list[int]) -> str:
    """A permutation as the document writes it in a condition: ``[0,2,3,1]``, no spaces."""
    return "[" + ",".join(str(axis) for axis in perm) + "]"


def perm_axes(value: Any) -> list[int]:
    """The axes of ``perm`` given as the document's text (``"[0,2,3,1]"``) or as a list."""
    if isinstance(value, str):
        return [int(a) for a in value.replace(" ", "").strip("[]").split(",")]
    return list(value)


def _perm(p: Params) -> list[int]:
    """``perm``, checked and kept as the document's text."""
    try:
        axes = perm_axes(p.raw("perm"))
    except (TypeError, ValueError):
        raise p.error("perm", "must be a permutation like '[0,2,3,1]'") from None
    if sorted(axes) != [0, 1, 2, 3] or any(isinstance(a, bool) for a in axes):
        raise p.error("perm", "must be a permutation of 0, 1, 2, 3")
    p.set("perm", perm_text(axes))
    return axes


def _build_transpose(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    node = helper.make_node("Transpose", ["X"], ["Y"], perm=_perm(p))
    return Graph([node], {"X": uniform(rng, shape, -2.0, 2.0)}, ["Y"])


def _read_transpose(p: Mapping[str, Any]) -> dict[str, Any]:
    shape, perm = p["shape"], perm_axes(p["perm"])
    found: dict[str, Any] = dict(zip(TRANSPOSE_IN, shape, strict=True))
    found |= {name: shape[axis] for name, axis in zip(TRANSPOSE_OUT, perm, strict=True)}
    # The RK3566/RK3568 section writes the batch of some lines as plain "n".
    return found | {"n": shape[0], "perm": perm_text(perm)}


def _set_perm(p: dict[str, Any], value: Any) -> None:
    p["perm"] = value


TRANSPOSE = OperatorSpec(
    # h1 and w1 multiples of 16 with h1*w1 < 2*q (q=2048, RK3588): inside every perm's limits
    # of every group but RK3566/RK3568, which documents only the identity (a no-op) supported.
    {"shape": [1, 4, 16, 16], "perm": "[0,2,3,1]"},
    _build_transpose,
    Parametrization(
        read=_read_transpose,
        setters={
            **dict(zip(TRANSPOSE_IN, SHAPE_DIMS.values(), strict=True)),
            "n": SHAPE_DIMS["batch"],
            "perm": _set_perm,
        },
        size=lambda s: 2 * math.prod(s[d] for d in TRANSPOSE_IN),
        unprobed={"free-text": "RK3566/RK3568's either-or shape rules are words, not limits"},
        shrinkable=TRANSPOSE_IN,
        permutes=("perm", TRANSPOSE_IN),
    ),
)

# -- Reshape, Concat, Slice, Split, Tile: rank-4 in and out, dims named batch..width ----------


def _build_reshape(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    if p.raw("output_shape") is None:
        # [b, h, c, w]: a reshape that changes the NPU's channel-blocked layout, so data moves.
        out = [shape[0], shape[2], shape[1], shape[3]]
        p.set("output_shape", out)
    else:
        out = p.shape("output_shape")
    if math.prod(out) != math.prod(shape):
        raise p.error(
            "output_shape",
            f"holds {math.prod(out)} elements, shape {shape} holds {math.prod(shape)}",
        )
    node = helper.make_node("Reshape", ["X", "shape"], ["Y"])
    target = {"shape": np.array(out, dtype=np.int64)}
    return Graph([node], {"X": uniform(rng, shape, -2.0, 2.0)}, ["Y"], target)


def _set_reshape_dim(p: dict[str, Any], axis: int, value: int) -> None:
    p["shape"][axis] = value
    p["output_shape"] = None  # derived again from the new input shape


def _build_concat(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    axis = p.axis("axis")
    count = p.integer("inputs", minimum=1)
    names = [f"X{i}" for i in range(count)]
    node = helper.make_node("Concat", names, ["Y"], axis=axis)
    return Graph([node], {n: uniform(rng, shape, -2.0, 2.0) for n in names}, ["Y"])


def _read_axis(p: Mapping[str, Any]) -> dict[str, Any]:
    # The document lists axes by position: -1 of a 4-D input reads as 3.
    return {**nchw(p["shape"]), "axis": p["axis"] % 4}


def _build_slice(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    axes = p.integers("axes", None, minimum=-4)
    starts = p.integers("starts", len(axes), minimum=-(2**62))
    ends = p.integers("ends", len(axes), minimum=-(2**62))
    steps = p.integers("steps", len(axes), minimum=-(2**62))
    if max(axes) > 3 or len({a % 4 for a in axes}) != len(axes):
        raise p.error("axes", "must be distinct axes of a 4-D input")
    if 0 in steps:
        raise p.error("steps", "must not be 0")
    out = np.empty(shape)[
        tuple(
            slice(starts[axes.index(a)], ends[axes.index(a)], steps[axes.index(a)])
            if a in axes
            else slice(None)
            for a in range(4)
        )
    ].shape
    if 0 in out:
        raise p.error("ends", f"leaves an empty slice of shape {shape}")
    consts = {
        name: np.array(values, dtype=np.int64)
        for name, values in (("starts", starts), ("ends", ends), ("axes", axes), ("steps", steps))
    }
    node = helper.make_node("Slice", ["X", *consts], ["Y"])
    return Graph([node], {"X": uniform(rng, shape, -2.0, 2.0)}, ["Y"], consts)


def _build_split(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    axis = p.axis("axis")
    count = p.integer("outputs", minimum=1)
    size = shape[axis]
    if count > size:
        raise p.error("outputs", f"more parts than the {size} elements of axis {axis}")
    # ONNX's num_outputs rule, spelled out as an explicit split for older loaders.
    part = math.ceil(size / count)
    sizes = [part] * (count - 1) + [size - part * (count - 1)]
    if sizes[-1] < 1:
        raise p.error("outputs", f"{size} elements of axis {axis} do not split {count} ways")
    names = [f"Y{i}" for i in range(count)]
    node = helper.make_node("Split", ["X", "split"], names, axis=axis)
    split = {"split": np.array(sizes, dtype=np.int64)}
    return Graph([node], {"X": uniform(rng, shape, -2.0, 2.0)}, names, split)


def _build_tile(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    repeats = p.integers("repeats", 4, minimum=1)
    node = helper.make_node("Tile", ["X", "repeats"], ["Y"])
    consts = {"repeats": np.array(repeats, dtype=np.int64)}
    return Graph([node], {"X": uniform(rng, shape, -2.0, 2.0)}, ["Y"], consts)


def _slice_dim(p: dict[str, Any], axis: int, value: int) -> None:
    p["shape"][axis] = value
    axes = [a % 4 for a in p["axes"]]
    if axis in axes and p["starts"][axes.index(axis)] >= value:
        p["starts"][axes.index(axis)] = value - 1  # the slice keeps the axis's last element


def _split_dim(p: dict[str, Any], axis: int, value: int) -> None:
    p["shape"][axis] = value
    if axis == p["axis"] % 4:
        p["outputs"] = min(p["outputs"], value)


def _set_split_axis(p: dict[str, Any], value: Any) -> None:
    """The axis split, grown to hold a part per output (a batch of 1 splits no two ways)."""
    p["axis"] = value
    p["shape"][value % 4] = max(p["shape"][value % 4], p["outputs"])


OPERATORS = {
    "Transpose": TRANSPOSE,
    "Reshape": OperatorSpec(
        {"shape": [1, 4, 6, 8], "output_shape": None},
        _build_reshape,
        Parametrization(shape_reader(), dim_setters(_set_reshape_dim)),
    ),
    "Concat": OperatorSpec(
        {"shape": [1, 4, 6, 8], "axis": 1, "inputs": 2},
        _build_concat,
        Parametrization(
            _read_axis, dim_setters(), size=lambda s: 4 * math.prod(s[d] for d in NCHW)
        ),
    ),
    # Rows 1-4 and columns 2-6: both axes cut at both ends. Steps stay 1: the document
    # allows others only in a narrow case (height*width == 1 and channel alignment).
    "Slice": OperatorSpec(
        {"shape": [1, 4, 6, 8], "starts": [1, 2], "ends": [5, 7], "axes": [2, 3], "steps": [1, 1]},
        _build_slice,
        Parametrization(shape_reader("starts", "ends", "axes", "steps"), dim_setters(_slice_dim)),
    ),
    "Split": OperatorSpec(
        {"shape": [1, 4, 6, 8], "axis": 1, "outputs": 2},
        _build_split,
        Parametrization(_read_axis, {**dim_setters(_split_dim), "axis": _set_split_axis}),
    ),
    "Tile": OperatorSpec(
        {"shape": [1, 4, 3, 4], "repeats": [1, 1, 2, 2]},
        _build_tile,
        # The toolkit rewrites a Tile along the batch into an Expand layer.
        Parametrization(
            shape_reader("repeats"),
            dim_setters(),
            layer_aliases=("Expand",),
            size=lambda s: (1 + math.prod(s["repeats"])) * math.prod(s[d] for d in NCHW),
        ),
    ),
}
