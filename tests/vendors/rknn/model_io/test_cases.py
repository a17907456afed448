"""Model-I/O cases: generation from the seed-003 catalogue, the N/width formulas at their edges
(expected values worked out by hand from the seed), verdicts on constructed observations, and
the report section.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.cases.case import Case
from harness.documented.properties import PRECISION
from harness.judge.compare import Comparison
from harness.report.documented_rows import DOCUMENTED_KEY, NOT_RUN, documented_sections
from harness.report.markdown import md_escape, render_markdown
from harness.report.matrix import build_report
from harness.results.case_records import case_record
from harness.results.journal import read_run_metadata, write_run_metadata
from harness.results.records import CaseRecord
from harness.targets.observation import Observation
from harness.vendors.rknn import QUERIED_TENSOR
from harness.vendors.rknn.documents.model_io import ModelIOError, load_model_io
from harness.vendors.rknn.documents.properties import (
    BACKEND,
    C_RUNNER_OBSERVES,
    INPUT_STRIDE,
    PYTHON_RUNNER_OBSERVES,
    SIMULATOR_OBSERVES,
    W_STRIDE,
    WIDTH_LIMIT,
)
from harness.vendors.rknn.model_io.cases import documented_rows, model_io_cases, platform_cases
from harness.vendors.rknn.model_io.checks import JUDGE, OBSERVERS
from harness.vendors.rknn.toolkit.buildlog import crash_site, parse_build_log

TARGETS = load_model_io().targets
judge = JUDGE


def probe(case_id: str) -> Case:
    return platform_cases(case_id.split("/", 1)[0])[case_id]


def expect(case_id: str, prop: str) -> Any:
    (found,) = [e for e in probe(case_id).expects if e.prop == prop]
    return found


# -- generation ------------------------------------------------------------------------------


@pytest.mark.parametrize("platform", TARGETS)
def test_every_target_has_unique_moderate_cases(platform: str) -> None:
    cases = model_io_cases(platform)
    assert len({c.id for c in cases}) == len(cases)
    assert 30 <= len(cases) <= 150  # representative values: the suite stays well under 5 min
    assert all(c.id.startswith(f"{platform}/") and c.platform == platform for c in cases)
    kinds = Counter(c.id.split("/")[1] for c in cases)
    assert set(kinds) == {"input", "conv", "output"}


def test_all_means_every_documented_target() -> None:
    cases = model_io_cases("all")
    assert (
        {c.platform for c in cases}
        == set(TARGETS)
        == {
            "rk3562",
            "rk3566",
            "rk3568",
            "rk3576",
            "rk3588",
            "rv1103",
            "rv1106",
            "rv1103b",
            "rv1106b",
            "rk2118",
            "rv1126b",
        }
    )


def test_an_undocumented_platform_is_refused() -> None:
    with pytest.raises(ModelIOError, match="rk9999"):
        model_io_cases("rk9999")


@pytest.mark.parametrize("platform", ["rk3566", "rk3588", "rv1106", "rk2118", "rv1103b"])
def test_every_input_and_output_row_is_probed(platform: str) -> None:
    group = load_model_io().group(platform)
    cited = {i for c in platform_cases(platform).values() for e in c.expects for i in e.limits}
    assert {r.id for r in group.inputs} <= cited
    assert {r.id for r in group.outputs} <= cited


def test_precisions_follow_the_tables() -> None:
    """RV1106 documents int8 only, RK2118 float16 only (the toolkit refuses the others)."""
    assert {c.dtype for c in model_io_cases("rv1106")} == {"int8"}
    assert {c.dtype for c in model_io_cases("rk2118")} == {"float16"}
    assert {c.dtype for c in model_io_cases("rk3588")} == {"int8", "float16"}


@pytest.mark.parametrize(
    ("case_id", "w_stride", "fed"),
    [
        ("rk3566/input/int8/uint8/4d/c3/w33", 40, "uint8"),  # aligned to 8
        ("rk3566/input/float16/int8/4d/c1/w33", 36, "int8"),  # aligned to 4
        ("rk3588/input/int8/float16/4d/c4/w33", 48, "float16"),  # aligned to 16
        ("rk3588/input/float16/float32/4d/c3/w33", 40, "float32"),  # "Other types", 8
        ("rv1103b/input/int8/int8/4d/c3/w33", 40, "int8"),  # documented 8
        ("rk2118/input/float16/float16/4d/c3/w33", 36, "float16"),  # documented 4
        ("rk3566/input/int8/uint8/4d/c5/w33", 33, "uint8"),  # channel≠1,3,4: 1
        ("rk3566/input/int8/float32/nd/c3/w33", 33, "float32"),  # not 4-D: 1
    ],
)
def test_input_cases_carry_the_documented_stride(case_id: str, w_stride: int, fed: str) -> None:
    case = probe(case_id)
    assert case.params["w_stride"] == w_stride
    assert case.params["input_type"] == fed
    assert expect(case_id, "input buffer stride").value == w_stride
    assert expect(case_id, "w_stride attribute").value == w_stride


def test_backend_expectation_is_the_rows_backend() -> None:
    assert expect("rk3588/input/int8/uint8/4d/c3/w32", "mean/scale/quant backend").value == "NPU"
    assert expect("rk3588/input/int8/float16/4d/c3/w32", "mean/scale/quant backend").value == "CPU"


def test_not_four_d_inputs_are_one_dimensional_convolutions() -> None:
    case = probe("rk2118/input/float16/float16/nd/c3/w4097")
    assert case.params["shape"] == [1, 3, 4097] and case.params["kernel"] == [3]
    # RK2118's not-4-D row names condition A: 4096 is the cap with dk_h = 1, N = 6.
    assert case.documented == "outside" and case.outside_because == ("rk2118/conv/A/2",)


# -- the N and width formulas at their edges (worked by hand from the seed) --------------------


@pytest.mark.parametrize(
    ("case_id", "documented", "broken"),
    [
        # RK3566 A: width * 3 < 1024 * 7 = 7168: 2389 * 3 = 7167 inside, 2390 * 3 = 7170 not.
        ("rk3566/conv/A/Convolution/k3d1/w2389", "supported", ()),
        ("rk3566/conv/A/Convolution/k3d1/w2390", "outside", ("rk3566-rk3568/conv/A/1",)),
        # 1x1: 1024 * 7 > 4096, so the cap binds: 4096 inside, 4097 not.
        ("rk3566/conv/B/ConvTranspose/k1d1/w4096", "supported", ()),
        ("rk3566/conv/B/ConvTranspose/k1d1/w4097", "outside", ("rk3566-rk3568/conv/B/2",)),
        # dilation 14: 29x29 = 841, CEIL(841/128) = 7, N = 1: 35 * 29 = 1015 < 1024, 36 no.
        ("rk3566/conv/A/Convolution/k3d14/w35", "supported", ()),
        ("rk3566/conv/A/Convolution/k3d14/w36", "outside", ("rk3566-rk3568/conv/A/1",)),
        # dilation 15: 31x31 = 961, CEIL = 8, N = 0: unsupported at any width.
        (
            "rk3566/conv/A/Convolution/k3d15/w32",
            "outside",
            ("rk3566-rk3568/conv/N-range", "rk3566-rk3568/conv/A/1"),
        ),
        # depthwise / 4096: 169x169 = 28561 -> 7 -> N = 1, 6 * 169 = 1014 < 1024.
        ("rk3566/conv/A/DepthwiseConvolution/k3d84/w6", "supported", ()),
        ("rk3566/conv/A/DepthwiseConvolution/k3d84/w7", "outside", ("rk3566-rk3568/conv/A/1",)),
        # RK3588: N = 12 - MAX(CEIL(9/128), 3) = 9, outside 1..7; width 2048 * 9 / 3 = 6144.
        ("rk3588/conv/A/Convolution/k3d1/w6144", "outside", ("rk3588/conv/N-range",)),
        # 23x23 = 529 -> CEIL 5 -> N = 7, the first in range; A: 2048 * 7 / 23 = 623.4.
        ("rk3588/conv/A/Convolution/k3d11/w623", "supported", ()),
        ("rk3588/conv/A/Convolution/k3d11/w624", "outside", ("rk3588/conv/A/1",)),
        # B: <= 1024 * 7: 311 * 23 = 7153 <= 7168, 312 * 23 = 7176 not.
        ("rk3588/conv/B/Convolution/k3d11/w311", "supported", ()),
        ("rk3588/conv/B/Convolution/k3d11/w312", "outside", ("rk3588/conv/B/1",)),
        # RK3562: N = 8 - MAX(1, 2) = 6, 3 * 4096 = 12288 = 2048 * 6: both bounds meet at 4096.
        ("rk3562/conv/A/Convolution/k3d1/w4096", "supported", ()),
        (
            "rk3562/conv/A/Convolution/k3d1/w4097",
            "outside",
            ("rk3562/conv/A/1", "rk3562/conv/A/2"),
        ),
        # RK3576 B ConvTranspose: N = 12 - MAX(CEIL(/128), 2); 37x37 = 1369 -> 11 -> N = 1,
        # 2048 / 37 = 55.3; 39x39 = 1521 -> 12 -> N = 0.
        ("rk3576/conv/B/ConvTranspose/k3d18/w55", "supported", ()),
        ("rk3576/conv/B/ConvTranspose/k3d18/w56", "outside", ("rk3576-rv1126b/conv/B/1",)),
        (
            "rk3576/conv/B/ConvTranspose/k3d19/w40",
            "outside",
            ("rk3576-rv1126b/conv/N-range", "rk3576-rv1126b/conv/B/1"),
        ),
    ],
)
def test_width_formula_edges(case_id: str, documented: str, broken: tuple[str, ...]) -> None:
    case = probe(case_id)
    assert case.documented == documented
    assert case.outside_because == broken
    assert expect(case_id, "width limit").value is (documented == "supported")


def test_rk3588_convolution_enters_n_range_at_dilated_23() -> None:
    """21x21 = 441 -> CEIL 4 -> MAX(4, 3) -> N = 8: the 3x3 probes stop just before 23x23."""
    cases = list(platform_cases("rk3588").values())
    dilations = {c.params["dilation"][0] for c in cases if "/conv/A/Convolution/" in c.id}
    assert 11 in dilations and 10 not in dilations


def test_unrestricted_channels_are_supported_beyond_the_condition() -> None:
    case = probe("rk3566/conv/A/unrestricted/c5/w2390")
    assert case.documented == "supported" and case.params["shape"][1] == 5


def test_output_cases_carry_the_documented_nc1hwc2_size() -> None:
    """3 channels, 3x7: H*W = 21 -> 24. RK3588 int8 conv: 32 channels, int8 Add: 16."""
    size = "NC1HWC2 buffer size"
    assert expect("rk3588/output/int8/4d/Conv/c3-3x7", size).value == 24 * 32
    assert expect("rk3588/output/int8/4d/Add/c3-3x7", size).value == 24 * 16
    assert expect("rk3588/output/float16/4d/Conv/c20-3x7", size).value == 24 * 32 * 2
    assert expect("rk3566/output/float16/4d/Add/c3-3x7", size).value == 24 * 4 * 2
    assert expect("rk3566/output/int8/4d/Add/c3-3x7", "NHWC channels").value == 8
    assert expect("rk3562/output/int8/4d/Add/c3-3x7", "NHWC channels").value == 3  # "None"


def test_what_a_target_observes_is_the_targets_not_the_cases() -> None:
    """The runtime's w_stride is seen by a C-runner board only; no target sees the backend."""
    assert W_STRIDE in C_RUNNER_OBSERVES
    assert W_STRIDE not in SIMULATOR_OBSERVES | PYTHON_RUNNER_OBSERVES
    assert INPUT_STRIDE in SIMULATOR_OBSERVES & PYTHON_RUNNER_OBSERVES & C_RUNNER_OBSERVES
    assert BACKEND not in C_RUNNER_OBSERVES and OBSERVERS[BACKEND].check is None


