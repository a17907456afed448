"""The host reference's vectorised Resize kernel against onnx.reference's own."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from tests.helpers.declared import MODELS

from harness.models.resize import COORDINATES, MODES
from harness.models.resize_reference import Resize


def _model(shape: list[int], scales: list[float] | None, **attrs: object) -> bytes:
    inputs = ["X", "", "scales"] if scales is not None else ["X", "", "", "sizes"]
    node = helper.make_node("Resize", inputs, ["Y"], **attrs)
    constant = (
        helper.make_tensor("scales", TensorProto.FLOAT, [4], scales)
        if scales is not None
        else helper.make_tensor("sizes", TensorProto.INT64, [4], [shape[0], shape[1], 5, 7])
    )
    graph = helper.make_graph(
        [node],
        "resize",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [constant],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model.SerializeToString()


def _both(model: bytes, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    (ours,) = ReferenceEvaluator(model, new_ops=[Resize]).run(None, {"X": x})
    (stock,) = ReferenceEvaluator(model).run(None, {"X": x})
    return ours, stock


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(MODES),
    st.sampled_from(COORDINATES),
    st.lists(st.integers(1, 3), min_size=4, max_size=4),
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(0, 2**32 - 1),
)
def test_the_kernel_resizes_as_onnx_reference_does(mode, coordinates, shape, sh, sw, seed):
    model = _model(shape, [1, 1, sh, sw], mode=mode, coordinate_transformation_mode=coordinates)
    x = np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(np.float32)
    ours, stock = _both(model, x)
    assert ours.shape == stock.shape == (*shape[:2], shape[2] * sh, shape[3] * sw)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, stock, rtol=1e-6, atol=1e-6)


def test_every_resize_model_the_builder_makes_is_computed_as_onnx_reference_does():
    for mode in MODES:
        for coordinates in COORDINATES:
            params = {"mode": mode, "coordinate_transformation_mode": coordinates}
            built = MODELS.build("Resize", {**params, "scales": [1, 1, 3, 2]}, seed=7)
            ours, stock = _both(built.onnx_bytes, built.inputs[0])
            np.testing.assert_allclose(ours, stock, rtol=1e-6, atol=1e-6)


def test_what_the_kernel_does_not_cover_is_onnx_references_own():
    # sizes instead of scales, and a shrinking scale, are left to onnx.reference's kernel
    x = np.random.default_rng(3).uniform(-2, 2, size=(1, 2, 4, 6)).astype(np.float32)
    for model in (
        _model([1, 2, 4, 6], None, mode="linear"),
        _model([1, 2, 4, 6], [1, 1, 0.5, 1], mode="linear"),
    ):
        ours, stock = _both(model, x)
        np.testing.assert_array_equal(ours, stock)


def test_an_empty_roi_as_pytorch_writes_it_is_no_roi() -> None:
    # nn.Upsample(scale_factor=2) at opset 13: an empty roi constant, nearest_mode floor (left
    # to onnx.reference's own kernel, which indexed the empty roi and failed)
    node = helper.make_node(
        "Resize",
        ["X", "roi", "scales"],
        ["Y"],
        mode="nearest",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )
    graph = helper.make_graph(
        [node],
        "upsample",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2, 2, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [
            helper.make_tensor("roi", TensorProto.FLOAT, [0], []),
            helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)
    x = np.arange(12, dtype=np.float32).reshape(1, 2, 2, 3)
    (y,) = ReferenceEvaluator(model, new_ops=[Resize]).run(None, {"X": x})
    np.testing.assert_array_equal(y, x.repeat(2, axis=2).repeat(2, axis=3))
