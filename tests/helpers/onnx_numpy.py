"""numpy transcriptions of the ONNX operators of the full operator list's models (written from
the ONNX spec, not from the builders), in float64: what both host references must compute."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import onnx
from onnx import numpy_helper

from harness.models import BuiltModel
from harness.models.activations import UNARY
from harness.models.convolution import KINDS
from harness.models.convolution import OPERATORS as CONVOLUTIONS

Transcription = Callable[[BuiltModel], list[np.ndarray]]


def constants(built: BuiltModel) -> dict[str, np.ndarray]:
    model = onnx.load_from_string(built.onnx_bytes)
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.log1p(np.exp(x))


_erf = np.vectorize(math.erf)


# The activations with the attributes the builders give them (LeakyRelu alpha 0.125...).
ACTIVATIONS: dict[str, Callable[[np.ndarray, dict[str, np.ndarray]], np.ndarray]] = {
    "Relu": lambda x, c: np.maximum(x, 0.0),
    "Sigmoid": lambda x, c: _sigmoid(x),
    "Tanh": lambda x, c: np.tanh(x),
    "LeakyRelu": lambda x, c: np.where(x < 0, 0.125 * x, x),
    "PRelu": lambda x, c: np.where(x < 0, next(v for k, v in c.items() if "slope" in k) * x, x),
    "Clip": lambda x, c: np.clip(x, 0.0, 6.0),
    "HardSigmoid": lambda x, c: np.clip(0.25 * x + 0.5, 0.0, 1.0),
    "HardSwish": lambda x, c: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0),
    "Elu": lambda x, c: np.where(x < 0, 0.5 * (np.exp(x) - 1.0), x),
    "Softplus": lambda x, c: _softplus(x),
    "Mish": lambda x, c: x * np.tanh(_softplus(x)),
    "Swish": lambda x, c: x * _sigmoid(x),
    "Gelu": lambda x, c: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
}


def unary(name: str) -> Transcription:
    return lambda m: [ACTIVATIONS[name](m.inputs[0].astype(np.float64), constants(m))]


def _conv(x: np.ndarray, w: np.ndarray, b: np.ndarray, p: dict, groups: int) -> np.ndarray:
    """Conv: each output position sums the dilated kernel's taps over the padded input."""
    (kh, kw), (sh, sw), (dh, dw) = p["kernel"], p["strides"], p["dilations"]
    top, left, bottom, right = p["pads"]
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    out_h = (xp.shape[2] - (kh - 1) * dh - 1) // sh + 1
    out_w = (xp.shape[3] - (kw - 1) * dw - 1) // sw + 1
    per_in, per_out = x.shape[1] // groups, w.shape[0] // groups
    out = np.zeros((x.shape[0], w.shape[0], out_h, out_w))
    for g in range(groups):
        xs, ws = xp[:, g * per_in : (g + 1) * per_in], w[g * per_out : (g + 1) * per_out]
        for i in range(kh):
            for j in range(kw):
                taps = xs[
                    :, :, i * dh : i * dh + sh * out_h : sh, j * dw : j * dw + sw * out_w : sw
                ]
                out[:, g * per_out : (g + 1) * per_out] += np.einsum(
                    "nchw,oc->nohw", taps, ws[:, :, i, j]
                )
    return out + b.reshape(1, -1, 1, 1)


def _conv_transpose(
    x: np.ndarray, w: np.ndarray, b: np.ndarray, p: dict, groups: int
) -> np.ndarray:
    """ConvTranspose: each input element scatters its weighted kernel; the pads crop."""
    (kh, kw), (sh, sw), (dh, dw) = p["kernel"], p["strides"], p["dilations"]
    top, left, bottom, right = p["pads"]
    n, c, h, wd = x.shape
    per_in, per_out = c // groups, w.shape[1]
    full = np.zeros(
        (n, per_out * groups, sh * (h - 1) + (kh - 1) * dh + 1, sw * (wd - 1) + (kw - 1) * dw + 1)
    )
    for g in range(groups):
        xs, ws = x[:, g * per_in : (g + 1) * per_in], w[g * per_in : (g + 1) * per_in]
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum("nchw,co->nohw", xs, ws[:, :, i, j])
                full[
                    :,
                    g * per_out : (g + 1) * per_out,
                    i * dh : i * dh + sh * h : sh,
                    j * dw : j * dw + sw * wd : sw,
                ] += contrib
    out = full[:, :, top : full.shape[2] - bottom, left : full.shape[3] - right]
    return out + b.reshape(1, -1, 1, 1)


