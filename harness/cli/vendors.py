"""``hil vendors``: every registered vendor, its platforms and what it runs on here, then the
vendor a run in this folder takes and what chose it (``harness.vendors.chosen_vendor``).

A vendor this host cannot load (a package it needs is not installed) or cannot run (its
toolkit is missing) is listed with the reason.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from harness.terminal import emit
from harness.vendors import chosen_vendor, vendor_lines

if TYPE_CHECKING:
    from harness.terminal import Subparsers


def register(subparsers: Subparsers) -> None:
    """Add ``hil vendors``."""
    summary = "the registered vendors, their platforms, and what they run on here"
    parser = subparsers.add_parser("vendors", help=summary, description=__doc__)
    parser.set_defaults(handler=_list)


def _list(args: argparse.Namespace) -> int:
    try:
        vendor, why = chosen_vendor()
        chosen = f"a run here: vendor {vendor.name} ({why})"
    except LookupError as exc:
        chosen = f"a run here: no vendor chosen: {exc}"
    emit("".join(f"{line}\n" for line in (*vendor_lines(), chosen)))
    return 0
