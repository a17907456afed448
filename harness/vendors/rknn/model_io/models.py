"""Models of the model-I/O suites (seed 003): a first-layer convolution, an output probe.

``FirstConv``: the network's first layer is a Convolution, a depthwise Convolution or a
ConvTranspose with a given kernel and dilation, on a 4-D (N, C, H, W) or 3-D (N, C, W) input.
The drawn data goes through the zero-copy input buffer ``harness.vendors.rknn.model_io.layout`` lays
out for it (NHWC, width padded to ``w_stride``, the padding filled with garbage) and is read back,
in the configured input type, before it is fed; the host reference gets the data as drawn, so a
layout bug shows up as a wrong result.

``ConvOutput``: a 1x1 convolution to ``out_channels`` channels, then the last layer under test:
``Conv`` (none: the convolution is last), ``Add`` (the convolution's output added to itself, a
non-convolution last layer of the same shape) or ``Reshape`` (H and W flattened: a 3-D output).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

from harness.models import build_model
from harness.models.builder import BuiltModel, Graph, OperatorSpec, Params, uniform
from harness.vendors.rknn.model_io.layout import pack_input, unpack_input

# The seed's convolution types (the catalogue's N-formula keys) and their ONNX form.
CONV_TYPES = ("Convolution", "DepthwiseConvolution", "ConvTranspose")
# Data range each configured input type holds exactly: image bytes for the integer types,
# fp16-exact floats otherwise (None).
INPUT_DATA: dict[str, tuple[int, int] | None] = {
    "uint8": (0, 256),
    "int8": (-128, 128),
    "float16": None,
    "float32": None,
}
# Written into the width padding of the zero-copy buffer; every input type holds it exactly.
PADDING_GARBAGE = 77
LAST_LAYERS = ("Conv", "Add", "Reshape")
CONV_NODE = "conv"  # node name: the build log's rewrites and layer table refer to it
INPUT_NAME = "x"
OUTPUT_NAME = "y"


def _draw(rng: np.random.Generator, shape: list[int], input_type: str) -> np.ndarray:
    bounds = INPUT_DATA[input_type]
    if bounds is None:
        return uniform(rng, shape, -1.0, 1.0)
    return rng.integers(*bounds, size=tuple(shape)).astype(np.float32)


def zero_copy_roundtrip(data: np.ndarray, input_type: str, w_stride: int) -> np.ndarray:
    """``data`` (N, C, H, W) written to an NHWC buffer of width ``w_stride`` and read back.

    The padding holds garbage, as on a board; the result is NCHW in ``input_type``.
    """
    nhwc = data.transpose(0, 2, 3, 1).astype(input_type)
    buffer = pack_input(nhwc, "NHWC", w_stride)
    padding = pack_input(np.ones_like(nhwc), "NHWC", w_stride) == 0
    buffer[padding] = PADDING_GARBAGE
    read = unpack_input(buffer, "NHWC", data.shape[3])
    return np.ascontiguousarray(read.transpose(0, 3, 1, 2))


def _conv_node(
    conv_type: str, channels: int, kernel: list[int], dilation: list[int]
) -> onnx.NodeProto:
    dilated = [k * d - d + 1 for k, d in zip(kernel, dilation, strict=True)]
    attrs: dict[str, Any] = {"kernel_shape": kernel, "dilations": dilation}
    if conv_type == "ConvTranspose":
        # Zero pads: the toolkit rejects a first-layer ConvTranspose whose pads exceed its
        # kernel reach ("Unsupport true_pad < 0 while argb mode"); the output grows instead.
        attrs["pads"] = [0] * (2 * len(kernel))
        return helper.make_node(
            "ConvTranspose", [INPUT_NAME, "w"], [OUTPUT_NAME], CONV_NODE, **attrs
        )
    begins = [(d - 1) // 2 for d in dilated]
    attrs["pads"] = begins + [d - 1 - b for d, b in zip(dilated, begins, strict=True)]
    if conv_type == "DepthwiseConvolution":
        attrs["group"] = channels
    return helper.make_node("Conv", [INPUT_NAME, "w"], [OUTPUT_NAME], CONV_NODE, **attrs)


def _weights_shape(
    conv_type: str, channels: int, out_channels: int, kernel: list[int]
) -> list[int]:
    if conv_type == "ConvTranspose":
        return [channels, out_channels, *kernel]
    if conv_type == "DepthwiseConvolution":
        return [channels, 1, *kernel]
    return [out_channels, channels, *kernel]


def _build_first_conv(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.integers("shape", None, minimum=1)
    if len(shape) not in (3, 4):
        raise p.error("shape", "must be N, C, H, W or N, C, W")
    spatial = len(shape) - 2
    conv_type = p.choice("conv_type", CONV_TYPES)
    kernel = p.integers("kernel", spatial, minimum=1)
    dilation = p.integers("dilation", spatial, minimum=1)
    out_channels = p.integer("out_channels", minimum=1)
    input_type = p.choice("input_type", tuple(INPUT_DATA))
    w_stride = p.integer("w_stride", minimum=1)
    channels, width = shape[1], shape[-1]
    if conv_type == "DepthwiseConvolution" and out_channels != channels:
        raise p.error("out_channels", f"a depthwise convolution keeps its {channels} channels")
    if w_stride < width or (spatial == 1 and w_stride != width):
        raise p.error("w_stride", f"must be >= the width {width} (equal for a 3-D input)")
    node = _conv_node(conv_type, channels, kernel, dilation)
    weights = uniform(rng, _weights_shape(conv_type, channels, out_channels, kernel), -1.0, 1.0)
    data = _draw(rng, shape, input_type)
    fed = zero_copy_roundtrip(data, input_type, w_stride) if spatial == 2 else data
    return Graph(
        [node],
        {INPUT_NAME: data},
        [OUTPUT_NAME],
        {"w": weights},
        feeds=[fed.astype(input_type)],
    )


FIRST_CONV = OperatorSpec(
    {
        "shape": [1, 3, 3, 16],
        "conv_type": "Convolution",
        "kernel": [3, 3],
        "dilation": [1, 1],
        "out_channels": 4,
        "input_type": "float32",
        "w_stride": 16,
    },
    _build_first_conv,
)


def _build_conv_output(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    out_channels = p.integer("out_channels", minimum=1)
    last = p.choice("last_layer", LAST_LAYERS)
    n, c, h, w = shape
    conv_out = OUTPUT_NAME if last == "Conv" else "t"
    nodes = [
        helper.make_node("Conv", [INPUT_NAME, "w"], [conv_out], CONV_NODE, kernel_shape=[1, 1])
    ]
    initializers = {"w": uniform(rng, [out_channels, c, 1, 1], -1.0, 1.0)}
    if last == "Add":
        nodes.append(helper.make_node("Add", ["t", "t"], [OUTPUT_NAME], "last"))
    elif last == "Reshape":
        initializers["flat"] = np.array([n, out_channels, h * w], dtype=np.int64)
        nodes.append(helper.make_node("Reshape", ["t", "flat"], [OUTPUT_NAME], "last"))
    data = uniform(rng, shape, -1.0, 1.0)
    return Graph(nodes, {INPUT_NAME: data}, [OUTPUT_NAME], initializers)


CONV_OUTPUT = OperatorSpec(
    {"shape": [1, 8, 3, 7], "out_channels": 3, "last_layer": "Conv"}, _build_conv_output
)

MODELS = {"FirstConv": FIRST_CONV, "ConvOutput": CONV_OUTPUT}


def build_io_model(op: str, params: dict[str, Any], seed: int) -> BuiltModel:
    """A model-I/O model (``MODELS``) with ``params`` over its defaults."""
    return build_model(op, params, seed, MODELS)