def convolution(fuses: str = "") -> Transcription:
    def run(m: BuiltModel) -> list[np.ndarray]:
        c = constants(m)
        x = m.inputs[0].astype(np.float64)
        w, b = c["W"].astype(np.float64), c["B"].astype(np.float64)
        transposed = "ConvTran" in m.op
        groups = x.shape[1] if m.op == "DepthwiseConvolution" else m.params["group"]
        y = (_conv_transpose if transposed else _conv)(x, w, b, m.params, groups)
        activation = m.params.get("activation", fuses)
        if activation.startswith("Add"):
            y = y + m.inputs[1]
            activation = activation.removeprefix("Add")
        return [ACTIVATIONS[activation](y, c) if activation else y]

    return run


def _slice(m: BuiltModel) -> list[np.ndarray]:
    p = m.params
    index = [slice(None)] * 4
    for axis, start, end, step in zip(p["axes"], p["starts"], p["ends"], p["steps"], strict=True):
        index[axis] = slice(start, end, step)
    return [m.inputs[0][tuple(index)]]


def _split(m: BuiltModel) -> list[np.ndarray]:
    axis, count = m.params["axis"], m.params["outputs"]
    part = math.ceil(m.inputs[0].shape[axis] / count)
    return np.split(m.inputs[0], [part * i for i in range(1, count)], axis=axis)


def _source_coordinates(out: int, size: int, scale: int, mode: str) -> np.ndarray:
    """Resize's coordinate transformation: where output index i reads in the input axis."""
    i = np.arange(out, dtype=np.float64)
    if mode == "align_corners":
        return i * (size - 1) / (out - 1) if out > 1 else np.zeros(out)
    if mode == "asymmetric":
        return i / scale
    if mode == "pytorch_half_pixel" and out == 1:
        return np.zeros(out)
    return (i + 0.5) / scale - 0.5


def _resize(m: BuiltModel) -> list[np.ndarray]:
    p, y = m.params, m.inputs[0].astype(np.float64)
    for axis in (2, 3):
        size, scale = y.shape[axis], p["scales"][axis]
        out = int(size * scale)  # ONNX floors a non-integral output size
        x = _source_coordinates(out, size, scale, p["coordinate_transformation_mode"])
        if p["mode"] == "nearest":  # nearest_mode round_prefer_floor: halves round down
            index = np.clip(np.ceil(x - 0.5), 0, size - 1).astype(int)
            y = np.take(y, index, axis=axis)
        else:
            x = np.clip(x, 0, size - 1)
            low = np.floor(x).astype(int)
            high = np.minimum(low + 1, size - 1)
            frac = (x - low).reshape([-1 if a == axis else 1 for a in range(4)])
            y = np.take(y, low, axis=axis) * (1 - frac) + np.take(y, high, axis=axis) * frac
    return [y]


def _softmax(m: BuiltModel) -> list[np.ndarray]:
    x, axis = m.inputs[0].astype(np.float64), m.params["axis"]
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return [e / e.sum(axis=axis, keepdims=True)]


def _batchnorm(m: BuiltModel) -> list[np.ndarray]:
    c = {k: v.astype(np.float64).reshape(1, -1, 1, 1) for k, v in constants(m).items()}
    x = m.inputs[0].astype(np.float64)
    normed = (x - c["mean"]) / np.sqrt(c["var"] + m.params["epsilon"])
    return [normed * c["scale"] + c["B"]]