def test_the_judge_reads_the_expectations_the_case_carries() -> None:
    """Judging never regenerates a case: a changed expectation is what the check compares."""
    case = probe("rk3566/input/int8/uint8/4d/c3/w33")
    wider = tuple(
        replace(e, value=48) if e.prop == "input buffer stride" else e for e in case.expects
    )
    seen = observation(input_log(3 * 48 * 3), [np.zeros(1)])
    assert statuses(judge(case, seen, MATCH))["input buffer stride"] == "doc-drift"
    assert statuses(judge(replace(case, expects=wider), seen, MATCH))["input buffer stride"] == (
        "confirmed"
    )


# -- verdicts on constructed observations ----------------------------------------------------

_PREFIX = "D RKNN: [00:00:00.000] "
_RULE = "-" * 60


def build_log(
    layers: list[tuple[str, str, str]],
    tensors: list[tuple[str, str, str, str, str, int]],
    errors: tuple[str, ...] = (),
    rewrites: tuple[str, ...] = (),
) -> str:
    """A log in the toolkit's verbose format: layers (op, dtype, target); tensors (name, dtype,
    format, orig, native, size)."""
    lines = [f"D     {r}" for r in rewrites]
    lines += [f"E RKNN: [00:00:00.000] {e}" for e in errors]
    lines += [_RULE, "Network Layer Information Table", _RULE]
    lines.append("ID OpType DataType Target InputShape OutputShape Cycles RW FullName")
    lines.append(_RULE)
    lines += [
        f"{i} {op} {dtype} {target} \\ (1) 0/0/0 0 {op}:n{i}"
        for i, (op, dtype, target) in enumerate(layers)
    ]
    lines += [_RULE, "Feature Tensor Information Table", _RULE]
    lines.append("ID User Tensor DataType DataFormat OrigShape NativeShape | [Start End) Size")
    lines.append(_RULE)
    for i, (name, dtype, fmt, orig, native, size) in enumerate(tensors):
        lines.append(f"{i} Conv {name} {dtype} {fmt} {orig} {native} | 0x0 0x{size:x} 0x{size:x}")
    lines.append(_RULE)
    return "\n".join(
        _PREFIX + line if not line.startswith(("D  ", "E ")) else line for line in lines
    )


