"""The compiler's layer renames across rknn-toolkit2 releases (``data/layer-aliases.yaml``)."""

from __future__ import annotations

from importlib import resources

import yaml

FILE = "layer-aliases.yaml"


def load_layer_aliases() -> dict[str, str]:
    """Compiled layer type -> the layer type it stands for; a malformed file is a ValueError
    naming it and the entry at fault."""
    text = resources.files("harness.vendors.rknn").joinpath("data", FILE).read_text()
    data = yaml.safe_load(text)
    aliases = data.get("aliases") if isinstance(data, dict) else None
    if not isinstance(aliases, dict):
        raise ValueError(f"harness/vendors/rknn/data/{FILE}: needs a mapping 'aliases'")
    for name, canonical in aliases.items():
        if not isinstance(name, str) or not isinstance(canonical, str):
            raise ValueError(
                f"harness/vendors/rknn/data/{FILE}: aliases.{name} must map a layer type to "
                f"a layer type, got {canonical!r}"
            )
    return dict(aliases)
