"""``hil layout rknn-input`` and ``hil layout rknn-output``: RKNN zero-copy buffer layouts
(``harness.vendors.rknn.model_io.layout``), printed like every ``hil layout`` rule."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from harness.layout.command import Result, add_command, ints
from harness.vendors.rknn.model_io import layout as rknn

if TYPE_CHECKING:
    from harness.terminal import Subparsers


def _rknn_input(args: argparse.Namespace) -> Result:
    stride = rknn.input_stride(
        args.platform, args.precision, args.input_type, args.shape, args.layout
    )
    return {
        "shape": list(stride.shape),
        "layout": stride.layout,
        "input_type": stride.input_type,
        "width_align": stride.align,
        "w_stride": stride.w_stride,
        "buffer_shape": list(stride.buffer_shape),
        "size": stride.size,
        "size_with_stride": stride.size_with_stride,
        "rule": stride.rule.row,
    }


def _rknn_output(args: argparse.Namespace) -> Result:
    out = rknn.output_layout(
        args.platform, args.dtype, args.layout, args.shape, args.last_layer_conv
    )
    return {
        "shape": list(out.shape),
        "layout": out.layout,
        "native_shape": list(out.native_shape),
        "buffer_shape": list(out.buffer_shape),
        # The row's channel padding unit (null where it has none); for NC1HWC2 that is C2.
        "channel_align": out.channel_align,
        "c2": out.channel_align if out.layout == "NC1HWC2" else None,
        "hw_align": out.hw_align,
        "size_with_stride": out.size_with_stride,
        "rule": out.rule.row,
    }


def register(commands: Subparsers) -> None:
    """Add ``rknn-input`` and ``rknn-output`` to the ``hil layout`` subcommands."""
    parser = add_command(commands, "rknn-input", "RKNN zero-copy input: width stride", _rknn_input)
    parser.add_argument("--platform", type=str.lower, required=True, help="e.g. rk3588")
    parser.add_argument("--precision", required=True, help="first-layer precision: int8, float16")
    parser.add_argument("--input-type", required=True, help="uint8, int8, float16, ...")
    parser.add_argument("--shape", type=ints, required=True, help="model shape N,C,H,W")
    parser.add_argument("--layout", type=str.upper, required=True, help="buffer order: nchw, nhwc")

    parser = add_command(
        commands, "rknn-output", "RKNN zero-copy output: native layout", _rknn_output
    )
    parser.add_argument("--platform", type=str.lower, required=True, help="e.g. rk3568")
    parser.add_argument("--dtype", required=True, help="output precision: int8, float16")
    parser.add_argument("--shape", type=ints, required=True, help="logical shape, N,C,H,W if 4-D")
    parser.add_argument("--layout", type=str.upper, required=True, help="nc1hwc2, nhwc, nchw, ...")
    parser.add_argument(
        "--last-layer-conv", action="store_true", help="the output comes from a convolution"
    )