def observation(log: str, outputs: list[np.ndarray] | None = None, **kw: Any) -> Observation:
    parsed = parse_build_log(log)
    return Observation(
        "simulator",
        outputs=outputs,
        placement=parsed.layers,
        rewrites=parsed.rewrites,
        tensors=parsed.tensors,
        log=log,
        **{"observes": SIMULATOR_OBSERVES, **kw},
    )


MATCH = Comparison(True, {}, {}, "outputs match the reference")
CONV_NPU = [
    ("InputOperator", "INT8", "CPU"),
    ("Conv", "INT8", "NPU"),
    ("OutputOperator", "INT8", "CPU"),
]
REGTASK = "REGTASK: The bit width of field value exceeds the limit, target: lite, limit: 0x7ff"


def input_log(size: int, **kw: Any) -> str:
    x = ("x", "INT8", "NC1HWC2", "(1,3,3,33)", "(1,1,3,33,3)", size)
    return build_log(CONV_NPU, [x], **kw)


def statuses(verdict: Any) -> dict[str, str]:
    return {check["prop"]: check["status"] for check in verdict.checks}


def test_input_stride_from_the_tensor_size_confirms_the_documented_alignment() -> None:
    case = probe("rk3566/input/int8/uint8/4d/c3/w33")
    verdict = judge(case, observation(input_log(3 * 40 * 3), [np.zeros(1)]), MATCH)
    assert verdict.verdict == "confirmed"
    assert statuses(verdict) == {
        "input buffer stride": "confirmed",
        "w_stride attribute": "unobserved",
        "mean/scale/quant backend": "unobserved",
        "width limit": "confirmed",
        "result": "confirmed",
        "precision": "confirmed",  # the Conv layer's DataType is INT8
    }
    assert "not observable on simulator: w_stride attribute" in verdict.detail
    backend = next(c for c in verdict.checks if c["prop"] == "mean/scale/quant backend")
    assert OBSERVERS[BACKEND].needs in backend["observed"]
    assert backend["observed"].startswith("simulator does not observe this")


