"""Operator models: valid ONNX, host reference equal to an independent numpy computation,
parameter checking, determinism, and out-of-limit values still built."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import numpy_helper
from tests.helpers import onnx_numpy
from tests.helpers.declared import MODELS, OPERATORS

from harness.cases.operators.status import documented_status, governing_limits
from harness.documented.limits import Limit
from harness.documented.operators import OperatorCatalogue
from harness.models import NCHW, BuiltModel, ModelParamError
from harness.models.reference import ORT, SPEC, host_references
from harness.vendors.rknn.documents.operators import seed_catalogue

# ---------------------------------------------------------------------------------------------
# numpy transcriptions of the ONNX operator definitions (written from the spec, not the code)


def initializer(built: BuiltModel, name: str) -> np.ndarray:
    model = onnx.load_from_string(built.onnx_bytes)
    (tensor,) = [t for t in model.graph.initializer if t.name == name]
    return numpy_helper.to_array(tensor)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def run_directions(
    built: BuiltModel, step: Callable[[np.ndarray, list[np.ndarray], int], list[np.ndarray]]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Runs ``step`` over the sequence per direction; returns Y and the final states."""
    x = built.inputs[0].astype(np.float64)
    seq, batch, _ = x.shape
    hidden = built.params["hidden_size"]
    direction = built.params["direction"]
    order = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[direction]
    n_states = 2 if built.op == "LSTM" else 1
    ys, finals = [], []
    for d, backwards in enumerate(order):
        states = [np.zeros((batch, hidden)) for _ in range(n_states)]
        y = np.zeros((seq, batch, hidden))
        for t in reversed(range(seq)) if backwards else range(seq):
            states = step(x[t], states, d)
            y[t] = states[0]
        ys.append(y)
        finals.append(states)
    y_all = np.stack(ys, axis=1)  # [seq, num_directions, batch, hidden]
    return y_all, [np.stack([f[i] for f in finals]) for i in range(n_states)]


def gru_numpy(built: BuiltModel) -> list[np.ndarray]:
    w, r, b = (initializer(built, n).astype(np.float64) for n in ("W", "R", "B"))
    lbr = built.params["linear_before_reset"]

    def step(xt: np.ndarray, states: list[np.ndarray], d: int) -> list[np.ndarray]:
        (h,) = states
        wz, wr, wh = np.split(w[d], 3)
        rz, rr, rh = np.split(r[d], 3)
        wbz, wbr, wbh, rbz, rbr, rbh = np.split(b[d], 6)
        z = sigmoid(xt @ wz.T + h @ rz.T + wbz + rbz)
        rt = sigmoid(xt @ wr.T + h @ rr.T + wbr + rbr)
        if lbr:
            cand = np.tanh(xt @ wh.T + rt * (h @ rh.T + rbh) + wbh)
        else:
            cand = np.tanh(xt @ wh.T + (rt * h) @ rh.T + rbh + wbh)
        return [(1 - z) * cand + z * h]

    y, (y_h,) = run_directions(built, step)
    return [y, y_h]


