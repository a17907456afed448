"""``hil vendors``: every registered vendor, its platforms and what it runs on here.

A vendor this host cannot load (a package it needs is not installed) or cannot run (its
toolkit is missing) is listed with the reason.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from harness.terminal import emit
from harness.vendors import vendor_lines

if TYPE_CHECKING:
    from harness.terminal import Subparsers


def register(subparsers: Subparsers) -> None:
    """Add ``hil vendors``."""
    summary = "the registered vendors, their platforms, and what they run on here"
    parser = subparsers.add_parser("vendors", help=summary, description=__doc__)
    parser.set_defaults(handler=_list)


def _list(args: argparse.Namespace) -> int:
    emit("".join(f"{line}\n" for line in vendor_lines()))
    return 0
