"""Users' ONNX models built for the tests of ``hil run`` and ``pytest --models``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = [1, 4, 12, 12]


def float_model(
    nodes: list[onnx.NodeProto],
    name: str,
    input_shape: Sequence[int | str],
    outputs: dict[str, list[int | str] | None],
    *,
    constants: list[onnx.TensorProto] | None = None,
    opset: int = 19,
    ir_version: int = 9,
) -> onnx.ModelProto:
    """A float model of ``nodes`` with input ``x`` and the named outputs (shape None: left
    to inference)."""
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape)],
        [
            helper.make_tensor_value_info(out, TensorProto.FLOAT, shape)
            for out, shape in outputs.items()
        ],
        constants or [],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model


def five_node_model() -> onnx.ModelProto:
    """Add, Relu, then the dilated AveragePool (the middle node) as output ``pooled`` and a
    Mul, Sigmoid branch from the Relu as output ``y``."""
    constants = [
        numpy_helper.from_array(np.full([1, 4, 1, 1], 0.25, np.float32), "bias"),
        numpy_helper.from_array(np.full([1, 4, 1, 1], 1.5, np.float32), "scale"),
    ]
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["a"], name="add"),
        helper.make_node("Relu", ["a"], ["r"], name="relu"),
        helper.make_node(
            "AveragePool", ["r"], ["pooled"], name="pool", kernel_shape=[3, 3], dilations=[2, 2]
        ),
        helper.make_node("Mul", ["r", "scale"], ["m"], name="mul"),
        helper.make_node("Sigmoid", ["m"], ["y"], name="sigmoid"),
    ]
    model = float_model(nodes, "five", SHAPE, {"pooled": None, "y": None}, constants=constants)
    return onnx.shape_inference.infer_shapes(model)


def mynet_model() -> onnx.ModelProto:
    """docs/reproducing.md's RV1106 walk-through: a Conv, a Relu and a MaxPool with
    ``kernel_shape=[8,1]`` and a top pad of 7 on a 3x8x8 image (seeded weights)."""
    rng = np.random.default_rng(7)
    weights = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node(
            "MaxPool", ["r"], ["pooled"], name="pool", kernel_shape=[8, 1], pads=[7, 0, 0, 0]
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "mynet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [1, 8, 8, 8])],
        [
            numpy_helper.from_array(weights, "w"),
            numpy_helper.from_array(np.zeros(8, np.float32), "b"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model
