"""The names ``hil`` commands take, as argparse types and look-ups: platforms in any case,
``all`` only where a command takes every platform, versions in the SDK's or the document's
spelling, and an operator by its ONNX type where the document names it otherwise (``Conv``
for ``Convolution``); a name that is not known is refused with the closest known one."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping

from harness.names import document_version, sdk_version, suggestion
from harness.vendors import platform_named

__all__ = ["document_version", "operator_names", "platform_type", "sdk_version"]


def platform_type(*, allow_all: bool = False) -> Callable[[str], str]:
    """An argparse type: the platform named, spelt as the vendor spells it; an unknown name
    (or ``all`` where it is not allowed) is a usage error of the command, exit status 2."""

    def platform(text: str) -> str:
        try:
            return platform_named(text, allow_all=allow_all)
        except LookupError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return platform


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