def lstm_numpy(built: BuiltModel) -> list[np.ndarray]:
    w, r, b = (initializer(built, n).astype(np.float64) for n in ("W", "R", "B"))

    def step(xt: np.ndarray, states: list[np.ndarray], d: int) -> list[np.ndarray]:
        h, c = states
        # ONNX gate order: input, output, forget, cell.
        gates = xt @ w[d].T + h @ r[d].T + b[d][: w.shape[1]] + b[d][w.shape[1] :]
        i, o, f, cand = np.split(gates, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(cand)
        return [sigmoid(o) * np.tanh(c), c]

    y, (y_h, y_c) = run_directions(built, step)
    return [y, y_h, y_c]


def pool_numpy(built: BuiltModel) -> list[np.ndarray]:
    p, (x,) = built.params, built.inputs
    (kh, kw), (sh, sw), (pt, pl, pb, pr) = p["kernel"], p["strides"], p["pads"]
    is_max = built.op == "MaxPool"
    spatial = ((0, 0), (0, 0), (pt, pb), (pl, pr))
    padded = np.pad(x.astype(np.float64), spatial, constant_values=-np.inf if is_max else 0.0)
    real = np.pad(np.ones_like(x, dtype=np.float64), spatial)  # 1 where an input element is
    rounding = math.ceil if p["ceil_mode"] else math.floor
    out_h = rounding((x.shape[2] + pt + pb - kh) / sh) + 1
    out_w = rounding((x.shape[3] + pl + pr - kw) / sw) + 1
    out = np.zeros((*x.shape[:2], out_h, out_w))
    for i in range(out_h):
        for j in range(out_w):
            # A window ceil_mode runs past the padded input is clipped to it (AveragePool-19:
            # the divisor counts only the clipped window's elements).
            window = np.s_[:, :, i * sh : i * sh + kh, j * sw : j * sw + kw]
            if is_max:
                out[:, :, i, j] = padded[window].max(axis=(2, 3))
            else:
                clipped = real[window][0, 0].size
                count = clipped if p["count_include_pad"] else real[window].sum(axis=(2, 3))
                out[:, :, i, j] = padded[window].sum(axis=(2, 3)) / count
    return [out]


def hardmax_numpy(built: BuiltModel) -> list[np.ndarray]:
    (x,), axis = built.inputs, built.params["axis"]
    winner = np.expand_dims(np.argmax(x, axis=axis), axis)
    out = np.zeros_like(x)
    np.put_along_axis(out, winner, 1.0, axis=axis)
    return [out]


def pad_numpy(built: BuiltModel) -> list[np.ndarray]:
    (x,), p = built.inputs, built.params
    pairs = list(zip(p["pads"][:4], p["pads"][4:], strict=True))
    if p["mode"] == "constant":
        return [np.pad(x, pairs, mode="constant", constant_values=p["constant_value"])]
    return [np.pad(x, pairs, mode=p["mode"])]


def binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[BuiltModel], list]:
    """``fn`` of A and B; a constant B is read off the model's initializers."""

    def run(built: BuiltModel) -> list[np.ndarray]:
        model = onnx.load_from_string(built.onnx_bytes)
        constants = [numpy_helper.to_array(t) for t in model.graph.initializer]
        return [fn(*built.inputs, *constants)]

    return run


NUMPY: dict[str, Callable[[BuiltModel], list[np.ndarray]]] = {
    "Add": binary(np.add),
    "Sub": binary(np.subtract),
    "Min": binary(np.minimum),
    "AddRelu": binary(lambda a, b: np.maximum(a + b, 0.0)),
    "Div": binary(np.divide),
    "Mul": binary(np.multiply),
    "Max": binary(np.maximum),
    "MulRelu": binary(lambda a, b: np.maximum(a * b, 0.0)),
    "Pow": lambda m: [np.power(m.inputs[0].astype(np.float64), m.params["exponent"])],
    "Expand": lambda m: [np.broadcast_to(m.inputs[0], m.params["output_shape"])],
    "Gather": lambda m: [np.take(m.inputs[0], m.params["indices"], axis=m.params["axis"])],
    "Hardmax": hardmax_numpy,
    "Pad": pad_numpy,
    "MaxPool": pool_numpy,
    "AveragePool": pool_numpy,
    "GlobalMaxPool": lambda m: [m.inputs[0].max(axis=(2, 3), keepdims=True)],
    "GlobalAveragePool": lambda m: [
        m.inputs[0].astype(np.float64).mean(axis=(2, 3), keepdims=True)
    ],
    "GRU": gru_numpy,
    "LSTM": lstm_numpy,
    **onnx_numpy.NUMPY,
}

# Selections and copies compare exactly; arithmetic within fp32 rounding of a float64 result.
EXACT = {"Max", "Expand", "Gather", "Hardmax", "Pad", "MaxPool", "GlobalMaxPool", *onnx_numpy.EXACT}


def assert_matches_numpy(built: BuiltModel) -> None:
    """Every host reference that runs the model computes the numpy transcription."""
    want = NUMPY[built.op](built)
    for got in host_references(built).outputs.values():
        assert len(got) == len(want) == len(built.output_names)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == np.float32
            assert g.shape == w.shape
            if built.op in EXACT:
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------


def test_every_operator_of_the_seed_has_defaults() -> None:
    assert set(OPERATORS) == set(NUMPY) and set(OPERATORS) <= set(MODELS.defaults)


