"""``--op`` and ``--entry``: the one selection by ONNX operator and the one by documented entry,
read alike by ``pytest``, ``hil probe`` and ``hil docs show``.

``--op Conv`` names an ONNX operator type: the entries that document that one node type
(``Convolution`` and ``Depthwise Convolution``, as the vendor's ONNX names map it, else the
entry headed with the type itself), never a fused entry (``ConvolutionRelu`` is a Conv and a
Relu), a transposed convolution or a model-I/O row. ``--entry Convolution`` names the
document's entry as headed (any case, spaces optional; one operator of a fused heading with
alternatives, ``ConvolutionLeakyRelu``, names that operator alone). Each option may be given
more than once (either name); given both, an operator must answer both. ``-k`` stays pytest's
substring match on ids.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import onnx.defs

from harness.documented.documents import Document, Entry, Group
from harness.names import suggestion


class SelectionError(ValueError):
    """A name ``--op`` or ``--entry`` cannot stand for; the message names the option and value."""


@dataclass(frozen=True)
class OperatorSelection:
    onnx_types: tuple[str, ...] = ()  # --op, as given
    entries: tuple[str, ...] = ()  # --entry, as given

    def __bool__(self) -> bool:
        return bool(self.onnx_types or self.entries)

    def operators(
        self, groups: Iterable[Group], onnx_names: Mapping[str, tuple[str, ...]]
    ) -> frozenset[str]:
        """The catalogue operators of ``groups`` (a platform's section, say) this selection
        names. A name that is no ONNX type, or no entry of any of ``groups``, is a
        SelectionError."""
        entries = [entry for group in groups for entry in group.entries]
        chosen: set[str] | None = None
        if self.onnx_types:
            chosen = set()
            for given in self.onnx_types:
                chosen |= _documenting(_onnx_type(given, entries), entries, onnx_names)
        if self.entries:
            named = {name for given in self.entries for name in _entry_operators(given, entries)}
            chosen = named if chosen is None else chosen & named
        return frozenset(chosen or ())

    def on_platform(
        self,
        documents: Mapping[str, Document],
        platform: str,
        onnx_names: Mapping[str, tuple[str, ...]],
    ) -> frozenset[str]:
        """The operators named on ``platform`` by the newest of ``documents`` (the one cases
        are generated from); a platform it has no section for is a SelectionError too."""
        newest = documents[list(documents)[-1]]
        try:
            group = newest.group(platform)
        except LookupError as exc:
            raise SelectionError(f"{self.describe()}: {exc}") from None
        return self.operators([group], onnx_names)

    def describe(self) -> str:
        """The selection as the options spell it: ``--op Conv --entry Convolution``."""
        return " ".join(
            [*(f"--op {name}" for name in self.onnx_types), *(f"--entry {e}" for e in self.entries)]
        )


def entries_naming(group: Group, operators: frozenset[str]) -> list[Entry]:
    """The entries of ``group`` that state any of ``operators`` (``hil docs show``)."""
    return [entry for entry in group.entries if operators & set(entry.operators())]


@functools.cache
def _onnx_types() -> dict[str, str]:
    """Every ONNX operator type of the default domain, by its lower-case spelling."""
    return {s.name.lower(): s.name for s in onnx.defs.get_all_schemas() if s.domain == ""}


def _onnx_type(given: str, entries: list[Entry]) -> str:
    found = _onnx_types().get(given.lower())
    if found is not None:
        return found
    if any(_key(given) in _keys(entry) for entry in entries):
        raise SelectionError(
            f"--op {given!r}: not an ONNX operator type but an entry of the document "
            f"(--entry {given!r} selects it)"
        )
    hint = suggestion(given, _onnx_types().values())
    raise SelectionError(f"--op {given!r}: not an ONNX operator type{hint}")


def _documenting(
    onnx_type: str, entries: list[Entry], onnx_names: Mapping[str, tuple[str, ...]]
) -> set[str]:
    """The operators of the entries that document the node type (no fused entry: its
    operators are named after the fusion, never after one of its nodes)."""
    names = next((v for k, v in onnx_names.items() if k.lower() == onnx_type.lower()), None)
    wanted = {_key(name) for name in names or (onnx_type,)}
    return {op for entry in entries for op in entry.operators() if _key(op) in wanted}


def _entry_operators(given: str, entries: list[Entry]) -> set[str]:
    key = _key(given)
    for entry in entries:
        ops = entry.operators()
        if key in {_key(op) for op in ops} and len(ops) > 1:
            return {op for op in ops if _key(op) == key}  # one alternative of a fused heading
        if key in _keys(entry):
            return set(ops)
    hint = suggestion(given, dict.fromkeys(entry.name for entry in entries))
    raise SelectionError(f"--entry {given!r}: no entry of the document is headed so{hint}")


def _keys(entry: Entry) -> set[str]:
    return {_key(name) for name in (*entry.names(), *entry.operators())}


def _key(name: str) -> str:
    return name.replace(" ", "").lower()
