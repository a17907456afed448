"""Every kind of documented rule gets cases and a judgement of its own: values just outside a
documented set, products probed with balanced factors, the platform's rule of what its CPU
runs, and a limit the compiler meets by rewriting the operator."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.helpers import paths
from tests.helpers.declared import MODELS

from harness.cases.operators import operator_cases
from harness.cases.operators.products import balanced_factors
from harness.cases.operators.proposals import set_neighbours
from harness.cases.operators.repairs import LARGE
from harness.cases.operators.variant import element_count
from harness.documented.properties import CPU_RULE
from harness.judge.checks import ON_CPU, REFUSED, ControlSeen, rejection
from harness.judge.compare import compare, tolerance_for
from harness.judge.observers import control_seen
from harness.models import Declarations
from harness.models.data_movement import TRANSPOSE_IN
from harness.pipeline import GENERIC_JUDGE
from harness.targets.observation import Observation
from harness.vendors import vendor_named
from harness.vendors.rknn.documents.properties import SIMULATOR_OBSERVES
from harness.vendors.rknn.toolkit.buildlog import parse_build_log

LOGS = paths.TESTS / "data" / "buildlogs"
RKNN = vendor_named("rknn")
OUT = [np.arange(6, dtype=np.float32)]
MATCH = compare(OUT, OUT, tolerance_for("float16"))


def cases_of(platform: str, op: str) -> dict:
    return {
        case.id: case for case in operator_cases(RKNN.operators(platform), MODELS, ops=[op]).cases
    }


def logged(name: str) -> Observation:
    """An observation as the simulator pool makes it from a recorded rknn-toolkit2 build log."""
    parsed = parse_build_log((LOGS / f"{name}.log").read_text())
    return Observation(
        backend="simulator",
        outputs=OUT,
        placement=parsed.layers,
        rewrites=parsed.rewrites,
        observes=SIMULATOR_OBSERVES,
    )


# -- value sets ------------------------------------------------------------------------------


def test_a_set_of_integers_is_probed_in_its_gaps_and_past_its_ends():
    assert set_neighbours("strides", (1, 2, 4, 8)) == [3, 5, 9]
    assert set_neighbours("kernel", (2, 3)) == [4, 1]
    assert set_neighbours("axis", (1, 3)) == [0, 2]  # every other axis of a rank-4 tensor
    assert set_neighbours("count_include_pad", (1,)) == [0]  # a flag: the other flag
    assert set_neighbours("mode", ("nearest", "linear")) == []  # no order to step along


def test_rk3588_conv_transpose_has_cases_off_its_stride_set_judged_outside_it():
    cases = cases_of("rk3588", "ConvTranspose")
    for dtype in ("int8", "float16"):
        for stride in (3, 5, 9):
            case = cases[f"rk3588/ConvTranspose/{dtype}/strides={stride}"]
            assert case.documented == "outside"
            assert case.deciding_limit == "ConvTranspose/attr/strides"
            assert case.params["strides"] == [stride, stride]
        assert cases[f"rk3588/ConvTranspose/{dtype}/strides=4"].documented == "supported"


@pytest.mark.parametrize("platform", RKNN.platforms)
def test_resize_scales_off_the_documented_integers_have_cases_outside_them(platform):
    # "缩放倍数为 2-8 的整数倍": non-integral (below 2 and within 2-8), past 8, and 1
    limits = RKNN.operators(platform).operators["Resize"].limits()
    sets = {limit.subject: limit.values for limit in limits if limit.subject.startswith("scale_")}
    assert sets == {"scale_h": (2, 3, 4, 5, 6, 7, 8), "scale_w": (2, 3, 4, 5, 6, 7, 8)}
    cases = cases_of(platform, "Resize").values()
    for subject, axis in (("scale_h", 2), ("scale_w", 3)):
        for scale in (1.5, 2.5, 9, 1):
            probes = [c for c in cases if c.value == f"{subject}={scale}"]
            assert probes, f"{platform}: no case at {subject}={scale}"
            for case in probes:  # one per documented dtype
                assert case.params["scales"][axis] == scale
                assert case.documented == "outside"
                assert case.outside_because == (f"Resize/op/{subject}",)


def test_a_value_onnx_cannot_express_gets_no_case():
    # Split's axes 0..3 are all documented: nothing is left off the set to propose, and no
    # negative axis (it names a positive one)
    assert set_neighbours("axis", (0, 1, 2, 3)) == []
    ids = cases_of("rk3588", "Split")
    assert not [i for i in ids if "axis=-1" in i or "axis=4" in i]


# -- products --------------------------------------------------------------------------------


@given(st.integers(1, 10**7), st.integers(2, 4), st.booleans())
def test_balanced_factors_are_within_one_of_each_other_and_nearest_the_target(n, k, at_least):
    sizes = balanced_factors(n, k, at_least)
    product = math.prod(sizes)
    assert len(sizes) == k and min(sizes) >= 1
    assert max(sizes) - min(sizes) <= 1
    if at_least:
        assert product >= n
        smaller = sorted(sizes)
        smaller[-1] -= 1
        assert math.prod(smaller) < n or smaller[-1] == 0
    else:
        assert product <= n
        # the smallest factor cannot grow without passing n (the others could only unbalance)
        assert product // sizes[-1] * (sizes[-1] + 1) > n


def test_rv1106_hardmax_is_probed_between_its_typical_case_and_its_cap():
    cases = cases_of("rv1106", "Hardmax")
    typical = MODELS.subjects("Hardmax", cases["rv1106/Hardmax/int8/typical"].params)
    balanced = {
        case.value: case
        for case in cases.values()
        if case.dtype == "int8" and case.value.startswith("channel*height*width=")
    }
    products = {
        math.prod(int(x) for x in v.split("=")[1].split("*")): c for v, c in balanced.items()
    }
    inside = sorted(p for p, c in products.items() if c.documented == "supported")
    typical_size = typical["channel"] * typical["height"] * typical["width"]
    assert inside and inside[0] > typical_size and inside[-1] <= 8192
    assert [p for p, c in products.items() if c.documented == "outside"] == [8400]
    assert len(inside) == 3  # a quarter, a half and just inside the cap


# -- formulas --------------------------------------------------------------------------------


def _hardmax_formulas(platform: str) -> dict[str, tuple[list[str], int]]:
    """The factors and axis of each formula of the platform's Hardmax allowing a product of 1."""
    limits = RKNN.operators(platform).operators["Hardmax"].limits()
    return {
        limit.id: (limit.rule["names"], int(str(limit.condition["axis"][0]).split("/")[0]))
        for limit in limits
        if limit.kind == "formula" and " = 1 or " in limit.rule["expression"]
    }