@pytest.mark.parametrize("op", OPERATORS)
def test_default_model_is_valid_onnx_and_reference_matches_numpy(op: str) -> None:
    built = MODELS.build(op, {}, seed=1)
    model = onnx.load_from_string(built.onnx_bytes)
    onnx.checker.check_model(model, full_check=True)
    # The newest opset rknn-toolkit2 2.5.0 loads, in the oldest IR version that carries it.
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 19)]
    assert model.ir_version == onnx.helper.find_min_ir_version_for(model.opset_import) == 9
    assert [i.name for i in model.graph.input] == built.input_names
    assert [o.name for o in model.graph.output] == built.output_names
    assert model.graph.node[0].op_type == FIRST_NODE.get(op, op)
    for name, data in zip(built.input_names, built.inputs, strict=True):
        declared = model.graph.input[built.input_names.index(name)].type.tensor_type
        assert data.dtype == np.float32
        assert [d.dim_value for d in declared.shape.dim] == list(data.shape)
    # Both references check the default model, except where onnx.reference cannot follow it.
    assert set(host_references(built).outputs) == ({ORT} if op == "LSTM" else {SPEC, ORT})
    assert_matches_numpy(built)


# The ONNX operator a model starts with, where the document names the entry otherwise.
FIRST_NODE = {
    "MulRelu": "Mul",
    "AddRelu": "Add",
    "Clip": "Clip",
    "exMish": "Mish",
    "exSwish": "Sigmoid",  # x * Sigmoid(x)
    "exGelu": "Div",  # x * 0.5 * (1 + Erf(x / sqrt(2)))
    "exSoftmax13": "Softmax",
    "exGlu": "Split",
    "exNorm": "ReduceMean",
    "exMatMul": "MatMul",
    "exWindow": "Reshape",
    "exSDPAttention": "Transpose",  # of the key
    "DepthwiseConvolution": "Conv",
    **{op: "Conv" for op in OPERATORS if op.startswith("Convolution")},
    **{op: "ConvTranspose" for op in OPERATORS if op.startswith("ConvTran")},
}


