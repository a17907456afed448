"""``hil layout tcim``: seed 002's tensor and YUV image storage (``Vendor.commands``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import numpy as np

from harness.layout.command import Result, add_command, ints, numeric_dtype
from harness.vendors.houmo import layout as tcim

if TYPE_CHECKING:
    from harness.terminal import Subparsers


def _tcim(args: argparse.Namespace) -> Result:
    if args.format is None:
        if args.contiguous and args.stride is not None:
            args.parser.error("--contiguous and --stride contradict each other")
        tensor = tcim.tensor_layout(args.shape, args.dtype, args.stride)
        return {
            "shape": list(tensor.shape),
            "dtype": str(tensor.dtype),
            "stride": list(tensor.stride),
            "tensor_size": tensor.tensor_size,
            "mem_size": tensor.size,
            "span_size": tensor.span_size,
        }
    if args.stride is not None:
        args.parser.error("--stride is for plain tensors; image strides follow from --format")
    if args.dtype != np.uint8:
        args.parser.error(f"--dtype {args.dtype} with --format: YUV images are uint8")
    image = tcim.image_layout(args.shape, args.format, args.contiguous)
    return {
        "format": image.format,
        "shape": list(image.shape),
        "y_shape": list(image.y.shape),
        "uv_shape": list(image.uv.shape),
        "stride": list(image.stride),
        "uv_offset": image.uv_offset,
        "tensor_size": image.tensor_size,
        "mem_size": image.mem_size,
        "span_size": image.span_size,
    }


def register(commands: Subparsers) -> None:
    """Add ``hil layout tcim``."""
    parser = add_command(
        commands, "tcim", "Houmo TCIM: tensor strides, YUV image split storage", _tcim
    )
    parser.add_argument("--shape", type=ints, required=True, help="e.g. 3,3 or 1,3,H,W")
    parser.add_argument(
        "--format", type=str.upper, choices=list(tcim.YUV_SUBSAMPLING), help="YUV image format"
    )
    parser.add_argument("--dtype", type=numeric_dtype, default=np.dtype(np.uint8))
    parser.add_argument("--stride", type=ints, help="byte strides of a non-contiguous tensor")
    parser.add_argument(
        "--contiguous", action="store_true", help="host storage with no padding (images)"
    )
