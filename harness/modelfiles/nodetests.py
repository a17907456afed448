"""A folder of models: plain ``.onnx`` files and the ONNX backend node-test layout.

The node tests that ship with the onnx package (``onnx/backend/test/data/node``) are one folder
per test: ``model.onnx`` plus ``test_data_set_0/input_<i>.pb`` and ``output_<i>.pb``
(TensorProto). Their inputs feed the model and their outputs are one more host reference.
Only the first data set is used.
"""

from __future__ import annotations

import fnmatch
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from harness.modelfiles import safe_files
from harness.modelfiles.prepare import ModelFileError
from harness.models.budget import size_budget
from harness.text import shown_name

DATA_SET = "test_data_set_0"


@dataclass(frozen=True)
class ModelEntry:
    """One model of a folder."""

    name: str  # the node test's folder name, or the file's stem
    path: Path  # the .onnx file
    data_set: Path | None  # the node test's data set folder; None: seeded random inputs

    def data(self) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
        """(inputs, expected outputs) of the data set, or None without one."""
        if self.data_set is None:
            return None
        return _tensors(self.data_set, "input"), _tensors(self.data_set, "output")


def list_models(folder: Path) -> list[ModelEntry]:
    """Every model of ``folder``, by name: ``*.onnx`` files and node-test sub-folders."""
    if not folder.is_dir():
        raise ModelFileError(f"{folder}: no such folder of models")
    # names that are not UTF-8 are shown escaped (``harness.text.shown_name``): the model runs
    entries = [ModelEntry(shown_name(path.stem), path, None) for path in folder.glob("*.onnx")]
    for sub in folder.iterdir():
        if (sub / "model.onnx").is_file():
            data = sub / DATA_SET
            entries.append(
                ModelEntry(
                    shown_name(sub.name), sub / "model.onnx", data if data.is_dir() else None
                )
            )
    return sorted(entries, key=lambda entry: entry.name)


def _tensors(folder: Path, kind: str) -> list[np.ndarray]:
    arrays = []
    index = 0
    budget = size_budget()
    while os.path.lexists(folder / f"{kind}_{index}.pb"):
        path = folder / f"{kind}_{index}.pb"
        tensor = onnx.TensorProto()
        data = safe_files.read_bytes(path, budget)
        try:
            tensor.ParseFromString(data)
        except Exception as exc:  # not a tensor at all
            raise ModelFileError(f"{path}: not a tensor this harness reads: {exc}") from None
        over = budget.over_elements(f"{path} (dims {list(tensor.dims)})", math.prod(tensor.dims))
        if over is not None:
            raise ModelFileError(over)
        try:
            arrays.append(numpy_helper.to_array(tensor))
        except Exception as exc:  # a sequence or optional value, or data not fitting its dims
            raise ModelFileError(f"{path}: not a tensor this harness reads: {exc}") from None
        index += 1
    return arrays


def op_types(path: Path) -> set[str]:
    """The operators of the model in ``path`` (read under ``safe_files``' rules)."""
    try:
        model = onnx.ModelProto.FromString(safe_files.read_bytes(path))
    except Exception as exc:
        raise ModelFileError(f"{path}: not an ONNX model: {exc}") from None
    return {node.op_type for node in model.graph.node}


def select(
    entries: Iterable[ModelEntry], patterns: Sequence[str], operators: Iterable[str]
) -> list[ModelEntry]:
    """The entries whose name matches one of ``patterns`` (shell globs); the pattern
    ``catalogue`` matches the models made only of ``operators``. No patterns: every entry."""
    wanted = set(operators)
    return [entry for entry in entries if _selected(entry, patterns or ["*"], wanted)]


def _selected(entry: ModelEntry, patterns: Sequence[str], operators: set[str]) -> bool:
    for pattern in patterns:
        if pattern == "catalogue":
            try:
                ops = op_types(entry.path)
            except ModelFileError:  # chosen, to be listed as not runnable with the reason
                return True
            if ops and ops <= operators:
                return True
        elif fnmatch.fnmatchcase(entry.name, pattern):
            return True
    return False


def why_not_selected(entry: ModelEntry, patterns: Sequence[str], operators: Iterable[str]) -> str:
    """Why ``select`` left ``entry`` out, e.g. "--models-select catalogue: Relu is documented
    only fused (MulRelu), not alone"."""
    wanted = set(operators)
    why = "matches no name pattern"
    if "catalogue" in patterns:
        missing = sorted(op_types(entry.path) - wanted)
        fused = {op: _fusions(op, wanted) for op in missing}
        reasons = [
            f"{op} is documented only fused ({', '.join(fusions)}), not alone"
            for op, fusions in fused.items()
            if fusions
        ]
        absent = [op for op, fusions in fused.items() if not fusions]
        if absent:
            reasons.append(f"not in the catalogue: {', '.join(absent)}")
        why = "; ".join(reasons) or "the model has no nodes"
    return f"--models-select {','.join(patterns)}: {why}"


def _fusions(op: str, catalogue: set[str]) -> list[str]:
    """The catalogue operators that are ``op`` fused with another catalogue operator (MulRelu
    for Relu): the document lists ``op`` only as part of them."""
    return sorted(
        name
        for name in catalogue
        if (name.endswith(op) and name[: -len(op)] in catalogue)
        or (name.startswith(op) and name[len(op) :] in catalogue)
    )