def case_id(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("Div", {"b_shape": [1, 1, 1, 1]}),
    ("Div", {"b_constant": 1}),
    ("MulRelu", {"b_constant": 1, "b_shape": [1, 1, 1, 6]}),
    ("Mul", {"a_shape": [1, 8, 1, 6], "b_shape": [1, 8, 4, 1]}),
    ("Max", {"a_shape": [1, 1, 4, 1], "b_shape": [2, 3, 4, 5]}),
    ("MulRelu", {"b_shape": [1, 8, 4, 6]}),
    *[("Pow", {"exponent": e}) for e in (0.0, 1.0, 3.0, 0.5, -0.5)],
    *[("Pow", {"exponent": 2.0, "exponent_dtype": t}) for t in ("float16", "int8", "int32")],
    ("Pow", {"exponent": 3.0, "exponent_dtype": "int64"}),
    ("Pow", {"exponent": -0.5, "exponent_dtype": "float16"}),
    ("Pow", {"exponent": 3.0, "exponent_dtype": "int16"}),
    ("Pow", {"exponent": -0.5, "exponent_dtype": "float64"}),
    *[
        ("Expand", {"input_shape": s, "output_shape": [1, 4, 6, 8]})
        for s in ([1, 4, 1, 8], [1, 1, 1, 8], [1, 4, 6, 1], [1, 1, 6, 1], [1, 4, 1, 1])
    ],
    *[("Gather", {"axis": a}) for a in (0, 1, 3, -1)],
    ("Gather", {"axis": 3, "indices": [-1, 2, 2]}),
    *[("Hardmax", {"axis": a}) for a in (3, -1, 0, 2)],
    ("Pad", {"mode": "reflect"}),
    ("Pad", {"mode": "edge", "pads": [1, 1, 0, 0, 0, 2, 3, 3]}),
    ("Pad", {"constant_value": -3.25}),
    ("MaxPool", {"kernel": [2, 3], "strides": [1, 2], "pads": [0, 1, 1, 2]}),
    ("MaxPool", {"ceil_mode": 1, "pads": [0, 0, 0, 0]}),
    ("AveragePool", {"count_include_pad": 0}),
    ("AveragePool", {"count_include_pad": 0, "ceil_mode": 1, "pads": [0, 0, 0, 0]}),
    ("AveragePool", {"ceil_mode": 1}),  # windows past the padded input: a clipped divisor
    ("AveragePool", {"kernel": [2, 2], "strides": [2, 2], "pads": [0, 0, 0, 0]}),
    *[
        ("GRU", {"direction": d, "linear_before_reset": lbr})
        for d in ("forward", "reverse", "bidirectional")
        for lbr in (0, 1)
    ],
    ("GRU", {"seq_length": 3, "batch_size": 2, "input_size": 5, "hidden_size": 6}),
    *[("LSTM", {"direction": d}) for d in ("reverse", "bidirectional")],
    ("LSTM", {"seq_length": 5, "batch_size": 4, "input_size": 3, "hidden_size": 7}),
    # The full operator list's models: each at a documented bound or another documented value.
    *[("Transpose", {"perm": p}) for p in ("[0,1,3,2]", "[0,3,1,2]", "[1,0,2,3]", "[3,2,1,0]")],
    ("Transpose", {"perm": "[0,1,3,2]", "shape": [1, 1, 16, 255]}),  # h1*w1 < 2*q (RK3588)
    ("Reshape", {"output_shape": [2, 2, 24, 2]}),
    *[("Concat", {"axis": a, "inputs": 3}) for a in (0, 2, 3)],
    ("Split", {"axis": 3, "outputs": 3}),
    ("Slice", {"axes": [1, 3], "starts": [0, -3], "ends": [1, 8], "steps": [1, 1]}),
    ("Tile", {"repeats": [2, 1, 1, 3]}),
    *[
        ("Resize", {"mode": m, "coordinate_transformation_mode": c})
        for m in ("nearest", "linear")
        for c in ("half_pixel", "pytorch_half_pixel", "align_corners")
    ],
    ("Resize", {"scales": [1, 1, 8, 8], "mode": "linear"}),  # the documented largest factor
    *[("Softmax", {"axis": a}) for a in (3, -1)],
    ("BatchNormalization", {"epsilon": 1.0}),
    ("Add", {"b_constant": 1}),
    ("Sub", {"b_shape": [1, 1, 1, 1]}),  # the documented [scalar] form
    ("Min", {"a_shape": [1, 1, 4, 1], "b_shape": [2, 3, 4, 5]}),
    ("AddRelu", {"b_shape": [1, 8, 4, 6]}),
    ("Convolution", {"kernel": [31, 1], "pads": [15, 0, 15, 0], "strides": [7, 1]}),
    ("Convolution", {"dilations": [31, 2], "kernel": [2, 3], "group": 2, "shape": [1, 4, 32, 8]}),
    ("DepthwiseConvolution", {"kernel": [8, 8], "dilations": [1, 2], "shape": [1, 3, 9, 16]}),
    ("ConvTranspose", {"strides": [8, 8], "kernel": [3, 2], "dilations": [2, 1]}),
    ("ConvTranspose", {"group": 2, "output_channel": 6}),
    ("ConvolutionLeakyRelu", {}),
    ("ConvTranposeLeakyRelu", {}),
    ("Clip", {"shape": [2, 3, 5, 7]}),
    # The toolkit's fused patterns (ex*): each documented mode and axes, a larger product.
    *[("exNorm", {"mode": m, "axes": a}) for m in ("layer", "rms") for a in ("[1]", "[1,2,3]")],
    ("exNorm", {"axes": "[2,3]", "epsilon": 0.5}),
    *[("exWindow", {"mode": m}) for m in ("reverse", "partition_num_first")],
    ("exWindow", {"shape": [2, 3, 6, 4], "window_size": 2, "mode": "reverse"}),
    ("exGlu", {"axis": 3, "shape": [2, 3, 5, 4]}),
    ("exMatMul", {"b": 3, "k": 96, "n": 5, "m": 7}),
    ("exSDPAttention", {"batch": 1, "channel": 5, "width": 7}),
    ("Where", {"shape": [2, 3, 5, 7]}),
    ("Greater", {"a_shape": [1, 1, 4, 1], "b_shape": [2, 3, 4, 5]}),
]


@pytest.mark.parametrize(("op", "params"), VARIANTS, ids=case_id)
def test_variant_reference_matches_numpy(op: str, params: dict[str, Any]) -> None:
    built = MODELS.build(op, params, seed=7)
    for name, value in params.items():
        assert built.params[name] == value
    assert_matches_numpy(built)