def test_a_wider_stride_than_documented_is_doc_drift() -> None:
    case = probe("rk3566/input/int8/uint8/4d/c3/w33")
    verdict = judge(case, observation(input_log(3 * 48 * 3), [np.zeros(1)]), MATCH)
    assert verdict.verdict == "doc-drift"
    stride = next(c for c in verdict.checks if c["prop"] == "input buffer stride")
    assert "stride 48" in stride["observed"]


def test_a_size_without_whole_rows_is_unobserved_not_passed() -> None:
    case = probe("rk3566/input/int8/uint8/4d/c3/w33")
    verdict = judge(case, observation(input_log(3 * 40 * 3 + 1), [np.zeros(1)]), MATCH)
    assert statuses(verdict)["input buffer stride"] == "unobserved"


@pytest.mark.parametrize(
    ("case_id", "log_kw", "width_status"),
    [
        ("rk3566/conv/A/Convolution/k3d1/w2390", {}, "doc-drift"),
        ("rk3566/conv/A/Convolution/k3d1/w2390", {"errors": (REGTASK,)}, "limit-confirmed"),
        ("rk3566/conv/A/Convolution/k3d1/w2389", {"errors": (REGTASK,)}, "violation"),
        ("rk3566/conv/A/Convolution/k3d1/w2389", {"errors": ("Unkown op target: 0",)}, "confirmed"),
        (
            "rk3566/conv/A/Convolution/k3d15/w32",
            {"rewrites": ("split: remove node = ['conv'], add node = ['a', 'b']",)},
            "doc-drift",  # a rewrite on the NPU is reported, not taken as enforcement
        ),
    ],
)
def test_width_limit_verdicts(case_id: str, log_kw: dict, width_status: str) -> None:
    case = probe(case_id)
    verdict = judge(case, observation(build_log(CONV_NPU, [], **log_kw), [np.zeros(1)]), MATCH)
    assert statuses(verdict)["width limit"] == width_status
    assert verdict.verdict == width_status