@pytest.mark.parametrize("platform", RKNN.platforms)
def test_a_formulas_value_allowed_alone_has_its_case_and_its_neighbours(platform):
    # RV1103/RV1106: "height*width 等于 1 或大于 8" on axis 1 (channel*height on axis 3); moving
    # one dimension from the typical 4*6 reaches 1*6 and 4*2, never the documented 1*1
    formulas = _hardmax_formulas(platform)
    assert bool(formulas) == (platform in ("rv1103", "rv1106"))
    cases = cases_of(platform, "Hardmax")
    for limit_id, ((a, b), axis) in formulas.items():
        for dtype in ("int8", "float16"):
            for product, documented in ((1, "supported"), (2, "outside")):
                case = cases[f"{platform}/Hardmax/{dtype}/{a}*{b}={product}"]
                found = MODELS.subjects("Hardmax", case.params)
                assert (found[a] * found[b], found["axis"]) == (product, axis)
                assert limit_id in case.limits
                assert case.documented == documented, case.id
                assert case.outside_because == (() if product == 1 else (limit_id,))


def test_a_conjunction_of_equalities_is_probed_where_all_hold():
    # RK2118's MaxPool: "不支持 kernel_h=1 且 kernel_w=1"; 1x1 is outside, 2x1 and 1x2 are not
    cases = cases_of("rk2118", "MaxPool")
    for kernel, documented in (([1, 1], "outside"), ([2, 1], "supported"), ([1, 2], "supported")):
        case = cases[f"rk2118/MaxPool/float16/kernel_h={kernel[0]},kernel_w={kernel[1]}"]
        assert (case.params["kernel"], case.documented) == (kernel, documented)


