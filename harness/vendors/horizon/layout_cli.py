"""``hil layout horizon``: seed 000's stride filling of a J6 input (``Vendor.commands``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import numpy as np

from harness.layout.command import Result, add_command, ints, numeric_dtype
from harness.vendors.horizon import layout as horizon

if TYPE_CHECKING:
    from harness.terminal import Subparsers


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


def register(commands: Subparsers) -> None:
    """Add ``hil layout horizon``."""
    parser = add_command(
        commands, "horizon", "Horizon J6: fill -1 validShape/stride entries", _horizon
    )
    parser.add_argument(
        "--platform", type=str.upper, required=True, choices=list(horizon.PLATFORM_ALIGNMENT)
    )
    parser.add_argument(
        "--valid-shape", type=ints, required=True, help="actual input shape, e.g. 1,220,220,1"
    )
    parser.add_argument(
        "--stride", type=ints, required=True, help="bytes, -1 = fill in; write --stride=-1,-1,1,1"
    )
    parser.add_argument(
        "--model-valid-shape", type=ints, help="the model's validShape (-1 = dynamic), checked"
    )
    parser.add_argument("--kind", choices=horizon.KINDS, default="auto", help="input kind")
    parser.add_argument("--dtype", type=numeric_dtype, default=np.dtype(np.uint8))
