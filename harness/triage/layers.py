"""Per-layer comparison: every float intermediate tensor exposed as an output, run once on the
target, and compared with the host reference in graph order.

The exposed model is a case of its own (kind ``layers``), so its model, arrays, build log and
verdict sit in the results like any other case; the table is written beside them as
``layers.json`` (and into the folder of the case it explains, whose repro bundle copies it),
each layer's cosine and largest error, the first layer past tolerance marked. Exposing a
tensor keeps the compiler from fusing across it, so a bug that lives only in a fused kernel can
hide in this run: the first layer past tolerance is where the NPU departs from the reference in
the unfused network.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from harness.judge.compare import compare
from harness.modelfiles.graph import exposed, float_tensors, node_label
from harness.modelfiles.prepare import PreparedModel
from harness.results.layer_tables import LAYER_ACCURACY
from harness.results.records import CaseRecord
from harness.terminal import columns
from harness.text import printable
from harness.triage.runner import ModelRunner


@dataclass(frozen=True)
class Layer:
    """One node output against the reference."""

    index: int  # the node's position in graph order
    node: str
    op: str
    tensor: str
    placement: str  # "NPU", "CPU" or "" when the layer table does not name the node
    dtype: str
    compiled: str  # the layer type the compiler made of it (e.g. Conv for a lowered pool)
    passed: bool | None  # None: no observed value for this tensor
    cosine: float | None
    max_abs: float | None
    detail: str


@dataclass(frozen=True)
class LayerReport:
    record: CaseRecord  # the run of the exposed model
    layers: list[Layer]

    @property
    def first_bad(self) -> Layer | None:
        return next((layer for layer in self.layers if layer.passed is False), None)


def compare_layers(
    runner: ModelRunner, prepared: PreparedModel, beside: CaseRecord | None = None
) -> LayerReport:
    """Run ``prepared`` with every float node output exposed and compare each one; the table
    goes into the exposed run's case folder and into ``beside``'s (the run it explains)."""
    tensors = float_tensors(prepared.model)
    names = [name for _, name in tensors]
    outputs = [*prepared.output_names, *(n for n in names if n not in prepared.output_names)]
    wide = replace(
        prepared, model=exposed(prepared.model, names), output_names=outputs, expected=None
    )
    record = runner.run(wide, kind="layers")
    if not record.artifacts:  # refused before it ran: no case folder, no layers
        return LayerReport(record, [])
    folder = runner.case_folder(record)
    observed = _arrays(folder / "observed", outputs)
    reference = _arrays(folder / "reference", outputs)
    nodes = prepared.model.graph.node
    layers = []
    for index, tensor in tensors:
        node = nodes[index]
        label = node_label(node, index)
        where = _compiled(record.placement, node.name)
        layers.append(
            _layer(index, label, node.op_type, tensor, where, observed, reference, record)
        )
    report = LayerReport(record, layers)
    first = report.first_bad
    table = [{**asdict(layer), "first_past_tolerance": layer is first} for layer in layers]
    text = json.dumps(table, indent=2) + "\n"
    folders = [folder, *([runner.case_folder(beside)] if beside and beside.artifacts else [])]
    for table_folder in folders:
        (table_folder / LAYER_ACCURACY).write_text(text, encoding="utf-8")
    return report


def _compiled(placement: list[dict[str, Any]], node: str) -> dict[str, Any]:
    """The layer-table row of an ONNX node: its own name, or a name the compiler derived from
    it (``pool_2dw`` for a lowered ``pool``, ``add_AddRelu`` for a fusion)."""
    if not node:
        return {}
    rows = [row for row in placement if not row.get("io")]
    exact = [row for row in rows if row.get("name") == node]
    derived = [row for row in rows if str(row.get("name", "")).startswith(f"{node}_")]
    return (exact or derived or [{}])[0]


def _layer(
    index: int,
    label: str,
    op: str,
    tensor: str,
    where: dict[str, Any],
    observed: dict[str, np.ndarray],
    reference: dict[str, np.ndarray],
    record: CaseRecord,
) -> Layer:
    placement, dtype = str(where.get("target", "")), str(where.get("dtype", ""))
    compiled = str(where.get("op", ""))
    if tensor not in observed or tensor not in reference:
        return Layer(
            index, label, op, tensor, placement, dtype, compiled, None, None, None, "not observed"
        )
    result = compare([observed[tensor]], [reference[tensor]], record.tolerance)
    return Layer(
        index,
        label,
        op,
        tensor,
        placement,
        dtype,
        compiled,
        result.passed,
        result.metrics.get("cosine"),
        result.metrics.get("max_abs"),
        result.detail,
    )


def _arrays(folder: Path, names: list[str]) -> dict[str, np.ndarray]:
    """The case folder's arrays by output name (written as ``<index>_<name>.npy``)."""
    if not folder.is_dir():
        return {}
    by_index = {int(path.name.split("_", 1)[0]): path for path in folder.glob("*.npy")}
    return {
        name: np.load(by_index[index], allow_pickle=False)
        for index, name in enumerate(names)
        if index in by_index
    }


def format_layers(report: LayerReport) -> str:
    """The table ``hil run --layers`` prints, in graph order."""
    rows = [("#", "node", "op", "compiled as", "cosine", "max abs", "result")]
    for layer in report.layers:
        where = printable(f"{layer.compiled} {layer.placement} {layer.dtype}").strip() or "-"
        cosine = "-" if layer.cosine is None else f"{layer.cosine:.6f}"
        error = "-" if layer.max_abs is None else f"{layer.max_abs:.4g}"
        status = {True: "ok", False: "PAST TOLERANCE", None: "not observed"}[layer.passed]
        node, op = printable(layer.node), printable(layer.op)
        rows.append((str(layer.index), node, op, where, cosine, error, status))
    lines = columns(rows, right={0, 4, 5})
    first = report.first_bad
    if first is not None:
        lines.append(
            f"first layer past tolerance: {first.node} ({first.op}, tensor {first.tensor}): "
            f"{first.detail}"
        )
    elif all(layer.passed is None for layer in report.layers):
        record = report.record
        lines.append(f"no layer observed: {record.verdict}: {record.detail}")
    else:
        lines.append("every observed layer is within tolerance")
    return "\n".join(lines) + "\n"
