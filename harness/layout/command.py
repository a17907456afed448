"""What every ``hil layout`` subcommand shares, the harness's and the vendors' alike: argument
types, and a parser whose handler prints the computed layout as a table or as JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.layout.errors import LayoutError
from harness.terminal import emit

if TYPE_CHECKING:
    from harness.terminal import Subparsers

Result = dict[str, Any]


def ints(text: str) -> list[int]:
    """Parse ``1,3,224,224``; negative entries pass through (-1 is a dynamic Horizon stride)."""
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers such as 1,3,224,224, got {text!r}"
        ) from None


def numeric_dtype(text: str) -> np.dtype:
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError):
        dtype = None
    if dtype is None or dtype.kind not in "biuf":
        raise argparse.ArgumentTypeError(f"not a numeric dtype such as int8 or float16: {text!r}")
    return dtype


def add_command(
    commands: Subparsers, name: str, summary: str, compute: Callable[[argparse.Namespace], Result]
) -> argparse.ArgumentParser:
    """A ``hil layout NAME`` parser whose handler prints ``compute(args)``; a LayoutError is
    a usage error (exit 2)."""
    parser = commands.add_parser(name, help=summary, description=summary)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(handler=_run, compute=compute, parser=parser)
    return parser


def _run(args: argparse.Namespace) -> int:
    try:
        result = args.compute(args)
    except LayoutError as exc:
        args.parser.error(str(exc))
    emit((json.dumps(result) if args.json else _table(result)) + "\n")
    return 0


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _table(result: Result) -> str:
    width = max(len(key) for key in result)
    return "\n".join(f"{key:<{width}}  {_cell(value)}" for key, value in result.items())
