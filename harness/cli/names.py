"""The names ``hil`` commands take, as options and look-ups: the run's vendor (``--vendor``) and
its platforms in any case, ``all`` only where a command takes every platform, versions in the
SDK's or the document's spelling, and an operator by its ONNX type where the document names it
otherwise (``Conv`` for ``Convolution``); a name that is not known is refused with the closest
known one."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping

from harness.names import document_version, sdk_version, suggestion
from harness.vendors import run_platform, run_vendor, vendor_help
from harness.vendors.base import Vendor

__all__ = [
    "add_vendor_option",
    "command_vendor",
    "document_version",
    "operator_names",
    "sdk_version",
]


def add_vendor_option(parser: argparse.ArgumentParser) -> None:
    """``--vendor NAME``, as every command that runs or reads a run takes it."""
    parser.add_argument(
        "--vendor", default=None, metavar="NAME", help=vendor_help("the working folder")
    )


def command_vendor(args: argparse.Namespace) -> Vendor:
    """The command's vendor (``run_vendor``), and ``args.platform``, when given, as that
    vendor spells it; a LookupError says why either is refused."""
    vendor = run_vendor(args.vendor)
    if getattr(args, "platform", None):
        try:
            args.platform = run_platform(vendor, args.platform)
        except LookupError as exc:
            raise LookupError(f"argument --platform: {exc}") from None
    return vendor


def operator_names(
    name: str, documented: Iterable[str], onnx_names: Mapping[str, tuple[str, ...]]
) -> tuple[str, ...]:
    """The documented operator names ``name`` stands for: itself (in any case) when the
    document has it, else the entries an ONNX type is documented as (``Conv``:
    ``Convolution``, ``Depthwise Convolution``). A LookupError says "no operator NAME" and
    the closest name, if one is close."""
    known = list(documented)
    if name.lower() in {n.lower() for n in known}:
        return (name,)
    for onnx_name, entries in onnx_names.items():
        if onnx_name.lower() == name.lower():
            return entries
    raise LookupError(f"no operator {name!r}", suggestion(name, [*known, *onnx_names]))