def test_cpu_fallback_confirms_a_limit_and_violates_support() -> None:
    on_cpu = [("Conv", "INT8", "CPU")]
    outside = probe("rk3566/conv/A/Convolution/k3d1/w2390")
    inside = probe("rk3566/conv/A/Convolution/k3d1/w2389")
    assert judge(outside, observation(build_log(on_cpu, []), [np.zeros(1)]), MATCH).verdict == (
        "limit-confirmed"
    )
    assert judge(inside, observation(build_log(on_cpu, []), [np.zeros(1)]), MATCH).verdict == (
        "violation"
    )


def test_a_compiler_abort_after_an_error_is_a_rejected_build() -> None:
    """The compiler rejects some networks by aborting ("failed to tile argb mode layer!" then
    SIGABRT, measured on rv1103b and rk2118); a rerun confirms it
    (harness.vendors.rknn.toolkit.crash)."""
    log = build_log([], [], errors=("failed to tile argb mode layer!",))
    site = crash_site(log)
    assert site.endswith("after: RKNN: failed to tile argb mode layer!")
    crash = {"failed_stage": "build", "aborted": "SIGABRT", "error": f"compiler crash ({site})"}
    inside = probe("rk2118/conv/A/Convolution/k1d1/w4096")
    outside = probe("rk2118/conv/A/Convolution/k1d1/w4097")
    verdict = judge(inside, observation(log, **crash), None)
    assert verdict.verdict == "violation" and "build aborted (SIGABRT)" in verdict.detail
    assert "failed to tile argb" in verdict.detail
    assert judge(outside, observation(log, **crash), None).verdict == "limit-confirmed"
    # Unconfirmed (the rerun died another way), a dead worker says nothing about the model.
    unconfirmed = observation(log, infra_error="worker killed by signal SIGABRT ...")
    assert judge(inside, unconfirmed, None).verdict == "infra-error"


