"""The host reference's vectorised pooling kernels against onnxruntime and onnx.reference."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from harness.models.pooling_reference import POOLING_KERNELS


def _model(op: str, shape: list[int], **attrs: object) -> bytes:
    node = helper.make_node(op, ["X"], ["Y"], **attrs)
    graph = helper.make_graph(
        [node],
        "pool",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model.SerializeToString()


def _ort(model: bytes, x: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return session.run(None, {"X": x})[0]


@st.composite
def pools(draw: st.DrawFn) -> tuple[str, list[int], dict[str, object]]:
    op = draw(st.sampled_from(["MaxPool", "AveragePool"]))
    kernel = [draw(st.integers(1, 4)), draw(st.integers(1, 4))]
    dilations = [draw(st.integers(1, 2)), draw(st.integers(1, 2))]
    pads = [draw(st.integers(0, k - 1)) for k in kernel * 2]  # ONNX: a pad below its kernel
    shape = [1, 2, *(draw(st.integers(k * d, 11)) for k, d in zip(kernel, dilations, strict=True))]
    attrs: dict[str, object] = {
        "kernel_shape": kernel,
        "strides": [draw(st.integers(1, 3)), draw(st.integers(1, 3))],
        "dilations": dilations,
        "pads": pads,
        "ceil_mode": draw(st.integers(0, 1)),
    }
    if op == "AveragePool":
        attrs["count_include_pad"] = draw(st.integers(0, 1))
    return op, shape, attrs


@settings(max_examples=150, deadline=None)
@given(pools(), st.integers(0, 2**32 - 1))
def test_the_kernels_pool_as_onnxruntime_does(pool, seed):
    op, shape, attrs = pool
    model = _model(op, shape, **attrs)
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    (ours,) = ReferenceEvaluator(model, new_ops=POOLING_KERNELS).run(None, {"X": x})
    expected = _ort(model, x)
    assert ours.shape == expected.shape and ours.dtype == np.float32
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-6)


def test_a_one_sided_maxpool_pad_pools_the_rows_onnx_writes():
    # pads are [top, left, bottom, right]: two rows above, one below, none at the sides
    model = _model("MaxPool", [1, 1, 5, 6], kernel_shape=[3, 3], pads=[2, 0, 1, 0])
    x = np.random.default_rng(0).standard_normal((1, 1, 5, 6)).astype(np.float32)
    (ours,) = ReferenceEvaluator(model, new_ops=POOLING_KERNELS).run(None, {"X": x})
    (stock,) = ReferenceEvaluator(model).run(None, {"X": x})
    assert ours.shape == (1, 1, 6, 4) == _ort(model, x).shape
    assert stock.shape != ours.shape  # onnx.reference 1.18 reads them as [top, bottom, ...]
    assert ours[0, 0, 0, 0] == x[0, 0, :1, :3].max()  # the first window: pad rows and one row


def test_symmetric_pools_agree_with_onnx_reference_itself():
    for op, extra in (("MaxPool", {}), ("AveragePool", {"count_include_pad": 1})):
        model = _model(op, [1, 3, 9, 10], kernel_shape=[3, 2], pads=[1, 1, 1, 1], **extra)
        x = np.random.default_rng(1).standard_normal((1, 3, 9, 10)).astype(np.float32)
        (ours,) = ReferenceEvaluator(model, new_ops=POOLING_KERNELS).run(None, {"X": x})
        (stock,) = ReferenceEvaluator(model).run(None, {"X": x})
        np.testing.assert_allclose(ours, stock, rtol=1e-6, atol=1e-6)


def test_what_the_kernels_do_not_cover_is_onnx_references_own():
    # auto_pad SAME_UPPER is left to onnx.reference's kernel
    model = _model("MaxPool", [1, 1, 6, 6], kernel_shape=[3, 3], auto_pad="SAME_UPPER")
    x = np.random.default_rng(2).standard_normal((1, 1, 6, 6)).astype(np.float32)
    (ours,) = ReferenceEvaluator(model, new_ops=POOLING_KERNELS).run(None, {"X": x})
    (stock,) = ReferenceEvaluator(model).run(None, {"X": x})
    np.testing.assert_array_equal(ours, stock)
