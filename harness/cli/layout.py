"""``hil layout``: strides and buffer sizes per vendor rule, as a table or as JSON (``--json``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.vendors import vendor_commands

if TYPE_CHECKING:
    from harness.terminal import Subparsers


def register(subparsers: Subparsers) -> None:
    """Add ``hil layout`` and every vendor's subcommands (``Vendor.commands["layout"]``)."""
    layout = subparsers.add_parser("layout", help="input/output strides and buffer sizes")
    commands = layout.add_subparsers(dest="layout_command", metavar="RULES", required=True)
    for register_vendor_commands in vendor_commands("layout"):
        register_vendor_commands(commands)
