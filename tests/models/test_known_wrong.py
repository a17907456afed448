"""Host references known wrong for an operator at some opsets (``wrong-references.yaml``).

Each entry has a demonstration here that the reference really is wrong at every opset the
entry lists and right at the next: when a release fixes it, its test fails and the entry is to
be dropped. A model holding such an operator is judged without that reference.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from harness.modelfiles.graph import tensor_values
from harness.models import BuiltModel
from harness.models.known_wrong import WrongReference, wrong_for, wrong_references
from harness.models.reference import ORT, SPEC, host_references

RNG = np.random.default_rng(7)
X = RNG.normal(size=(1, 4, 3, 3)).astype(np.float32)
# scale, bias, running mean and variance of a BatchNormalization
STATS = [
    RNG.uniform(0.5, 1.5, 4).astype(np.float32),
    RNG.normal(0.0, 0.1, 4).astype(np.float32),
    RNG.normal(0.0, 0.1, 4).astype(np.float32),
    RNG.uniform(0.5, 1.5, 4).astype(np.float32),
]


def batch_norm(opset: int) -> onnx.ModelProto:
    """One BatchNormalization at ``opset`` with the momentum PyTorch writes."""
    names = ["scale", "bias", "mean", "var"]
    node = helper.make_node("BatchNormalization", ["x", *names], ["y"], momentum=0.9)
    graph = helper.make_graph(
        [node],
        "bn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(X.shape))],
        [numpy_helper.from_array(array, name) for array, name in zip(STATS, names, strict=True)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)


def batch_norm_truth() -> np.ndarray:
    """Inference BatchNormalization in numpy: the running statistics alone."""
    scale, bias, mean, var = (array.reshape(-1, 1, 1) for array in STATS)
    return scale * (X - mean) / np.sqrt(var + 1e-5) + bias


# op -> (its one-node model at an opset, the right output on X)
DEMONSTRATIONS: dict[str, tuple[Callable[[int], onnx.ModelProto], Callable[[], np.ndarray]]] = {
    "BatchNormalization": (batch_norm, batch_norm_truth),
}


def run(reference: str, model: onnx.ModelProto) -> np.ndarray:
    if reference == SPEC:
        return np.asarray(ReferenceEvaluator(model).run(None, {"x": X})[0])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": X})[0])


def built(model: onnx.ModelProto) -> BuiltModel:
    return BuiltModel("BatchNormalization", 0, {}, model.SerializeToString(), [X], ["x"], ["y"])


@pytest.mark.parametrize("entry", wrong_references(), ids=lambda e: f"{e.reference}-{e.op}")
def test_each_entry_is_still_wrong_at_its_opsets_and_right_after(entry: WrongReference) -> None:
    make, truth = DEMONSTRATIONS[entry.op]  # a new entry needs its demonstration here
    for opset in range(entry.first, entry.last + 1):
        error = np.abs(run(entry.reference, make(opset)) - truth()).max()
        assert error > 1e-2, f"{entry.reference} is right for {entry.op} at opset {opset}"
    np.testing.assert_allclose(run(entry.reference, make(entry.last + 1)), truth(), atol=1e-5)


def test_a_batch_norm_at_opset_13_is_judged_on_onnxruntime_alone() -> None:
    references = host_references(built(batch_norm(13)))
    assert set(references.outputs) == {ORT} and references.used == ORT
    assert "known wrong for BatchNormalization at opset 13" in references.unavailable[SPEC]
    np.testing.assert_allclose(references.outputs[ORT][0], batch_norm_truth(), atol=1e-5)
    at_14 = host_references(built(batch_norm(14)))
    assert set(at_14.outputs) == {SPEC, ORT} and at_14.used == SPEC


def test_an_entry_applies_at_the_models_opset_and_in_subgraphs() -> None:
    assert wrong_for(batch_norm(13), SPEC) is not None
    assert wrong_for(batch_norm(13), ORT) is None
    assert wrong_for(batch_norm(15), SPEC) is None
    inner = batch_norm(13).graph
    branch = helper.make_node("If", ["c"], ["y"], then_branch=inner, else_branch=inner)
    graph = helper.make_graph(
        [branch],
        "if",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    assert wrong_for(model, SPEC) is not None


def test_the_per_layer_values_of_a_batch_norm_at_opset_13_are_right() -> None:
    # graph.tensor_values (hil run --layers, hil reduce) takes the other reference too
    values = tensor_values(batch_norm(13), {"x": X}, ["y"])
    np.testing.assert_allclose(values["y"], batch_norm_truth(), atol=1e-5)