def _glu(m: BuiltModel) -> list[np.ndarray]:
    a, b = np.split(m.inputs[0].astype(np.float64), 2, axis=m.params["axis"])
    return [a * _sigmoid(b)]


def _norm(m: BuiltModel) -> list[np.ndarray]:
    """Layer norm: (x - mean) / sqrt(var + eps); RMS norm: x / sqrt(mean(x^2) + eps); over
    the axes, then * W + B (per channel) when the model has them."""
    p, c = m.params, constants(m)
    x = m.inputs[0].astype(np.float64)
    axes = tuple(int(a) for a in p["axes"].strip("[]").split(","))
    if p["mode"] == "layer":
        x = x - x.mean(axis=axes, keepdims=True)
    y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + p["epsilon"])
    if "W" in c:
        y = y * c["W"].astype(np.float64) + c["B"].astype(np.float64)
    return [y]


def _window(m: BuiltModel) -> list[np.ndarray]:
    """Swin's window_partition / window_reverse as the document writes them in PyTorch."""
    (x,), p = m.inputs, m.params
    b, c, h, w = p["shape"]
    s = p["window_size"]
    if p["mode"] == "reverse":
        x = x.reshape(b, c, h // s, w // s, s, s).transpose(0, 1, 2, 4, 3, 5)
        return [x.reshape(b, c, h, w)]
    x = x.reshape(b, c, h // s, s, w // s, s)
    if p["mode"] == "partition_num_first":  # the windows before the channels
        return [x.transpose(0, 2, 4, 1, 3, 5).reshape(b, -1, c, s * s)]
    return [x.transpose(0, 1, 2, 4, 3, 5).reshape(b, c, -1, s * s)]


def _sdpa(m: BuiltModel) -> list[np.ndarray]:
    query, key, value = (x.astype(np.float64) for x in m.inputs)
    scores = query @ key.swapaxes(-1, -2) * constants(m)["scale"].astype(np.float64)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return [(e / e.sum(axis=-1, keepdims=True)) @ value]


def _fuses(op: str) -> str:
    """What a fused entry adds after its convolution ("" for the plain ones)."""
    return "" if op in KINDS else op.removeprefix("Convolution").removeprefix("ConvTranpose")


NUMPY: dict[str, Transcription] = {
    **{name: unary(name) for name in UNARY},
    # the toolkit's own activations (harness.vendors.rknn.models.activations)
    **{f"ex{name}": unary(name) for name in ("Swish", "Mish", "Gelu")},
    **{op: convolution(_fuses(op)) for op in CONVOLUTIONS},
    "Transpose": lambda m: [
        np.transpose(m.inputs[0], [int(a) for a in m.params["perm"].strip("[]").split(",")])
    ],
    "Reshape": lambda m: [m.inputs[0].reshape(m.params["output_shape"])],
    "Concat": lambda m: [np.concatenate(m.inputs, axis=m.params["axis"])],
    "Slice": _slice,
    "Split": _split,
    "Tile": lambda m: [np.tile(m.inputs[0], m.params["repeats"])],
    "Resize": _resize,
    "Softmax": _softmax,
    "exSoftmax13": _softmax,
    "BatchNormalization": _batchnorm,
    "exGlu": _glu,
    "exNorm": _norm,
    "exMatMul": lambda m: [m.inputs[0].astype(np.float64) @ m.inputs[1].astype(np.float64)],
    "exWindow": _window,
    "exSDPAttention": _sdpa,
    "Greater": lambda m: [np.greater(*m.inputs).astype(np.float32)],
    "Where": lambda m: [np.where(constants(m)["condition"], *m.inputs)],
}
# Selections and copies: the host references must match them exactly.
EXACT = {"Transpose", "Reshape", "Concat", "Slice", "Split", "Tile", "Min", "Relu", "Clip"}
EXACT |= {"exWindow", "Where", "Greater"}
