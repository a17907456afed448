"""Convolutions: Convolution, DepthwiseConvolution (the list's "Depthwise Convolution"),
ConvTranspose, and the fused entries (ConvolutionRelu, ConvTranposeSigmoid...) as the unfused
ONNX pattern, Conv then activation.

Subjects carry the document's names: the input's batch, channel, height, width; the weight's
output_channel, input_channel, kernel_h, kernel_w; stride_h, pads_top, dilations_h and so on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from onnx import helper

from harness.models.activations import ACTIVATIONS, Nodes
from harness.models.builder import (
    Graph,
    OperatorSpec,
    Parametrization,
    Params,
    Reader,
    Setter,
    set_shape_dim,
    uniform,
)

PADS = ("pads_top", "pads_left", "pads_bottom", "pads_right")
KINDS = ("Convolution", "DepthwiseConvolution", "ConvTranspose")


def _dilated(kernel: int, dilation: int) -> int:
    return (kernel - 1) * dilation + 1


def _output_size(kind: str, size: int, axis: int, p: Mapping[str, Any]) -> int:
    k, s, d = p["kernel"][axis], p["strides"][axis], p["dilations"][axis]
    pads = p["pads"][axis] + p["pads"][axis + 2]
    if kind == "ConvTranspose":
        return s * (size - 1) + _dilated(k, d) - pads
    return (size + pads - _dilated(k, d)) // s + 1


def _read(kind: str) -> Reader:
    def read(p: Mapping[str, Any]) -> dict[str, Any]:
        batch, channel, height, width = p["shape"]
        groups = channel if kind == "DepthwiseConvolution" else p.get("group", 1)
        out_channel = channel if kind == "DepthwiseConvolution" else p["output_channel"]
        found: dict[str, Any] = {
            "batch": batch,
            "channel": channel,
            "height": height,
            "width": width,
            "output_channel": out_channel,
            "input_channel": channel // groups,
            "group": groups,
        }
        for axis, side in enumerate("hw"):
            found[f"kernel_{side}"] = p["kernel"][axis]
            found[f"stride_{side}"] = p["strides"][axis]
            found[f"dilations_{side}"] = p["dilations"][axis]
            found[f"dilated_kernel_{side}"] = _dilated(p["kernel"][axis], p["dilations"][axis])
            found[f"output_{side}"] = _output_size(kind, p["shape"][2 + axis], axis, p)
        found |= dict(zip(PADS, p["pads"], strict=True))
        if kind == "ConvTranspose":
            # RK3566/RK3588's lines "stride_h 仅支持 1,2,4,8" and "stride_w ..." are filed
            # under the subject "strides" (V2.3.2 YAML): read when both strides agree, absent
            # (not judged by it) when they differ. "kernel (1,1) when dilated" names the pair.
            if p["strides"][0] == p["strides"][1]:
                found["strides"] = p["strides"][0]
            found["kernel"] = "({},{})".format(*p["kernel"])
        return found

    return read


def _fit_input(p: dict[str, Any]) -> None:
    """Grows height and width so the dilated kernel fits the padded input (ONNX needs it)."""
    for axis in range(2):
        need = _dilated(p["kernel"][axis], p["dilations"][axis]) - p["pads"][axis]
        need -= p["pads"][axis + 2]
        p["shape"][2 + axis] = max(p["shape"][2 + axis], need)


def _pair(name: str, axis: int) -> Setter:
    def set_value(p: dict[str, Any], value: Any) -> None:
        p[name][axis] = value
        _fit_input(p)

    return set_value


def _set_pad(index: int, fit: Callable[[dict[str, Any]], None] | None = None) -> Setter:
    def set_pad(p: dict[str, Any], value: Any) -> None:
        p["pads"][index] = value
        if fit is not None:
            fit(p)

    return set_pad


def _fit_transposed_output(p: dict[str, Any]) -> None:
    """Grows height and width so a transposed convolution's output keeps an element: its
    padding crops ``stride * (size - 1) + dilated kernel``."""
    for axis in range(2):
        crop = p["pads"][axis] + p["pads"][axis + 2]
        rest = crop + 1 - _dilated(p["kernel"][axis], p["dilations"][axis])
        need = -(-rest // p["strides"][axis]) + 1
        p["shape"][2 + axis] = max(p["shape"][2 + axis], need)


def _set_both_strides(p: dict[str, Any], value: Any) -> None:
    p["strides"] = [value, value]


def _set_kernel_pair(p: dict[str, Any], value: Any) -> None:
    """The document's "(1,1)": both kernel sizes."""
    p["kernel"] = [int(v) for v in str(value).strip("()").split(",")]