def _unshrunk() -> Declarations:
    """The tests' declarations with Transpose declaring no shrinkable dimension."""
    spec = MODELS.specs["Transpose"]
    assert spec.probing is not None and spec.probing.shrinkable
    unshrunk = replace(spec, probing=replace(spec.probing, shrinkable=()))
    return MODELS | Declarations({"data_movement": {"Transpose": unshrunk}})


@pytest.mark.parametrize("platform", ["rk3588", "rk3566", "rv1106"])
def test_a_large_transpose_probe_shrinks_only_what_it_does_not_probe(platform):
    catalogue = RKNN.operators(platform)
    shrunk = {c.id: c for c in operator_cases(catalogue, MODELS, ops=["Transpose"]).cases}
    full = {c.id: c for c in operator_cases(catalogue, _unshrunk(), ops=["Transpose"]).cases}
    smaller = 0
    for case_id, was in full.items():  # every case over the budget unshrunk is new: not here
        now = shrunk[case_id]
        before, after = (element_count(MODELS, "Transpose", c.params) for c in (was, now))
        assert after <= before
        if after < before:
            smaller += 1
            assert before > LARGE
        # the same documented status, for the same reasons, and the probed value kept; a
        # product moved off a factor of 1 (``operators.exercised``, named by its factors)
        # moves from each model's own other dimensions, which may cross other limits or not
        name, _, value = now.value.partition("=")
        if "*" not in value:
            assert (now.documented, now.outside_because, now.deciding_limit, now.not_isolable) == (
                was.documented,
                was.outside_because,
                was.deciding_limit,
                was.not_isolable,
            )
        if name in TRANSPOSE_IN and value.isdigit():
            assert MODELS.subjects("Transpose", now.params)[name] == int(value)
    assert smaller > 0


def test_a_transpose_at_its_batch_bound_is_small_but_keeps_the_dims_its_perm_rules_need():
    cases = cases_of("rk3588", "Transpose")
    assert cases["rk3588/Transpose/int8/n1=8192"].params["shape"] == [8192, 2, 2, 2]
    # perm [0,3,2,1] of RK3588 wants h1%16=0 for int8 (T1): h1 stays 16, w1 shrinks to 2
    assert cases["rk3588/Transpose/int8/c1=131071"].params["shape"] == [1, 131071, 16, 2]


# -- rewrites --------------------------------------------------------------------------------


def _outside(platform: str, op: str, value: str):
    return cases_of(platform, op)[f"{platform}/{op}/float16/{value}"]


def control(case_id: str, log: str, platform: str = "rk3588") -> ControlSeen:
    """What the control ``case_id`` showed in the recorded build ``log``."""
    op = case_id.split("/")[1]
    return control_seen(cases_of(platform, op)[case_id], logged(log), rejection)


def test_a_layer_the_control_lacks_is_a_rewrite_meeting_the_limit():
    case = _outside("rk3588", "Convolution", "dilations_h=32")
    seen = control(case.control.id, "rk3588_fp16_conv_dilation31")
    verdict = GENERIC_JUDGE(case, logged("rk3588_fp16_conv_dilation32"), MATCH, seen)
    assert verdict.verdict == "limit-rewritten"
    assert (
        "compiled as Slice + Conv, its control rk3588/Convolution/float16/dilations_h=31 as "
        "Conv" in verdict.detail
    )
    assert "convert_large_dilation_conv_to_normal_conv" in verdict.detail
    # tiled into two MaxPools past the 7x7 input its control has: a rewrite, whatever pass
    case = _outside("rk3588", "GlobalMaxPool", "height=8")
    seen = control(case.control.id, "rk3588_fp16_globalmaxpool_h7")
    verdict = GENERIC_JUDGE(case, logged("rk3588_fp16_globalmaxpool_h8"), MATCH, seen)
    assert verdict.verdict == "limit-rewritten" and "tiling_global_maxpool" in verdict.detail