@st.composite
def broadcast_pair(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """Two 4-D shapes that broadcast: per axis equal, or one of them 1."""
    full = draw(st.lists(st.integers(1, 5), min_size=4, max_size=4))
    ones_a = draw(st.lists(st.booleans(), min_size=4, max_size=4))
    ones_b = draw(st.lists(st.booleans(), min_size=4, max_size=4))
    a = [1 if one else n for n, one in zip(full, ones_a, strict=True)]
    b = [1 if one else n for n, one in zip(full, ones_b, strict=True)]
    return a, b


@settings(max_examples=25, deadline=None)
@given(
    op=st.sampled_from(["Div", "Mul", "Max", "MulRelu"]),
    shapes=broadcast_pair(),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_broadcast_of_binary_ops_matches_numpy(
    op: str, shapes: tuple[list[int], list[int]], seed: int
) -> None:
    a, b = shapes
    assert_matches_numpy(MODELS.build(op, {"a_shape": a, "b_shape": b}, seed))


# Values just outside the documented limits are what the harness probes: still built, valid.
TALL = {"shape": [1, 4, 32, 8]}
OUT_OF_LIMITS: list[tuple[str, dict[str, Any]]] = [
    ("Expand", {"input_shape": [1, 2, 1, 4], "output_shape": [1, 2, 8193, 4]}),
    ("Expand", {"input_shape": [1, 2, 4, 8], "output_shape": [3, 2, 4, 8]}),
    ("MaxPool", {"shape": [1, 2, 16, 16], "kernel": [8, 8], "strides": [1, 1], "pads": [0] * 4}),
    ("MaxPool", {"strides": [9, 9], "pads": [0, 0, 0, 0], "shape": [1, 2, 20, 20]}),
    ("Pow", {"exponent": 4.0}),
    ("GRU", {"batch_size": 3}),
    ("LSTM", {"batch_size": 3}),
    ("Pad", {"mode": "reflect", "shape": [1, 1, 2, 8177], "pads": [0, 0, 0, 1, 0, 0, 0, 1]}),
    ("Hardmax", {"shape": [1, 2, 128, 128], "axis": 1}),
    ("GlobalMaxPool", {"shape": [1, 4, 9, 9]}),
    ("GlobalAveragePool", {"shape": [1, 4, 8, 8]}),
    ("Gather", {"axis": -2}),
    ("Transpose", {"perm": "[0,1,3,2]", "shape": [1, 1, 8, 512]}),  # h1*w1 = 2*q, h1%16 != 0
    ("Softmax", {"axis": 2}),
    ("Slice", {"axes": [1], "starts": [3], "ends": [0], "steps": [-1]}),  # steps other than 1
    ("Slice", {"steps": [1, 2]}),
    ("Resize", {"scales": [1, 1, 9, 1]}),
    *[("Resize", {"scales": [1, 1, 1.5, 2.5], "mode": m}) for m in ("nearest", "linear")],
    ("Resize", {"coordinate_transformation_mode": "asymmetric"}),
    ("Convolution", {"kernel": [32, 3], "strides": [8, 1], "pads": [16, 1, 0, 1]} | TALL),
    ("DepthwiseConvolution", {"kernel": [9, 3]} | TALL),
]


@pytest.mark.parametrize(("op", "params"), OUT_OF_LIMITS, ids=case_id)
def test_out_of_limit_params_still_build_valid_models(op: str, params: dict[str, Any]) -> None:
    built = MODELS.build(op, params, seed=3)
    onnx.checker.check_model(onnx.load_from_string(built.onnx_bytes), full_check=True)
    assert_matches_numpy(built)


# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "params", "param"),
    [
        ("Div", {"a_shape": [1, 8, -4, 6]}, "a_shape"),
        ("Mul", {"b_shape": [1, 8, 0, 6]}, "b_shape"),
        ("Max", {"a_shape": [1, 8, 4]}, "a_shape"),
        ("Max", {"b_shape": [1, 8, 3, 6]}, "b_shape"),
        ("MulRelu", {"b_shape": "1,8,4,6"}, "b_shape"),
        ("Div", {"b_constant": True}, "b_constant"),
        ("Pow", {"exponent": 0.5, "exponent_dtype": "int32"}, "exponent"),
        ("Pow", {"exponent": 200.0, "exponent_dtype": "int8"}, "exponent"),
        ("Pow", {"exponent": 0.1, "exponent_dtype": "float16"}, "exponent"),
        ("Pow", {"exponent": float("nan")}, "exponent"),
        ("Pow", {"exponent_dtype": "uint8"}, "exponent_dtype"),
        ("Expand", {"input_shape": [1, 4, 2, 8]}, "output_shape"),
        ("Gather", {"axis": 4}, "axis"),
        ("Gather", {"indices": [0, 4]}, "indices"),
        ("Gather", {"indices": [-5]}, "indices"),
        ("Gather", {"indices": []}, "indices"),
        ("Hardmax", {"axis": 1.0}, "axis"),
        ("Hardmax", {"axis": True}, "axis"),
        ("Pad", {"pads": [0, 0, 1, 1, 0, 0, -1, 1]}, "pads"),
        ("Pad", {"mode": "wrap"}, "mode"),
        ("Pad", {"mode": "reflect", "pads": [0, 0, 4, 0, 0, 0, 0, 0]}, "pads"),
        ("MaxPool", {"kernel": [0, 3]}, "kernel"),
        ("MaxPool", {"pads": [3, 0, 0, 0]}, "pads"),
        ("AveragePool", {"shape": [1, 1, 2, 2], "pads": [0, 0, 0, 0]}, "kernel"),
        ("AveragePool", {"count_include_pad": 2}, "count_include_pad"),
        ("GlobalMaxPool", {"shape": [1, 8, 5, 6, 1]}, "shape"),
        ("GRU", {"batch_size": -3}, "batch_size"),
        ("GRU", {"linear_before_reset": 2}, "linear_before_reset"),
        ("LSTM", {"direction": "both"}, "direction"),
        ("LSTM", {"hidden_size": 0}, "hidden_size"),
        ("LSTM", {"linear_before_reset": 1}, "linear_before_reset"),  # a GRU-only attribute
        ("Transpose", {"perm": "[0,1,2,2]"}, "perm"),
        ("Transpose", {"perm": "0,1,x,2"}, "perm"),
        ("Reshape", {"output_shape": [1, 4, 6, 9]}, "output_shape"),
        ("Concat", {"axis": 4}, "axis"),
        ("Split", {"outputs": 5}, "outputs"),
        ("Slice", {"steps": [1, 0]}, "steps"),
        ("Slice", {"starts": [6, 0]}, "ends"),
        ("Resize", {"mode": "area"}, "mode"),
        ("Resize", {"scales": [1, 1, 0.5, 2]}, "scales"),  # shrinking
        ("Resize", {"scales": [1, 1, float("inf"), 2]}, "scales"),
        ("Resize", {"scales": [1, 1, "2", 2]}, "scales"),
        ("BatchNormalization", {"epsilon": 0.0}, "epsilon"),
        ("Convolution", {"group": 3}, "group"),
        ("Convolution", {"kernel": [9, 3]}, "kernel"),
    ],
)
def test_nonsense_params_raise_naming_op_param_and_value(
    op: str, params: dict[str, Any], param: str
) -> None:
    with pytest.raises(ModelParamError) as caught:
        MODELS.build(op, params, seed=0)
    err, value = caught.value, {**MODELS.defaults[op], **params}[param]
    assert isinstance(err, ValueError)
    assert (err.op, err.param, err.value) == (op, param, value)
    assert op in str(err) and repr(param) in str(err) and repr(value) in str(err)


def test_unknown_operator_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="'Conv'"):
        MODELS.build("Conv", {}, seed=0)


# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPERATORS)
def test_same_seed_same_model_other_seed_other_inputs(op: str) -> None:
    first, again, other = (MODELS.build(op, {}, seed=s) for s in (11, 11, 12))
    assert first.onnx_bytes == again.onnx_bytes
    for a, b, c in zip(first.inputs, again.inputs, other.inputs, strict=True):
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


@pytest.mark.parametrize("op", OPERATORS)
def test_resolved_params_survive_json_and_rebuild_the_same_model(op: str) -> None:
    built = MODELS.build(op, {}, seed=5)
    stored = json.loads(json.dumps(built.params))
    assert stored == built.params
    assert set(stored) == set(MODELS.defaults[op])
    assert MODELS.build(op, stored, seed=5).onnx_bytes == built.onnx_bytes


def test_gather_default_indices_resolve_to_the_axis_size() -> None:
    assert MODELS.defaults["Gather"]["indices"] is None
    built = MODELS.build("Gather", {"shape": [2, 3, 5, 7], "axis": 3}, seed=0)
    assert built.params["indices"] == [6, 0, 3]
    assert MODELS.build("Gather", {"axis": 0}, seed=0).params["indices"] == [0, 0, 0]


def test_changing_default_params_does_not_change_builds() -> None:
    before = MODELS.build("Div", {}, seed=0)
    MODELS.defaults["Div"]["a_shape"][2] = 99
    try:
        assert MODELS.build("Div", {}, seed=0).onnx_bytes == before.onnx_bytes
    finally:
        MODELS.defaults["Div"]["a_shape"][2] = before.params["a_shape"][2]


# ---------------------------------------------------------------------------------------------
# Conditioning of the seeded data: what makes a fp16 NPU result comparable to the reference.