def test_a_wrong_result_outranks_everything_observed() -> None:
    case = probe("rk3566/input/int8/uint8/4d/c3/w33")
    wrong = Comparison(False, {}, {}, "12 of 40 elements differ")
    verdict = judge(case, observation(input_log(3 * 48 * 3), [np.zeros(1)]), wrong)
    assert verdict.verdict == "wrong-result" and "12 of 40" in verdict.detail


def output_log(native: str, size: int, *extra: tuple[str, str, str, str, str, int]) -> str:
    y = ("y", "INT8", "NC1HWC2", "(1,3,3,7)", native, size)
    return build_log(CONV_NPU, [y, *extra])


def test_nc1hwc2_decoding_with_the_documented_c2() -> None:
    """RK3588 int8, last layer conv: 32 channels of 24 pixels; C2 documented as 32."""
    case = probe("rk3588/output/int8/4d/Conv/c3-3x7")
    out = [np.random.default_rng(0).uniform(-1, 1, (1, 3, 3, 7)).astype(np.float32)]
    as_documented = judge(case, observation(output_log("(1,1,3,7,32)", 768), out), MATCH)
    assert statuses(as_documented)["NC1HWC2 C2"] == "confirmed"
    in_pairs = judge(case, observation(output_log("(1,2,3,7,16)", 768), out), MATCH)
    assert statuses(in_pairs)["NC1HWC2 buffer size"] == "confirmed"
    assert statuses(in_pairs)["NC1HWC2 C2"] == "doc-drift"
    too_small = judge(case, observation(output_log("(1,1,3,7,16)", 384), out), MATCH)
    assert statuses(too_small)["NC1HWC2 buffer size"] == "doc-drift"
    assert statuses(too_small)["NCHW output"] == "unobserved"


@pytest.mark.parametrize(
    ("forms", "status"),
    [
        ([("y_exSecondary", "INT8", "NC1HWC2", "(1,3,7,8)", "(1,1,7,8,8)", 168)], "confirmed"),
        ([("y_exSecondary1", "INT8", "NHWC", "(1,3,7,3)", "(1,1,7,3,8)", 63)], "doc-drift"),
        ([], "unobserved"),
    ],
)
def test_nhwc_forms_of_the_output(forms: list, status: str) -> None:
    """RK3566 int8 NHWC: channels aligned to 8, so 3 channels occupy 8."""
    case = probe("rk3566/output/int8/4d/Add/c3-3x7")
    out = [np.zeros((1, 3, 3, 7), np.float32)]
    verdict = judge(case, observation(output_log("(1,1,3,7,8)", 192, *forms), out), MATCH)
    assert statuses(verdict)["NHWC channels"] == status


def test_values_queried_on_a_board_do_not_stand_in_for_the_compiler_forms() -> None:
    """A c-runner board appends rknn_query entries; the NHWC check reads the build log's."""
    case = probe("rk3566/output/int8/4d/Add/c3-3x7")
    out = [np.zeros((1, 3, 3, 7), np.float32)]
    seen = observation(output_log("(1,1,3,7,8)", 192), out)
    queried = {"name": "y_exSecondary", "source": QUERIED_TENSOR, "format": "NHWC"}
    seen.tensors.append(queried | {"orig_shape": [1, 3, 7, 3], "native_shape": [1, 3, 7, 3]})
    assert statuses(judge(case, seen, MATCH))["NHWC channels"] == "unobserved"


def on_c_runner_board(seen: Observation, w_stride: int | None) -> Observation:
    """``seen`` as a C-runner board reports it, with the runtime's queried input entry."""
    board = replace(seen, backend="rk3566-c", observes=C_RUNNER_OBSERVES, tensors=[*seen.tensors])
    if w_stride is not None:  # as hil_c_runner reports a 3-channel, 33-wide NHWC int8 input
        board.tensors.append(
            {
                "source": QUERIED_TENSOR,
                "role": "input",
                "name": "x",
                "dtype": "INT8",
                "format": "NHWC",
                "orig_shape": [1, 3, 33, 3],
                "native_shape": [1, 3, 33, 3],
                "w_stride": w_stride,
                "size_with_stride": 3 * (w_stride or 33) * 3,
            }
        )
    return board