def test_the_toolkits_own_input_layer_is_no_rewrite():
    # MaxPool at height 8193 compiles as Conv + MaxPool, the Conv the toolkit's own input layer
    case = _outside("rk3588", "MaxPool", "height=8193")
    observation = logged("rk3588_fp16_maxpool_h8193")
    assert [layer["op"] for layer in observation.placement if not layer["io"]] == ["MaxPool"]
    seen = control(case.control.id, "rk3588_fp16_maxpool_h8192")
    verdict = GENERIC_JUDGE(case, observation, MATCH, seen)
    assert verdict.verdict == "doc-drift"
    assert "no layer its control rk3588/MaxPool/float16/height=8192 lacks" in verdict.detail


def test_an_outside_case_without_a_control_that_ran_says_nothing():
    case = _outside("rk3588", "MaxPool", "height=8193")
    observation = logged("rk3588_fp16_maxpool_h8193")
    assert GENERIC_JUDGE(case, observation, MATCH).verdict == "untestable"
    crashed = ControlSeen(case.control.id, "build aborted (SIGABRT)", (), REFUSED)
    verdict = GENERIC_JUDGE(case, observation, MATCH, crashed)
    assert verdict.verdict == "untestable" and "SIGABRT" in verdict.detail


def test_a_refusal_of_the_whole_dtype_is_stated_once_per_operator():
    # RV1106 refuses every float16 build: its typical float16 Hardmax against the int8 one
    # states it (documented supported: a violation), every other float16 case says nothing
    cases = cases_of("rv1106", "Hardmax")
    typical = cases["rv1106/Hardmax/float16/typical"]
    message = (
        "build returned -1 (Current target_platform(rv1106) not support do_quantization = False!)"
    )
    refused = replace(logged("rv1106_fp16_hardmax_typical"), failed_stage="build", error=message)
    ran = ControlSeen(typical.control.id, "", ("Hardmax",))
    verdict = GENERIC_JUDGE(typical, refused, MATCH, ran)
    assert verdict.verdict == "violation" and "not support do_quantization" in verdict.detail
    like_it = control_seen(typical, refused, rejection)
    assert "not support do_quantization" in like_it.trouble
    for value in ("width=2", "width=3", "height*width=8193"):
        case = cases[f"rv1106/Hardmax/float16/{value}"]
        judged = GENERIC_JUDGE(case, refused, MATCH, like_it)
        assert judged.verdict == "untestable", value
        assert "did not run as asked either" in judged.detail
    # the same refusal of an outside case whose control ran is the limit shown
    case = cases["rv1106/Hardmax/float16/width=2"]
    assert GENERIC_JUDGE(case, refused, MATCH, ran).verdict == "limit-confirmed"


def test_an_operator_built_as_other_layers_is_rewritten_away():
    case = cases_of("rv1106", "Div")["rv1106/Div/int8/B=constant"]
    verdict = GENERIC_JUDGE(case, logged("rv1106_int8_div_constant"), MATCH)
    assert verdict.verdict == "rewritten-away"
    assert "no Div layer was built: the model compiled as Mul" in verdict.detail


# -- the platform's CPU ---------------------------------------------------------------------


