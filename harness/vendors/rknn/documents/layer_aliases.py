"""Name maps kept as data: the compiler's layer renames across rknn-toolkit2 releases and
the layers it names operators by (``data/layer-aliases.yaml``), and the ONNX operator types
the operator list names otherwise (``data/onnx-operator-names.yaml``)."""

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
    return _types(FILE, "aliases", "map a layer type to a layer type")


def load_convolution_layers() -> tuple[dict[str, str], dict[str, str]]:
    """A convolution kind's layer type, and the activations whose part of a fused layer's name
    is not their own name."""
    return (
        _types(FILE, "convolution_layers", "map a convolution kind to a layer type"),
        _types(FILE, "fused_parts", "map an activation to its part of a layer type"),
    )


def _types(file: str, key: str, what: str) -> dict[str, str]:
    """The mapping ``key`` of name -> name; a ValueError naming the file and the entry at
    fault."""
    found = _mapping(file, key)
    for name, other in found.items():
        if not isinstance(name, str) or not isinstance(other, str):
            raise ValueError(
                f"harness/vendors/rknn/data/{file}: {key}.{name} must {what}, got {other!r}"
            )
    return dict(found)


def load_operator_layers() -> dict[str, tuple[str, ...]]:
    """Operator -> the layer types its compiled model names it by besides its own name."""
    return _names(FILE, "layers", "a list of layer types")


def load_onnx_operator_names() -> dict[str, tuple[str, ...]]:
    """ONNX operator type -> the operator-list entries that document it under another name."""
    return _names(ONNX_NAMES_FILE, "names", "a list of entry names")


def _names(file: str, key: str, what: str) -> dict[str, tuple[str, ...]]:
    """The mapping ``key`` of name -> a non-empty list of names; a ValueError naming the file
    and the entry at fault."""
    found = _mapping(file, key)
    for name, names in found.items():
        if not (
            isinstance(name, str)
            and isinstance(names, list)
            and names
            and all(isinstance(each, str) for each in names)
        ):
            raise ValueError(
                f"harness/vendors/rknn/data/{file}: {key}.{name} must be {what}, got {names!r}"
            )
    return {name: tuple(names) for name, names in found.items()}