# Constants of a pattern rather than data: GELU's sqrt(2), which the compiler recognises in
# float32 only (as float16, 1.4140625, it leaves Div, Erf, Add, Mul layers instead of one
# exGelu: 2.5.0, rk3588), and exNorm's epsilon (the document's attribute, default 1e-05).
PATTERN_CONSTANTS = {"exGelu": {"Y_sqrt2"}, "exNorm": {"epsilon"}}


@pytest.mark.parametrize("op", OPERATORS)
def test_inputs_and_weights_are_exact_in_float16(op: str) -> None:
    built = MODELS.build(op, {}, seed=2)
    model = onnx.load_from_string(built.onnx_bytes)
    floats = [
        numpy_helper.to_array(t)
        for t in model.graph.initializer
        if t.name not in PATTERN_CONSTANTS.get(op, ())
    ]
    for data in [*built.inputs, *[f for f in floats if f.dtype == np.float32]]:
        np.testing.assert_array_equal(data.astype(np.float16).astype(np.float32), data)


@pytest.mark.parametrize("b_constant", [0, 1])
def test_divisor_is_away_from_zero_with_both_signs(b_constant: int) -> None:
    params = {"b_shape": [1, 8, 4, 6], "b_constant": b_constant}
    built = MODELS.build("Div", params, seed=4)
    model = onnx.load_from_string(built.onnx_bytes)
    constants = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    divisor = constants["B"] if b_constant else built.inputs[1]
    assert built.input_names == (["A"] if b_constant else ["A", "B"])
    assert divisor.dtype == np.float32  # the documented constTensor type, "float"
    assert np.abs(divisor).min() >= 0.5
    assert (divisor < 0).any() and (divisor > 0).any()


@pytest.mark.parametrize("exponent", [0.5, -0.5, -1.0])
def test_pow_base_positive_for_fractional_or_negative_exponents(exponent: float) -> None:
    assert MODELS.build("Pow", {"exponent": exponent}, seed=4).inputs[0].min() >= 0.5


@pytest.mark.parametrize("op", ["Max", "MaxPool", "GlobalMaxPool"])
def test_max_operands_hold_distinct_values(op: str) -> None:
    values = np.concatenate([x.ravel() for x in MODELS.build(op, {}, seed=4).inputs])
    assert np.unique(values).size == values.size


@pytest.mark.parametrize("axis", [1, 3, -1])
def test_hardmax_winner_clear_of_the_runner_up(axis: int) -> None:
    (x,) = MODELS.build("Hardmax", {"shape": [2, 5, 6, 7], "axis": axis}, seed=4).inputs
    top_two = np.sort(x, axis=axis).take([-1, -2], axis=axis)
    assert (top_two.take(0, axis=axis) - top_two.take(1, axis=axis)).min() >= 0.25


# ---------------------------------------------------------------------------------------------
# Declarations (``MODELS.probing``): the catalogue's subjects mapped onto each model and back.


@pytest.fixture(scope="module")
def catalogue() -> OperatorCatalogue:
    return seed_catalogue()


def test_every_catalogue_operator_declares_its_model(catalogue: OperatorCatalogue) -> None:
    assert set(MODELS.probing) == set(OPERATORS)
    assert not set(catalogue.operators) - set(MODELS.probing)
    for op in catalogue.operators:
        assert (
            MODELS.probing[op].size(MODELS.subjects(op, {})) > 0
        )  # the typical model's subjects read


def test_typical_models_lie_inside_every_documented_limit(catalogue: OperatorCatalogue) -> None:
    """The defaults are documented-supported, so each probe changes just what it probes."""
    for op in catalogue.operators.values():
        found = MODELS.subjects(op.name, {})
        limits = governing_limits(catalogue, op)
        assert documented_status(MODELS, op, limits, op.data_dtypes()[0], found) == (), op.name


def _documented_values(limit: Limit) -> list[Any]:
    """Values a limit names for its subject: a range's bounds, a value set, a step."""
    if limit.kind == "range" and limit.interval is not None:
        return list(limit.interval.integer_bounds())
    if limit.kind == "multiple-of":
        return [limit.rule["multiple_of"], limit.rule["multiple_of"] + 1]
    if limit.kind == "values" and limit.values is not None:
        return list(limit.values)
    return []


