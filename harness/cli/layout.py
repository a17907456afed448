"""``hil layout``: strides and buffer sizes per vendor rule, as a table or as JSON (``--json``)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.cli.output import emit
from harness.layout import horizon, tcim
from harness.layout.errors import LayoutError
from harness.vendors.rknn import layout as rknn

if TYPE_CHECKING:
    from harness.cli import Subparsers

Result = dict[str, Any]


def _ints(text: str) -> list[int]:
    """Parse ``1,3,224,224``; negative entries pass through (-1 is a dynamic Horizon stride)."""
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers such as 1,3,224,224, got {text!r}"
        ) from None


def _dtype(text: str) -> np.dtype:
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError):
        dtype = None
    if dtype is None or dtype.kind not in "biuf":
        raise argparse.ArgumentTypeError(f"not a numeric dtype such as int8 or float16: {text!r}")
    return dtype


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _table(result: Result) -> str:
    width = max(len(key) for key in result)
    return "\n".join(f"{key:<{width}}  {_cell(value)}" for key, value in result.items())


def _run(args: argparse.Namespace) -> int:
    try:
        result = args.compute(args)
    except LayoutError as exc:
        args.parser.error(str(exc))
    emit((json.dumps(result) if args.json else _table(result)) + "\n")
    return 0


def _add(
    commands: Subparsers, name: str, summary: str, compute: Callable[[argparse.Namespace], Result]
) -> argparse.ArgumentParser:
    parser = commands.add_parser(name, help=summary, description=summary)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(handler=_run, compute=compute, parser=parser)
    return parser


def _horizon(args: argparse.Namespace) -> Result:
    layout = horizon.fill(
        args.platform,
        args.valid_shape,
        args.stride,
        model_valid_shape=args.model_valid_shape,
        kind=args.kind,
        dtype=args.dtype,
    )
    return {
        "platform": layout.platform,
        "kind": layout.kind,
        "alignment": layout.alignment,
        "valid_shape": list(layout.valid_shape),
        "stride": list(layout.stride),
        "buffer_size": layout.buffer_size,
    }


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


def register(subparsers: Subparsers) -> None:
    """Add ``hil layout`` and its per-vendor subcommands."""
    layout = subparsers.add_parser("layout", help="input/output strides and buffer sizes")
    commands = layout.add_subparsers(dest="layout_command", metavar="RULES", required=True)

    parser = _add(commands, "horizon", "Horizon J6: fill -1 validShape/stride entries", _horizon)
    parser.add_argument(
        "--platform", type=str.upper, required=True, choices=list(horizon.PLATFORM_ALIGNMENT)
    )
    parser.add_argument(
        "--valid-shape", type=_ints, required=True, help="actual input shape, e.g. 1,220,220,1"
    )
    parser.add_argument(
        "--stride", type=_ints, required=True, help="bytes, -1 = fill in; write --stride=-1,-1,1,1"
    )
    parser.add_argument(
        "--model-valid-shape", type=_ints, help="the model's validShape (-1 = dynamic), checked"
    )
    parser.add_argument("--kind", choices=horizon.KINDS, default="auto", help="input kind")
    parser.add_argument("--dtype", type=_dtype, default=np.dtype(np.uint8))

    parser = _add(commands, "tcim", "Houmo TCIM: tensor strides, YUV image split storage", _tcim)
    parser.add_argument("--shape", type=_ints, required=True, help="e.g. 3,3 or 1,3,H,W")
    parser.add_argument(
        "--format", type=str.upper, choices=list(tcim.YUV_SUBSAMPLING), help="YUV image format"
    )
    parser.add_argument("--dtype", type=_dtype, default=np.dtype(np.uint8))
    parser.add_argument("--stride", type=_ints, help="byte strides of a non-contiguous tensor")
    parser.add_argument(
        "--contiguous", action="store_true", help="host storage with no padding (images)"
    )

    parser = _add(commands, "rknn-input", "RKNN zero-copy input: width stride", _rknn_input)
    parser.add_argument("--platform", type=str.lower, required=True, help="e.g. rk3588")
    parser.add_argument("--precision", required=True, help="first-layer precision: int8, float16")
    parser.add_argument("--input-type", required=True, help="uint8, int8, float16, ...")
    parser.add_argument("--shape", type=_ints, required=True, help="model shape N,C,H,W")
    parser.add_argument("--layout", type=str.upper, required=True, help="buffer order: nchw, nhwc")

    parser = _add(commands, "rknn-output", "RKNN zero-copy output: native layout", _rknn_output)
    parser.add_argument("--platform", type=str.lower, required=True, help="e.g. rk3568")
    parser.add_argument("--dtype", required=True, help="output precision: int8, float16")
    parser.add_argument("--shape", type=_ints, required=True, help="logical shape, N,C,H,W if 4-D")
    parser.add_argument("--layout", type=str.upper, required=True, help="nc1hwc2, nhwc, nchw, ...")
    parser.add_argument(
        "--last-layer-conv", action="store_true", help="the output comes from a convolution"
    )
