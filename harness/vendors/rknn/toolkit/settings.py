"""A user's own rknn-toolkit2 settings (``hil run --toolkit-config FILE``), and the targets
the toolkit builds int8 for and nothing else.

The settings are the keyword arguments of ``RKNN.config()`` and ``RKNN.build()``, as the
installed toolkit declares them: read from its ``rknn/api/rknn.py`` (plain Python) without
importing it, which would take two seconds and torch. Every build of the run passes them
on (``calls.toolkit_calls``), the record keeps them and a bundle's ``toolkit.json`` holds
them. The toolkit normalises each input inside the built model, ``(x - mean) / std`` per
channel, so ``toolkit_feeds`` feeds it ``x * std + mean`` for the model's input ``x``: the
host references see ``x``, as the ONNX model does. A bundle's ``reproduce.py``, which
imports nothing of npu-hil, has its own copy (``normalised_feeds``), held equal by a test.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from harness.modelfiles import safe_files
from harness.modelfiles.prepare import ModelFileError
from harness.names import closest
from harness.safe_yaml import DataLoader, load_yaml
from harness.targets.settings import BuildSettings, SettingsError

SOURCE = ("api", "rknn.py")  # where the toolkit's RKNN class is, in its ``rknn`` package
METHODS = ("config", "build")
# Keyword arguments a run sets itself: where a settings file says them instead
GIVEN_BY_RUN = {
    "target_platform": "the platform is --platform's",
    "verbose": "the harness reads the verbose build log",
}
QUANTIZE, DATASET = "do_quantization", "dataset"  # taken out: the run's dtype and calibration


@functools.cache
def toolkit_keywords() -> dict[str, dict[str, Any]]:
    """``{"config": {name: default}, "build": {...}}``: the keyword arguments of the
    installed toolkit's ``RKNN.config`` and ``RKNN.build`` (defaults as literals, None where
    a default is no literal). SettingsError when the toolkit is not installed."""
    spec = importlib.util.find_spec("rknn")
    folders = list(spec.submodule_search_locations or []) if spec else []
    sources = [Path(folder, *SOURCE) for folder in folders if Path(folder, *SOURCE).is_file()]
    if not sources:
        raise SettingsError("rknn-toolkit2 is not installed: its settings cannot be checked")
    tree = ast.parse(sources[0].read_text(encoding="utf-8"))
    methods = {
        node.name: node
        for cls in tree.body
        if isinstance(cls, ast.ClassDef) and cls.name == "RKNN"
        for node in cls.body
        if isinstance(node, ast.FunctionDef) and node.name in METHODS
    }
    return {name: _keywords(methods[name]) for name in METHODS}


def _keywords(method: ast.FunctionDef) -> dict[str, Any]:
    args = method.args.args[1:]  # self
    defaults = [None] * (len(args) - len(method.args.defaults)) + list(method.args.defaults)
    return {arg.arg: _literal(default) for arg, default in zip(args, defaults, strict=True)}


def _literal(node: ast.expr | None) -> Any:
    try:
        return ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None


def build_keywords(settings: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``settings`` that ``RKNN.build`` takes (the rest are ``config``'s)."""
    build = toolkit_keywords()["build"]
    return {key: value for key, value in settings.items() if key in build}


def read_settings(path: Path) -> BuildSettings:
    """The settings of a YAML or JSON file of ``RKNN.config()``/``RKNN.build()`` keyword
    arguments; SettingsError naming the file, the key and the value when one cannot be used
    (an unknown key with the nearest known one)."""
    try:
        text = safe_files.read_bytes(path).decode("utf-8")
        data = yaml.load(text, Loader=DataLoader)  # JSON is YAML
    except (ModelFileError, OSError) as exc:
        raise SettingsError(f"--toolkit-config {path}: cannot read it: {exc}") from None
    except (UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        raise SettingsError(f"{path}: not YAML or JSON: {_first_line(exc)}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SettingsError(
            f"{path}: a mapping of RKNN.config() and RKNN.build() keyword arguments, "
            f"not a {type(data).__name__}"
        )
    known = {name: method for method, names in toolkit_keywords().items() for name in names}
    for key, value in data.items():
        if key in GIVEN_BY_RUN or key not in known:
            raise SettingsError(f"{path}: {key!r}: {_unknown(str(key), known)}")
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise SettingsError(
                f"{path}: {key}: {value!r} is no JSON value (a number, text, true/false, null, "
                "a list or a mapping)"
            ) from None
    config = {key: value for key, value in data.items() if key not in (QUANTIZE, DATASET)}
    quantize = data.get(QUANTIZE)
    if quantize is not None and not isinstance(quantize, bool):
        raise SettingsError(f"{path}: {QUANTIZE}: {quantize!r} is not true or false")
    dataset = data.get(DATASET)
    if dataset is not None and not isinstance(dataset, str):
        raise SettingsError(f"{path}: {DATASET}: {dataset!r} is not a file name")
    return BuildSettings(
        config=config,
        quantize=quantize,
        dataset=(path.parent / dataset) if dataset else None,
    )


def _unknown(key: str, known: dict[str, str]) -> str:
    if key in GIVEN_BY_RUN:
        return f"set by the run, not here: {GIVEN_BY_RUN[key]}"
    near = closest(key, known)
    hint = f"; did you mean {near!r} (RKNN.{known[near]})?" if near else ""
    return (
        f"no keyword argument of RKNN.config() or RKNN.build() in the installed rknn-toolkit2{hint}"
    )


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def normalises(config: dict[str, Any]) -> bool:
    """Whether ``config`` has the toolkit normalise inputs (``mean_values``/``std_values``)."""
    return bool(config.get("mean_values") or config.get("std_values"))


def toolkit_feeds(config: dict[str, Any], arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """What the toolkit is fed for the model's inputs ``arrays``: ``x * std + mean`` per
    channel (axis 1) where ``config`` sets ``mean_values``/``std_values``, one list per input
    (the built model undoes it); an input the lists do not fit is fed as it is, for the
    toolkit to refuse."""
    if not normalises(config):
        return list(arrays)
    means, stds = config.get("mean_values"), config.get("std_values")
    fed = []
    for index, array in enumerate(arrays):
        mean, std = _channels(means, index, array, 0.0), _channels(stds, index, array, 1.0)
        fed.append(
            array if mean is None or std is None else (array * std + mean).astype(array.dtype)
        )
    return fed


def _channels(values: Any, index: int, array: np.ndarray, default: float) -> np.ndarray | None:
    """``values[index]`` shaped to broadcast over ``array``'s channels, or None if it cannot."""
    if not values:
        return np.asarray(default)
    try:
        found = np.asarray(values[index], dtype=np.float64).ravel()
    except (IndexError, TypeError, ValueError):
        return None
    if array.ndim < 2 or found.size not in (1, array.shape[1]):
        return None
    return found.reshape((1, -1) + (1,) * (array.ndim - 2))


@functools.cache
def int8_only() -> dict[str, str]:
    """Platform -> why its builds are int8 (``data/int8-only.yaml``)."""
    path = Path(str(resources.files("harness.vendors.rknn").joinpath("data", "int8-only.yaml")))
    data = load_yaml(path)
    why = (
        f"rknn-toolkit2 {data['toolkit']} builds int8 only for this target (float16: "
        f'"{data["refusal"]}")'
    )
    return {platform: why for platform in data["platforms"]}