def test_a_cpu_layer_on_rk2118_which_runs_no_cpu_operator_is_unrunnable():
    case = cases_of("rk2118", "Min")["rk2118/Min/float16/typical"]
    (rule,) = [expect for expect in case.expects if expect.prop == CPU_RULE]
    assert rule.value == () and "RK2118 不支持所有 CPU 算子" in rule.documented
    verdict = GENERIC_JUDGE(case, logged("rk2118_fp16_min_typical"), MATCH)
    assert verdict.verdict == "unrunnable"
    assert verdict.detail.startswith("platform CPU operators: Min on the CPU, which rk2118")
    # on a platform whose CPU runs Min the same placement is a CPU fallback as before
    without = replace(case, expects=tuple(e for e in case.expects if e.prop != CPU_RULE))
    assert GENERIC_JUDGE(without, logged("rk2118_fp16_min_typical"), MATCH).verdict != "unrunnable"


def test_the_cpu_operators_rv1106_lists_may_run_on_its_cpu():
    case = cases_of("rv1106", "Min")["rv1106/Min/float16/typical"]
    (rule,) = [expect for expect in case.expects if expect.prop == CPU_RULE]
    assert "softmax" in rule.value and "min" not in rule.value
    observation = logged("rk2118_fp16_min_typical")
    softmax = [
        {**layer, "op": "Softmax"} if layer.get("op") == "Min" else layer
        for layer in observation.placement
    ]
    verdict = GENERIC_JUDGE(case, replace(observation, placement=softmax), MATCH)
    assert {c["prop"]: c["status"] for c in verdict.checks}[CPU_RULE] == "confirmed"


@pytest.mark.parametrize("platform", ["rk3588", "rk3562", "rk3576"])
def test_platforms_without_a_cpu_rule_expect_none(platform):
    cases = cases_of(platform, "Min")
    assert all(e.prop != CPU_RULE for case in cases.values() for e in case.expects)


# -- operand forms and axes ------------------------------------------------------------------


def test_every_binary_operator_gets_a_constant_operand_and_each_broadcast_form_in_each_dtype():
    cases = cases_of("rk3588", "Min")
    for dtype in ("int8", "float16"):
        constant = cases[f"rk3588/Min/{dtype}/B=constant"]
        assert constant.params["b_constant"] == 1
        shapes = [
            cases[f"rk3588/Min/{dtype}/B={form}"].params["b_shape"]
            for form in ("[1,8,4,6]", "[1,8,1,1]", "[1,1,1,1]")
        ]
        assert shapes == [[1, 8, 4, 6], [1, 8, 1, 1], [1, 1, 1, 1]]


def test_min_and_max_with_a_constant_operand_are_judged_alike_by_their_dtype_rows():
    # Both document "T1: int8(Tensor), float16(Tensor)", which types Convolution's constant
    # weight a Tensor too: the same contradicted reading marks both. Max with a constant runs
    # on the NPU like its typical model (doc-inconsistent, would be doc drift); Min runs on
    # the CPU as every Min does, its typical model too (recorded rk3588 builds), so its case
    # says nothing of the constant (untestable), where it was a limit confirmed
    controls = {
        "Max": ControlSeen("rk3588/Max/float16/typical", "", ("Max",)),
        "Min": ControlSeen(
            "rk3588/Min/float16/typical", "CPU fallback: Min: Min on CPU", (), ON_CPU
        ),
    }
    judged = {}
    for op in ("Min", "Max"):
        case = cases_of("rk3588", op)[f"rk3588/{op}/float16/B=constant"]
        assert case.outside_because == (f"{op}/dtype/T1",)
        assert case.control.id == controls[op].id
        observation = logged(f"rk3588_fp16_{op.lower()}_constant")
        verdict = GENERIC_JUDGE(case, observation, MATCH, controls[op])
        (placement,) = [check for check in verdict.checks if check["prop"] == "placement"]
        (reason,) = placement["inconsistent"]
        limit, _, why = reason.partition(": ")
        assert limit == f"{op}/dtype/T1" and "Convolution/dtype/T1" in why
        judged[op] = verdict.verdict
    assert judged == {"Max": "doc-inconsistent", "Min": "untestable"}