def _set_dim(axis: int) -> Setter:
    def set_dim(p: dict[str, Any], value: Any) -> None:
        set_shape_dim(p, axis, value)
        if axis == 1 and "group" in p and value % p["group"]:
            p["group"] = 1  # a channel count the groups no longer divide: ungrouped
        _fit_input(p)

    return set_dim


SETTERS: dict[str, Setter] = {
    **{name: _set_dim(axis) for axis, name in enumerate(("batch", "channel", "height", "width"))},
    **{
        f"{attr}_{side}": _pair(param, axis)
        for attr, param in (("kernel", "kernel"), ("stride", "strides"), ("dilations", "dilations"))
        for axis, side in enumerate("hw")
    },
    **{name: _set_pad(index) for index, name in enumerate(PADS)},
}


def _conv_node(kind: str, p: Params, rng: np.random.Generator, out: str) -> tuple[Graph, int]:
    """The convolution of ``kind`` from input X to ``out``; returns it and its channels out."""
    shape = p.shape("shape")
    channel = shape[1]
    kernel = p.integers("kernel", 2, minimum=1)
    strides = p.integers("strides", 2, minimum=1)
    pads = p.integers("pads", 4, minimum=0)
    dilations = p.integers("dilations", 2, minimum=1)
    if kind == "DepthwiseConvolution":
        groups, out_channel = channel, channel
    else:
        groups = p.integer("group", minimum=1)
        out_channel = p.integer("output_channel", minimum=1)
    if channel % groups or out_channel % groups:
        raise p.error("group", f"must divide channel {channel} and output_channel {out_channel}")
    for axis in range(2):
        if kind != "ConvTranspose" and (
            shape[2 + axis] + pads[axis] + pads[axis + 2] < _dilated(kernel[axis], dilations[axis])
        ):
            raise p.error("kernel", f"dilated, larger than the padded input {shape}")
    if kind == "ConvTranspose":
        weight_shape = [channel, out_channel // groups, *kernel]
        fan_in = channel // groups * kernel[0] * kernel[1]
    else:
        weight_shape = [out_channel, channel // groups, *kernel]
        fan_in = channel // groups * kernel[0] * kernel[1]
    # A 1/sqrt(fan_in) weight range keeps the output near the input's range whatever the
    # kernel, so a fp16 result stays comparable.
    bound = 1.0 / np.sqrt(fan_in)
    weights = {
        "W": uniform(rng, weight_shape, -bound, bound),
        "B": uniform(rng, [out_channel], -0.5, 0.5),
    }
    op = "ConvTranspose" if kind == "ConvTranspose" else "Conv"
    attrs: dict[str, Any] = {
        "kernel_shape": kernel,
        "strides": strides,
        "pads": pads,
        "dilations": dilations,
    }
    node = helper.make_node(op, ["X", "W", "B"], [out], group=groups, **attrs)
    x = uniform(rng, shape, -2.0, 2.0)
    return Graph([node], {"X": x}, [out], weights), out_channel


# 8 input channels: a model whose first layer is a convolution on 1, 3 or 4 channels is
# compiled in the toolkit's first-layer ("argb") input mode, which the model-input chapter
# limits (width <= 4096, for one); an operator case would then test that mode, not the entry.
CHANNELS = 8


def _defaults(kind: str) -> dict[str, Any]:
    if kind == "ConvTranspose":
        # Stride 2, kernel 2, the last row and column cropped: inside the document's
        # "stride*(height-1)-pads_top+1 < output_h is unsupported" and its siblings.
        return {
            "shape": [1, CHANNELS, 6, 8],
            "output_channel": 4,
            "kernel": [2, 2],
            "strides": [2, 2],
            "pads": [0, 0, 1, 1],
            "dilations": [1, 1],
            "group": 1,
        }
    common = {"kernel": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1]}
    if kind == "DepthwiseConvolution":
        return {"shape": [1, CHANNELS, 6, 8], **common}
    return {"shape": [1, CHANNELS, 6, 8], "output_channel": 8, **common, "group": 1}


def convolution(kind: str, fuses: str = "") -> OperatorSpec:
    """``kind`` alone, or followed by what the fused entry names: an ACTIVATIONS name, "Add"
    (a second input added) or "AddRelu"."""
    defaults = _defaults(kind)

    def build(p: Params, rng: np.random.Generator) -> Graph:
        activation = fuses
        graph, channels = _conv_node(kind, p, rng, "conv" if activation else "Y")
        if not activation:
            return graph
        if activation.startswith("Add"):
            # The second addend is a graph input: a constant one would fold into the bias.
            out_shape = [graph.inputs["X"].shape[0], channels, *_out_hw(kind, p)]
            graph.inputs["A"] = uniform(rng, out_shape, -2.0, 2.0)
            last = "sum" if activation == "AddRelu" else "Y"
            pattern: Nodes = ([helper.make_node("Add", ["conv", "A"], [last])], {})
            nodes, constants = pattern
            if activation == "AddRelu":
                nodes.append(helper.make_node("Relu", ["sum"], ["Y"]))
        else:
            nodes, constants = ACTIVATIONS[activation].pattern("conv", "Y", channels, rng)
        graph.nodes.extend(nodes)
        graph.initializers.update(constants)
        graph.outputs = ["Y"]
        return graph

    def size(s: Mapping[str, Any]) -> int:
        weights = s["output_channel"] * s["input_channel"] * s["kernel_h"] * s["kernel_w"]
        maps = s["channel"] * s["height"] * s["width"]
        maps += s["output_channel"] * s["output_h"] * s["output_w"] * (2 if fuses else 1)
        return weights + s["batch"] * maps

    setters = dict(SETTERS)
    if kind == "ConvTranspose":
        setters |= {"strides": _set_both_strides, "kernel": _set_kernel_pair}
        setters |= {name: _set_pad(i, _fit_transposed_output) for i, name in enumerate(PADS)}
    probing = Parametrization(
        read=_read(kind),
        setters=setters,
        size=size,
        fixed={"auto_pad": "NOTSET"},
    )
    return OperatorSpec(defaults, build, probing)


def _out_hw(kind: str, p: Params) -> list[int]:
    values = {name: p.raw(name) for name in ("kernel", "strides", "pads", "dilations")}
    return [_output_size(kind, p.raw("shape")[2 + axis], axis, values) for axis in range(2)]


# What the fused entries add after the convolution: ConvolutionRelu ... ConvolutionAddRelu, and
# the same but AddRelu headed "ConvTranpose" (sic, as every platform group's section has it).
FUSES: tuple[str, ...] = ("Relu", "Clip", "PRelu", "LeakyRelu", "Add", "Sigmoid", "Tanh")
FUSES += ("Softplus", "HardSigmoid", "HardSwish", "Elu", "Swish", "Mish")
FUSED = {"Convolution": (*FUSES, "AddRelu"), "ConvTranpose": FUSES}

# Each operator's convolution kind and the activation fused after it ("" for none): what a
# vendor's layer names are made of.
PARTS: dict[str, tuple[str, str]] = {
    **{kind: (kind, "") for kind in KINDS},
    **{
        f"{head}{fuses}": ("ConvTranspose" if head == "ConvTranpose" else head, fuses)
        for head, all_fuses in FUSED.items()
        for fuses in all_fuses
    },
}
OPERATORS = {op: convolution(kind, fuses) for op, (kind, fuses) in PARTS.items()}