def test_setting_a_documented_subject_reads_back(catalogue: OperatorCatalogue) -> None:
    """``with_subject`` is the inverse of ``subjects`` for every value a limit names."""
    checked: dict[str, int] = {}
    for op in catalogue.operators.values():
        declared = MODELS.probing[op.name]
        checked[op.name] = 0
        for limit in op.limits():
            key = str(limit.rule.get("element", limit.subject))
            base = {k: v[0] for k, v in limit.condition.items()}
            keys_values = [(key, v) for v in _documented_values(limit)]
            keys_values += [(key, v) for v in declared.outside_values.get(key, ())]
            if limit.kind == "product":
                keys_values += [(factor, 100) for factor in limit.rule["factors"]]
            if limit.kind == "dtype" and limit.subject in declared.dtype_subjects:
                subject = declared.dtype_subjects[limit.subject]
                values = [*limit.values, *declared.outside_values.get(subject, ())]
                keys_values += [(subject, v) for v in values]
            if limit.kind == "dtype":  # once per operator: each dimension one larger
                typical = MODELS.subjects(op.name, {})
                keys_values += [(d, typical[d] + 1) for d in NCHW if d in declared.setters]
            for subject, value in keys_values:
                try:
                    params = MODELS.with_subject(op.name, base, subject, value)
                except KeyError:
                    continue  # not expressible: the case generator reports it unprobed
                found = MODELS.subjects(op.name, params)
                # A negative axis reads as the axis of the 4-D input it denotes (-1 is 3).
                wanted = value % 4 if subject == "axis" else value
                assert found[subject] == wanted, (limit.id, subject, value)
                assert all(found[k] == v for k, v in base.items()), limit.id
                checked[op.name] += 1
    # Every operator has something to probe; Expand's forms are checked below.
    assert all(checked[op] or MODELS.probing[op].broadcast for op in checked), checked


def test_with_subject_leaves_the_given_params_and_defaults_alone() -> None:
    given = {"kernel": [2, 2], "pads": [1, 1, 1, 1]}
    changed = MODELS.with_subject("MaxPool", given, "kernel_h", 1)
    assert changed["kernel"] == [1, 2] and changed["pads"] == [0, 1, 0, 1]  # pad < kernel
    assert given == {"kernel": [2, 2], "pads": [1, 1, 1, 1]}
    assert MODELS.defaults["MaxPool"]["kernel"] == [3, 3]
    with pytest.raises(KeyError, match="kernel"):
        MODELS.with_subject("GlobalMaxPool", {}, "kernel_h", 3)  # a global pool has no kernel


def test_broadcast_declarations_express_every_documented_form(
    catalogue: OperatorCatalogue,
) -> None:
    forms = [limit for limit in catalogue.limits() if limit.kind == "broadcast"]
    declared = {op: p.broadcast for op, p in MODELS.probing.items() if p.broadcast}
    assert forms and declared
    for op, broadcast in declared.items():
        if op in catalogue.operators:  # the seed's operators; the rest: test_models_documents
            roles = {role.name for role in catalogue.operators[op].roles}
            assert broadcast.operand in roles, (op, broadcast.operand)
        for form in forms:
            letters = form.rule["from"].strip("[]").split(",")
            out = [2, 3, 4, 5]
            source = [1 if s == "1" else o for s, o in zip(letters, out, strict=True)]
            params = broadcast.params(source, out)
            found = MODELS.subjects(op, params)
            assert found["form"] == form.rule["from"], (op, form.id)
            assert [found[d] for d in "bchw"] == out
            MODELS.build(op, params, seed=0)  # a valid model of that form


def test_outside_values_are_undocumented_yet_expressible(catalogue: OperatorCatalogue) -> None:
    for op, declared in MODELS.probing.items():
        if op not in catalogue.operators:
            continue
        limits = catalogue.operators[op].limits()
        # A dtype subject's values are those of the type variable choosing it (Pow's T2).
        chosen_by = {subject: var for var, subject in declared.dtype_subjects.items()}
        for key, outside in declared.outside_values.items():
            documented = [
                lim
                for lim in limits
                if (lim.kind == "values" and lim.subject == key)
                or (lim.kind == "dtype" and lim.subject == chosen_by.get(key))
            ]
            assert documented, (op, key)
            for value in outside:
                assert all(value not in (lim.values or ()) for lim in documented), (op, value)
                MODELS.build(op, MODELS.with_subject(op, {}, key, value), seed=0)
        dtype_vars = {lim.subject for lim in limits if lim.kind == "dtype"}
        assert set(declared.dtype_subjects) <= dtype_vars, op