@pytest.mark.parametrize(
    ("w_stride", "status"),
    [(40, "confirmed"), (48, "doc-drift"), (0, "doc-drift")],  # 0: the width itself, 33
)
def test_a_c_runner_boards_queried_w_stride_is_judged(w_stride: int, status: str) -> None:
    """RK3566 int8 uint8, 3 channels at width 33: documented w_stride 40 (aligned to 8)."""
    case = probe("rk3566/input/int8/uint8/4d/c3/w33")
    seen = on_c_runner_board(observation(input_log(3 * 40 * 3), [np.zeros(1)]), w_stride)
    verdict = judge(case, seen, MATCH)
    assert statuses(verdict)["w_stride attribute"] == status
    assert verdict.verdict == status
    assert "not observable on rk3566-c: mean/scale/quant backend" in verdict.detail
    check = next(c for c in verdict.checks if c["prop"] == "w_stride attribute")
    assert f"w_stride {w_stride}," in check["observed"]


def test_a_c_runner_board_without_queried_attributes_leaves_w_stride_unobserved() -> None:
    case = probe("rk3566/input/int8/uint8/4d/c3/w33")
    failed = observation(input_log(3 * 40 * 3), failed_stage="runtime", error="E RKNN: init")
    verdict = judge(case, on_c_runner_board(failed, None), None)
    assert statuses(verdict)["w_stride attribute"] == "unobserved"
    assert verdict.verdict == "violation"


def test_undefined_output_of_a_three_d_model() -> None:
    case = probe("rk3566/output/int8/nd/Reshape/c3-21")
    y = ("y", "INT8", "UNDEFINED", "(1,3,21)", "(1,3,21)", 64)
    plain = judge(case, observation(build_log(CONV_NPU, [y]), [np.zeros(1)]), MATCH)
    assert plain.verdict == "confirmed"
    padded = ("y", "INT8", "UNDEFINED", "(1,3,21)", "(1,3,24)", 72)
    assert judge(
        case, observation(build_log(CONV_NPU, [padded]), [np.zeros(1)]), MATCH
    ).verdict == ("doc-drift")


# -- the report section ----------------------------------------------------------------------


def record(case_id: str, status: str, prop: str = "input buffer stride") -> CaseRecord:
    case = probe(case_id)
    check = {
        "prop": prop,
        "limits": list(case.limits),
        "documented": "w_stride 40 | for width 33",
        "observed": "stride <48>",
        "status": status,
    }
    unobserved = {**check, "prop": "w_stride attribute", "status": "unobserved"}
    return case_record(
        case,
        backend="simulator",
        verdict=status,
        checks=[check, unobserved],
    )


def test_report_section_lists_every_row_of_the_group_with_its_status() -> None:
    records = [
        record("rk3566/input/int8/uint8/4d/c3/w33", "doc-drift"),
        record("rk3568/input/int8/uint8/4d/c3/w32", "confirmed"),
        CaseRecord("op", "rk3562", "Pow", "int8", "l", "v", "supported", "simulator", "confirmed"),
    ]
    (section,) = documented_sections(records, documented_rows("rk3566"))
    assert section.group == "RK3566/RK3568" and section.platforms == ["rk3566", "rk3568"]
    group_rows = [lim.id for lim in load_model_io().limits() if lim.group == "rk3566-rk3568"]
    assert {row.limit for row in section.rows} == {i for i in group_rows if "/remark/" not in i}
    assert [row.kind for row in section.rows][:10] == ["input"] * 9 + ["n_range"]
    uint8 = next(r for r in section.rows if r.limit == "rk3566-rk3568/input/int8/uint8/4d")
    assert uint8.status == "doc-drift"
    (stride, attribute) = uint8.properties
    assert stride.counts == {"doc-drift": 1, "confirmed": 1}
    assert attribute.counts == {"unobserved": 2}
    assert next(r for r in section.rows if r.kind == "output").status == NOT_RUN
    assert section.counts[NOT_RUN] >= 1