def test_a_form_another_limit_already_probes_is_one_case_not_two():
    # Div documents its constant divisor (T2: float constTensor): the generator's case of
    # that dtype limit and the constant-operand form are the same model
    cases = cases_of("rk3588", "Div")
    constant = [c for c in cases.values() if c.dtype == "float16" and c.params.get("b_constant")]
    assert len(constant) == 1


@pytest.mark.parametrize("op", ["Concat", "Gather", "Split", "Softmax", "Hardmax"])
def test_an_operator_with_an_axis_is_probed_on_every_axis_of_its_rank_4_input(op):
    cases = cases_of("rk3588", op)
    axes = {
        MODELS.subjects(op, case.params)["axis"]
        for case in cases.values()
        if case.dtype == "float16" and (case.value == "typical" or case.value.startswith("axis="))
    }
    assert axes == {0, 1, 2, 3}


# -- formulas over several quantities --------------------------------------------------------


def test_a_formula_over_several_quantities_is_probed_on_both_sides_of_its_boundary():
    # RK3588 ConvTranspose: "不支持 kernel_h * dilations_h - dilations_h - pads_top < 0"
    cases = cases_of("rk3588", "ConvTranspose")
    limit = "ConvTranspose/attr/kernel_h*dilations_h-dilations_h-pads_top<0"
    inside = cases["rk3588/ConvTranspose/float16/pads_top=1"]  # 2*1 - 1 - 1 = 0: supported
    outside = cases["rk3588/ConvTranspose/float16/pads_top=2"]  # 2*1 - 1 - 2 < 0
    assert limit in inside.limits and inside.documented == "supported"
    assert limit in outside.outside_because and outside.deciding_limit == limit


def test_a_formula_whose_other_side_no_single_change_reaches_is_listed_with_the_reason():
    unprobed = operator_cases(RKNN.operators("rk3588"), MODELS, ops=["ConvTranspose"]).unprobed
    reasons = {u.limit.id: u.reason for u in unprobed}
    # output_h follows height, stride and pads: the comparison holds for every model
    assert reasons["ConvTranspose/attr/stride_h*(height-1)-pads_top+1<output_h"].startswith(
        "no single quantity a valid model can change"
    )


def test_a_limit_with_a_precondition_is_probed_with_it_on_and_off():
    # "width : 当dilated_kernel_h > 1 时, width < 16383": the typical 3x3 kernel meets it; a
    # kernel one high turns it off, and the same widths are then documented supported
    cases = cases_of("rk3588", "Convolution")
    limit = "Convolution/input_tensor/width<16383"
    on = cases["rk3588/Convolution/float16/width=16383"]
    off = cases["rk3588/Convolution/float16/width=16383@kernel_h=1"]
    assert on.deciding_limit == limit and on.documented == "outside"
    assert off.params["kernel"][0] == 1 and limit not in off.outside_because
    assert cases["rk3588/Convolution/float16/width=16382"].documented == "supported"


def test_an_int8_model_on_the_cpu_beside_a_refused_float16_control_is_judged_on_its_own():
    # RV1106 documents Div in float16 only and refuses every float16 build: the int8 typical
    # model, whose control is the refused float16 one, ran on the CPU (recorded build). That
    # confirms the int8 dtype limit, not the float16 refusal again
    case = cases_of("rv1106", "Div")["rv1106/Div/int8/typical"]
    assert case.control.id == "rv1106/Div/float16/typical"
    assert case.outside_because == ("Div/dtype",)
    refused = ControlSeen(case.control.id, "build failed: not support do_quantization", (), REFUSED)
    on_cpu = replace(logged("rv1106_int8_div_typical"), failed_stage=None)
    verdict = GENERIC_JUDGE(case, on_cpu, MATCH, refused)
    assert verdict.verdict == "limit-confirmed" and "CPU fallback" in verdict.detail
    assert "did not run as asked either" not in verdict.detail
