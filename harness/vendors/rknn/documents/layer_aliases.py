"""Name maps kept as data: the compiler's layer renames across rknn-toolkit2 releases
(``data/layer-aliases.yaml``), and the ONNX operator types the operator list names otherwise
(``data/onnx-operator-names.yaml``)."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

FILE = "layer-aliases.yaml"
ONNX_NAMES_FILE = "onnx-operator-names.yaml"


def _mapping(file: str, key: str) -> dict[Any, Any]:
    text = resources.files("harness.vendors.rknn").joinpath("data", file).read_text()
    data = yaml.safe_load(text)
    found = data.get(key) if isinstance(data, dict) else None
    if not isinstance(found, dict):
        raise ValueError(f"harness/vendors/rknn/data/{file}: needs a mapping '{key}'")
    return found


def load_layer_aliases() -> dict[str, str]:
    """Compiled layer type -> the layer type it stands for; a malformed file is a ValueError
    naming it and the entry at fault."""
    aliases = _mapping(FILE, "aliases")
    for name, canonical in aliases.items():
        if not isinstance(name, str) or not isinstance(canonical, str):
            raise ValueError(
                f"harness/vendors/rknn/data/{FILE}: aliases.{name} must map a layer type to "
                f"a layer type, got {canonical!r}"
            )
    return dict(aliases)


def load_onnx_operator_names() -> dict[str, tuple[str, ...]]:
    """ONNX operator type -> the operator-list entries that document it under another name."""
    names = _mapping(ONNX_NAMES_FILE, "names")
    for onnx_name, entries in names.items():
        if not (
            isinstance(onnx_name, str)
            and isinstance(entries, list)
            and entries
            and all(isinstance(entry, str) for entry in entries)
        ):
            raise ValueError(
                f"harness/vendors/rknn/data/{ONNX_NAMES_FILE}: names.{onnx_name} must be a "
                f"list of entry names, got {entries!r}"
            )
    return {onnx_name: tuple(entries) for onnx_name, entries in names.items()}