def test_report_renderers_include_the_io_section_escaped() -> None:
    records = [record("rk3588/input/int8/uint8/4d/c3/w33", "doc-drift")]
    report = build_report(records, {DOCUMENTED_KEY: documented_rows("rk3588")}, {})
    assert len(report.documented) == 1
    markdown = render_markdown(report)
    assert "## Model I/O: RK3588 on simulator" in markdown
    assert md_escape("| RK3588 | int8 | 4 | uint8 | NPU | 16 | 1 | A | Unrestricted |") in markdown
    assert "stride &lt;48&gt;" in markdown and "stride <48>" not in markdown
    from harness.report.html import render_html

    page = render_html(report)
    assert "Model I/O: RK3588 on simulator" in page and "stride &lt;48&gt;" in page


def test_the_report_shows_each_group_under_its_vendors_title_and_older_runs_untitled(
    tmp_path: Path,
) -> None:
    """A vendor names its section and document; the report knows no vendor's wording. A run
    written before the groups were titled (run.json "model_io") still reads, untitled."""
    records = [record("rk3588/input/int8/uint8/4d/c3/w33", "doc-drift")]
    (rknn,) = documented_rows("rk3588")
    other = {**rknn, "title": "Tensor <rules>", "document": "J6 guide §4"}
    markdown = render_markdown(build_report(records, {DOCUMENTED_KEY: [rknn, other]}, {}))
    assert "## Model I/O: RK3588 on simulator" in markdown
    assert "| seed 003 row | status |" in markdown
    assert "## Tensor &lt;rules&gt;: RK3588 on simulator" in markdown
    assert "| J6 guide §4 row | status |" in markdown
    untitled = {key: value for key, value in rknn.items() if key not in ("title", "document")}
    write_run_metadata(tmp_path, {"platform": "rk3588", "model_io": [untitled]})
    report = build_report(records, read_run_metadata(tmp_path), {})
    (section,) = report.documented
    assert (section.title, section.group) == ("Documented rows", "RK3588")
    assert "## Documented rows: RK3588 on simulator" in render_markdown(report)
    assert "seed 003" not in render_markdown(report)


def test_a_passing_result_does_not_stand_in_for_an_unobservable_property() -> None:
    """The NCHW row documents only "no alignment", which the simulator cannot see."""
    case_id = "rk3588/output/int8/4d/Add/c3-3x7"
    nchw = "rk3588/output/int8/NCHW/4d"

    def with_result(status: str) -> CaseRecord:
        base = record(case_id, "unobserved", prop="NCHW output")
        result = {**base.checks[0], "prop": "result", "status": status}
        return CaseRecord(**{**base.__dict__, "checks": [base.checks[0], result]})

    for status, row_status in [("confirmed", "unobserved"), ("wrong-result", "wrong-result")]:
        (section,) = documented_sections([with_result(status)], documented_rows("rk3588"))
        assert next(r for r in section.rows if r.limit == nchw).status == row_status


def test_width_expectations_carry_the_formulas_the_document_contradicts() -> None:
    """RK3576/RV1126B condition B's ConvTranspose N leaves 1..7; its depthwise N differs from
    condition A's but stays in range, so it is not marked."""
    cases = platform_cases("rk3576").values()
    for case in cases:
        for width in (e for e in case.expects if e.prop == WIDTH_LIMIT):
            contradicted = "rk3576-rv1126b/conv/B/ConvTranspose/N" in width.limits
            assert bool(width.inconsistent) == contradicted, case.id
    assert any(c.id.startswith("rk3576/conv/B/ConvTranspose/") for c in cases)
    assert all(not e.inconsistent for c in platform_cases("rk3562").values() for e in c.expects)


def test_int8_cases_expect_their_precision() -> None:
    for case in platform_cases("rk3588").values():
        precision = [e for e in case.expects if e.prop == PRECISION]
        assert [e.value for e in precision] == (["int8"] if case.dtype == "int8" else []), case.id
