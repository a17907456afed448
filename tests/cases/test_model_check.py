"""Every layer of a user's model against the platform's document (``harness.cases.model_check``),
on the committed documents: the RV1106 operator list and the RK3562 operator table."""

from __future__ import annotations

import functools

import numpy as np
import onnx
from onnx import helper, numpy_helper
from tests.helpers.user_models import five_node_model, float_model

from harness.cases.model_check import NOT_LISTED, OUTSIDE, SUPPORTED, ModelCheck, check_model
from harness.cases.user_models import model_case
from harness.modelfiles.prepare import prepare
from harness.vendors import vendor_named

RKNN = vendor_named("rknn")


@functools.cache
def _catalogue(platform: str):  # type: ignore[no-untyped-def]
    return RKNN.operators(platform)


def _check(model: onnx.ModelProto, platform: str, dtype: str) -> ModelCheck:
    names = RKNN.operator_names
    return check_model(model, _catalogue(platform), names, dtype)


def maxpool(kernel: list[int]) -> onnx.ModelProto:
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=kernel)
    return float_model([node], "pool", [1, 4, 16, 16], {"y": None}, opset=13)


def conv(group: int) -> onnx.ModelProto:
    weight = np.ones([8, 8 // group, 3, 3], np.float32)
    node = helper.make_node(
        "Conv", ["x", "w"], ["y"], name="conv", group=group, pads=[1, 1, 1, 1], strides=[2, 2]
    )
    constants = [numpy_helper.from_array(weight, "w")]
    return float_model([node], "conv", [1, 8, 10, 10], {"y": None}, constants=constants)


def test_a_kernel_of_8_on_rv1106_is_outside_kernel_h_with_the_documents_line() -> None:
    check = _check(maxpool([8, 1]), "rv1106", "int8")
    (layer,) = check.layers
    assert (layer.node, layer.op, layer.entry, layer.status) == (
        "pool",
        "MaxPool",
        "MaxPool",
        OUTSIDE,
    )
    (outside,) = layer.outside
    assert outside.id == "MaxPool/attr/kernel_h"
    assert outside.text == "kernel_h ∈ (0, 7]"
    assert outside.where == "RKNN Compiler Support Operator List V2.3.2 § 3.4.42, p. 166"
    assert outside.value == "kernel_h=8"
    inside = {line.id: line.value for line in layer.inside}
    assert inside["MaxPool/attr/kernel_w"] == "kernel_w=1"
    assert inside["MaxPool/attr/strides_h"] == "strides_h=1"  # the ONNX default, filled in
    assert inside["MaxPool/attr/pad_top"] == "pad_top=0"
    assert inside["MaxPool/dtype/T1"] == "int8"
    # MaxPool has no count_include_pad in ONNX: nothing to read, so neither inside nor outside
    assert "MaxPool/attr/count_include_pad" in layer.unread
    assert check.documented == OUTSIDE
    assert check.summary().startswith(
        "layer pool (MaxPool) is outside the documented limit MaxPool/attr/kernel_h (kernel_h=8; "
        'RKNN Compiler Support Operator List V2.3.2 § 3.4.42, p. 166: "kernel_h ∈ (0, 7]")'
    )


def test_a_kernel_of_7_is_inside_every_limit_read() -> None:
    check = _check(maxpool([7, 7]), "rv1106", "int8")
    (layer,) = check.layers
    assert layer.status == SUPPORTED and not layer.outside
    assert "MaxPool/attr/kernel_h" in {line.id for line in layer.inside}
    assert check.documented == SUPPORTED
    assert check.first_outside() is None


def test_the_case_of_an_outside_model_names_the_limit_and_its_line() -> None:
    prepared = prepare(maxpool([8, 1]), "pool", "pool.onnx")
    check = _check(prepared.model, "rv1106", "int8")
    case, _ = model_case(prepared, "rv1106", "int8", check=check)
    assert case.documented == "outside"
    assert case.deciding_limit == "MaxPool/attr/kernel_h"
    assert case.source["text"] == "kernel_h ∈ (0, 7]"
    assert case.source["section"].endswith("§ 3.4.42, p. 166")
    assert case.source["seed"] == "RKNN Compiler Support Operator List V2.3.2"
    assert all(expect.limits == ("MaxPool/attr/kernel_h",) for expect in case.expects)
    placement = next(expect for expect in case.expects if expect.prop == "placement")
    assert placement.value is False  # a CPU fallback is what the document expects
    inside, _ = model_case(prepared, "rv1106", "int8")
    assert inside.documented == "supported"  # no check: no document judges it


def test_a_depthwise_convolution_is_judged_by_its_own_entry() -> None:
    plain, depthwise = _check(conv(1), "rv1106", "int8"), _check(conv(8), "rv1106", "int8")
    assert plain.layers[0].entry == "Convolution"
    assert depthwise.layers[0].entry == "DepthwiseConvolution"
    values = {line.id: line.value for line in plain.layers[0].inside}
    assert values["Convolution/weight/kernel_h"] == "kernel_h=3"
    assert values["Convolution/attr/stride_h"] == "stride_h=2"
    assert values["Convolution/attr/pads_top"] == "pads_top=1"


def test_a_dtype_the_entry_does_not_document_is_outside() -> None:
    # RV1106 documents Convolution's T1 as int8 only
    (layer,) = _check(conv(1), "rv1106", "float16").layers
    assert layer.status == OUTSIDE
    assert (layer.outside[0].id, layer.outside[0].value) == ("Convolution/dtype/T1", "float16")
    assert layer.outside[0].text == "T1: int8(Tensor)"


def test_an_operator_the_document_does_not_list_makes_no_claim() -> None:
    node = helper.make_node("Einsum", ["x", "x"], ["y"], name="einsum", equation="ij,ij->ij")
    model = float_model([node], "einsum", [3, 4], {"y": None})
    check = _check(model, "rv1106", "int8")
    (layer,) = check.layers
    assert (layer.status, layer.entry, layer.inside, layer.outside) == (NOT_LISTED, "", (), ())
    assert check.documented == SUPPORTED
    assert "operators the document does not list: Einsum" in check.summary()


def test_an_operator_tables_elements_and_broadcast_forms_are_read() -> None:
    # RK3562's operator table: AveragePool's count_include_pad is documented as 1 only (ONNX's
    # default is 0); Add's operand of [1,4,1,1] is the form [b,c,1,1], judged by its bounds
    check = _check(five_node_model(), "rk3562", "float16")
    by_node = {layer.node: layer for layer in check.layers}
    pool = by_node["pool"]
    assert [line.id for line in pool.outside] == ["AveragePool/attr/count_include_pad"]
    assert pool.outside[0].value == "count_include_pad=0"
    add = by_node["add"]
    assert add.status == SUPPORTED
    read = {line.id for line in add.inside}
    assert "Expand/broadcast/[b,c,1,1]->[b,c,h,w]/h" in read
    assert "Expand/broadcast/[b,c,1,w]->[b,c,h,w]/h" in add.unread  # another form's bound
    assert check.first_outside() == (pool, pool.outside[0])
