"""The toolkit's own operators of the operator list (its ex* entries) as the ONNX patterns
the toolkit fuses into one layer of that name: exGlu, exNorm, exMatMul, exWindow,
exSDPAttention.
(exGelu, exSwish and exMish are activations: ``harness.vendors.rknn.models.activations``.)

A declaration's layer is its entry's name, so a case whose pattern the compiler did not fuse
finds none of its layers. Subjects carry the document's names (exMatMul's b, k, n, m; exNorm's
axes and mode; exWindow's mode).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from onnx import NodeProto, helper

from harness.models.builder import (
    NCHW,
    Graph,
    OperatorSpec,
    Parametrization,
    Params,
    dim_setters,
    fp16_exact,
    nchw,
    uniform,
)

# -- exGlu: GLU(a, b) = a * sigmoid(b), a and b the halves of the input along axis -----------


def _build_glu(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    axis = p.axis("axis")
    if shape[axis] % 2:
        raise p.error("axis", f"splits an odd size {shape[axis]} of shape {shape} in halves")
    half = shape[axis] // 2
    nodes = [
        helper.make_node("Split", ["X", "split"], ["a", "b"], axis=axis),
        helper.make_node("Sigmoid", ["b"], ["gate"]),
        helper.make_node("Mul", ["a", "gate"], ["Y"]),
    ]
    split = {"split": np.array([half, half], dtype=np.int64)}
    return Graph(nodes, {"X": uniform(rng, shape, -4.0, 4.0)}, ["Y"], split)


def _read_glu(p: Mapping[str, Any]) -> dict[str, Any]:
    return {**nchw(p["shape"]), "axis": p["axis"] % 4}


# -- exNorm: layer or RMS normalisation over the document's axes ------------------------------

# The document's axes, as it writes them; the spatial [2,3] is one it does not list.
NORM_AXES = ("[1]", "[1,2,3]", "[2,3]")
# The document's mean_var mode is not here: neither ONNX's MeanVarianceNormalization (left on
# the CPU) nor its formula spelled out (E[x^2] - mean^2) becomes an exNorm layer in 2.5.0.
NORM_MODES = ("layer", "rms")


def _norm_nodes(mode: str) -> list[NodeProto]:
    """X normalised into "normed": (X - mean) / sqrt(var + eps), or X / sqrt(mean(X^2) + eps)."""
    if mode == "layer":
        return [
            helper.make_node("ReduceMean", ["X", "axes"], ["mean"]),
            helper.make_node("Sub", ["X", "mean"], ["centred"]),
            helper.make_node("Mul", ["centred", "centred"], ["squares"]),
            helper.make_node("ReduceMean", ["squares", "axes"], ["var"]),
            helper.make_node("Add", ["var", "epsilon"], ["var_eps"]),
            helper.make_node("Sqrt", ["var_eps"], ["std"]),
            helper.make_node("Div", ["centred", "std"], ["normed"]),
        ]
    return [
        helper.make_node("Mul", ["X", "X"], ["squares"]),
        helper.make_node("ReduceMean", ["squares", "axes"], ["mean_square"]),
        helper.make_node("Add", ["mean_square", "epsilon"], ["ms_eps"]),
        helper.make_node("Sqrt", ["ms_eps"], ["rms"]),
        helper.make_node("Div", ["X", "rms"], ["normed"]),
    ]


def norm_axes(text: str) -> list[int]:
    return [int(axis) for axis in text.strip("[]").split(",")]


def _build_norm(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    mode = p.choice("mode", NORM_MODES)
    axes = p.choice("axes", NORM_AXES)
    epsilon = p.number("epsilon")
    if epsilon <= 0:
        raise p.error("epsilon", "must be > 0")
    nodes = _norm_nodes(mode)
    constants: dict[str, np.ndarray] = {
        "axes": np.array(norm_axes(axes), dtype=np.int64),
        "epsilon": np.array(epsilon, dtype=np.float32),
    }
    if axes == "[1]":
        # Per-channel W and B (optional in the document). Over [1,2,3] the compiler keeps a
        # full-shape W and B as separate Mul and Add layers and fails on a per-channel one.
        constants["W"] = uniform(rng, [1, shape[1], 1, 1], 0.5, 2.0)
        constants["B"] = uniform(rng, [1, shape[1], 1, 1], -1.0, 1.0)
        nodes += [
            helper.make_node("Mul", ["normed", "W"], ["scaled"]),
            helper.make_node("Add", ["scaled", "B"], ["Y"]),
        ]
    else:
        nodes[-1].output[0] = "Y"
    return Graph(nodes, {"X": uniform(rng, shape, -2.0, 2.0)}, ["Y"], constants)


def _read_norm(p: Mapping[str, Any]) -> dict[str, Any]:
    return {**nchw(p["shape"]), **{key: p[key] for key in ("mode", "axes", "epsilon")}}


# -- exMatMul: Y = A . B, the document's A [b, k, 1, n] and B [b, k, 1, m] --------------------


def _build_matmul(p: Params, rng: np.random.Generator) -> Graph:
    b, k, n, m = (p.integer(name, minimum=1) for name in ("b", "k", "n", "m"))
    # ONNX's A [1, b, n, k] times B [1, b, k, m]: the compiler lays them out as the
    # document's [b, k, 1, n] and [b, k, 1, m] (2.5.0's layer table). Both are graph inputs:
    # a constant B becomes a Conv.
    bound = 2.0 / math.sqrt(k)  # keeps the sums of k products near the inputs' range
    inputs = {
        "A": uniform(rng, [1, b, n, k], -2.0, 2.0),
        "B": uniform(rng, [1, b, k, m], -bound, bound),
    }
    return Graph([helper.make_node("MatMul", ["A", "B"], ["Y"])], inputs, ["Y"])


# -- exSDPAttention: softmax(query . key^T * scale) . value --------------------------------


def _build_sdpa(p: Params, rng: np.random.Generator) -> Graph:
    heads, channel, width = (p.integer(name, minimum=1) for name in ("batch", "channel", "width"))
    # query, key and value [1, heads, width, channel]: the compiler lays each out as the
    # document's [batch, channel, height, width] = [heads, channel, 1, width]. No mask.
    shape = [1, heads, width, channel]
    nodes = [
        helper.make_node("Transpose", ["key"], ["key_t"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["query", "key_t"], ["scores"]),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["weights"], axis=-1),
        helper.make_node("MatMul", ["weights", "value"], ["output"]),
    ]
    # The usual 1/sqrt(channel), a float scalar (the document's T3), rounded to float16.
    scale = {"scale": fp16_exact(np.array(1.0 / math.sqrt(channel), dtype=np.float32))}
    inputs = {name: uniform(rng, shape, -2.0, 2.0) for name in ("query", "key", "value")}
    return Graph(nodes, inputs, ["output"], scale)


# -- exWindow: Swin Transformer's window_partition and window_reverse ------------------------

WINDOW_MODES = ("partition", "reverse", "partition_num_first")


def _window_shapes(
    mode: str, shape: list[int], size: int
) -> tuple[list[int], list[int], list[int]]:
    """The input, the 6-D view and the output of ``mode`` on the image ``shape``."""
    batch, channel, height, width = shape
    rows, cols = height // size, width // size
    windows = [batch, channel, rows * cols, size * size]
    if mode == "reverse":
        return windows, [batch, channel, rows, cols, size, size], shape
    view = [batch, channel, rows, size, cols, size]
    if mode == "partition_num_first":
        return shape, view, [batch, rows * cols, channel, size * size]
    return shape, view, windows


def _build_window(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    size = p.integer("window_size", minimum=1)
    mode = p.choice("mode", WINDOW_MODES)
    if shape[2] % size or shape[3] % size:
        raise p.error("window_size", f"does not divide height and width of {shape}")
    source, view, out = _window_shapes(mode, shape, size)
    # partition and reverse swap the window-row and in-window-row axes (the document's
    # permute(0, 1, 2, 4, 3, 5)); partition_num_first moves the windows before the channels.
    # 2.5.0 compiles this last one to exWindow between a Transpose and a Reshape.
    perm = [0, 2, 4, 1, 3, 5] if mode == "partition_num_first" else [0, 1, 2, 4, 3, 5]
    nodes = [
        helper.make_node("Reshape", ["X", "view"], ["windows"]),
        helper.make_node("Transpose", ["windows"], ["moved"], perm=perm),
        helper.make_node("Reshape", ["moved", "out"], ["Y"]),
    ]
    shapes = {"view": np.array(view, dtype=np.int64), "out": np.array(out, dtype=np.int64)}
    return Graph(nodes, {"X": uniform(rng, source, -2.0, 2.0)}, ["Y"], shapes)


def _read_window(p: Mapping[str, Any]) -> dict[str, Any]:
    return {**nchw(p["shape"]), "mode": p["mode"], "window_size": p["window_size"]}


OPERATORS = {
    "exGlu": OperatorSpec(
        {"shape": [1, 8, 6, 8], "axis": 1},
        _build_glu,
        Parametrization(_read_glu, dim_setters(), outside_values={"axis": (2, 3)}),
    ),
    "exNorm": OperatorSpec(
        {"shape": [1, 8, 6, 8], "mode": "layer", "axes": "[1]", "epsilon": 1e-5},
        _build_norm,
        Parametrization(
            _read_norm,
            dim_setters(),
            outside_values={"axes": ("[2,3]",)},
            reduces=lambda s: tuple(NCHW[axis] for axis in norm_axes(s["axes"])),
            modes=("mode",),
        ),
    ),
    "exMatMul": OperatorSpec(
        {"b": 1, "k": 16, "n": 8, "m": 12},
        _build_matmul,
        Parametrization(
            lambda p: {key: p[key] for key in ("b", "k", "n", "m")},
            size=lambda s: s["b"] * (s["n"] * s["k"] + s["k"] * s["m"] + s["n"] * s["m"]),
        ),
    ),
    # The toolkit 2.3.2 compiles it to one exSDPAttention layer; 2.5.0's rule for it fails
    # the build under numpy 2 (TypeError: only 0-dimensional arrays can be converted to
    # Python scalars).
    "exSDPAttention": OperatorSpec(
        {"batch": 2, "channel": 8, "width": 16},
        _build_sdpa,
        Parametrization(
            lambda p: {key: p[key] for key in ("batch", "channel", "width")},
            size=lambda s: (
                5 * s["batch"] * s["channel"] * s["width"] + s["batch"] * s["width"] ** 2
            ),
            reduces=lambda s: ("width",),  # the softmax over the keys
        ),
    ),
    "exWindow": OperatorSpec(
        {"shape": [1, 4, 8, 8], "window_size": 4, "mode": "partition"},
        _build_window,
        Parametrization(_read_window, dim_setters()),
    ),
}
