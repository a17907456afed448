"""Graph surgery on a prepared (shape-inferred) model: sub-models between tensors, intermediate
tensors exposed as outputs, and every tensor's host value.

Tensor values come from the deciding host reference (``onnx.reference``), or onnxruntime where
the spec's implementation does not run the model; they feed a cut model whose inputs were
intermediate tensors, so the cut model sees the data the whole model would have given it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
import onnxruntime as ort
from onnx import utils
from onnx.reference import ReferenceEvaluator

from harness.models.reference import spec_unavailable

_FLOAT = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE)


def node_label(node: onnx.NodeProto, index: int) -> str:
    """A node's name, or ``<op>_<index>`` for an unnamed one."""
    return node.name or f"{node.op_type}_{index}"


def value_types(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """Every typed tensor of the model by name (inputs, intermediates, outputs)."""
    graph = model.graph
    return {info.name: info for info in [*graph.input, *graph.value_info, *graph.output]}


def float_tensors(model: onnx.ModelProto) -> list[tuple[int, str]]:
    """(node index, tensor) for every float node output in graph order: the layers a per-layer
    comparison can look at."""
    types = value_types(model)
    return [
        (index, name)
        for index, node in enumerate(model.graph.node)
        for name in node.output
        if name in types and types[name].type.tensor_type.elem_type in _FLOAT
    ]


class Cutter:
    """Cuts sub-models out of one model; shapes are inferred once, not per cut."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self._extractor = utils.Extractor(model)

    def cut(self, inputs: Sequence[str], outputs: Sequence[str]) -> onnx.ModelProto | None:
        """The part computing ``outputs`` from ``inputs`` (plus constants), or None when
        ``inputs`` do not cut it off from the rest (the part would need other graph inputs)."""
        extracted = self._extractor.extract_model(list(inputs), list(outputs))
        declared = {info.name for info in extracted.graph.input}
        declared |= {init.name for init in extracted.graph.initializer}
        produced = {name for node in extracted.graph.node for name in node.output}
        needed = {name for node in extracted.graph.node for name in node.input if name}
        if needed - declared - produced or not extracted.graph.node:
            return None
        unused = [info for info in extracted.graph.input if info.name not in needed]
        for info in unused:  # an input the part does not read (a branch cut off) is not asked for
            extracted.graph.input.remove(info)
        try:
            onnx.checker.check_model(extracted, full_check=True)
        except Exception:
            return None
        return extracted


def sub_model(
    model: onnx.ModelProto, inputs: Sequence[str], outputs: Sequence[str]
) -> onnx.ModelProto | None:
    """``Cutter(model).cut(inputs, outputs)``, for a single cut."""
    return Cutter(model).cut(inputs, outputs)


def exposed(model: onnx.ModelProto, tensors: Sequence[str]) -> onnx.ModelProto:
    """``model`` with ``tensors`` appended to its outputs (those not outputs already)."""
    copy = onnx.ModelProto.FromString(model.SerializeToString())
    types = value_types(copy)
    present = {info.name for info in copy.graph.output}
    for name in tensors:
        if name not in present:
            copy.graph.output.append(types[name])
            present.add(name)
    return copy


def tensor_values(
    model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], tensors: Sequence[str]
) -> dict[str, np.ndarray]:
    """The host values of ``tensors`` on ``feeds``: onnx.reference, else onnxruntime."""
    wide = exposed(model, tensors)
    names = list(tensors)
    if spec_unavailable(wide) is None:
        values = ReferenceEvaluator(wide).run(names, dict(feeds))
    else:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        session = ort.InferenceSession(
            wide.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
        )
        values = session.run(names, dict(feeds))
    return {name: np.asarray(value) for name, value in zip(names, values, strict=True)}


def graph_inputs(model: onnx.ModelProto) -> list[str]:
    """The graph inputs that are not initializers, in order."""
    constants = {init.name for init in model.graph.initializer}
    return [info.name for info in model.graph.input if info.name not in constants]
