import re
from dataclasses import replace

import numpy as np
import pytest
from tests.helpers import paths
from tests.helpers.declared import MODELS
from tests.helpers.records import make_record

from harness.cases.case import Case
from harness.cases.operators import operator_cases
from harness.documented.properties import PLACEMENT, PRECISION, RESULT
from harness.judge import checks
from harness.judge.checks import ControlSeen
from harness.judge.compare import compare, tolerance_for
from harness.judge.observers import placement_of
from harness.judge.verdict import (
    FAILING_VERDICTS,
    KINDS,
    LAYOUT_PHASE,
    PLACEMENT_PHASE,
    RESULT_PHASE,
    UNOBSERVED,
    VERDICTS,
    Check,
    verdict_of,
)
from harness.pipeline import GENERIC_JUDGE
from harness.report.matrix import case_facts
from harness.targets.observation import Observation
from harness.vendors.rknn.documents.operators import seed_catalogue
from harness.vendors.rknn.documents.properties import SIMULATOR_OBSERVES, WIDTH_LIMIT
from harness.vendors.rknn.model_io.cases import platform_cases
from harness.vendors.rknn.model_io.checks import JUDGE
from harness.vendors.rknn.toolkit.buildlog import parse_build_log

ROOT = paths.ROOT
LOGS = paths.TESTS / "data" / "buildlogs"
REF = [np.arange(6, dtype=np.float32)]
TOL = tolerance_for("float16")
MATCH = compare(REF, REF, TOL)
MISMATCH = compare([REF[0] + 1], REF, TOL)
OPERATOR_CASES = {
    c.id: c for c in operator_cases(seed_catalogue(), MODELS, ops=["Pow", "GRU"]).cases
}
CASES = {
    "supported": OPERATOR_CASES["rk3562/Pow/float16/typical"],
    "outside": OPERATOR_CASES["rk3562/Pow/float16/values=4"],
    "supported int8": OPERATOR_CASES["rk3562/Pow/int8/typical"],
    "outside int8": OPERATOR_CASES["rk3562/Pow/int8/values=4"],
}


def observed(target: str = "NPU", op: str = "Pow", dtype: str = "", **kw) -> Observation:
    layers = [
        {"op": "InputOperator", "target": "CPU", "io": True},
        {"op": op, "target": target, "dtype": dtype},
        {"op": "OutputOperator", "target": "CPU", "io": True},
    ]
    observes = frozenset({RESULT, PLACEMENT, PRECISION})
    return Observation(backend="simulator", outputs=REF, placement=layers, observes=observes, **kw)


def logged(name: str, **kw) -> Observation:
    """An observation as the simulator pool makes it from a recorded rknn-toolkit2 build log."""
    log = (LOGS / f"{name}.log").read_text()
    parsed = parse_build_log(log)
    return Observation(
        backend="simulator",
        outputs=REF,
        placement=parsed.layers,
        rewrites=parsed.rewrites,
        tensors=parsed.tensors,
        log=log,
        observes=SIMULATOR_OBSERVES,
        **kw,
    )


def statuses(verdict) -> dict[str, str]:
    return {c["prop"]: c["status"] for c in verdict.checks}


@pytest.mark.parametrize(
    ("documented", "obs", "comparison", "expected"),
    [
        ("supported", observed("NPU"), MATCH, "confirmed"),
        ("outside", observed("CPU"), MATCH, "limit-confirmed"),
        ("outside", observed(failed_stage="build", error="E unsupported"), None, "limit-confirmed"),
        ("outside", observed("NPU"), MATCH, "doc-drift"),
        ("supported", observed("CPU"), MATCH, "violation"),
        ("supported", observed(failed_stage="build", error="E"), None, "violation"),
        ("supported", observed(failed_stage="runtime", error="E"), None, "violation"),
        ("supported", observed("NPU"), MISMATCH, "wrong-result"),
        ("outside", observed("NPU"), MISMATCH, "wrong-result"),
        # the order rule: layers that did not run as asked are judged by that, not by numbers
        ("outside", observed("CPU"), MISMATCH, "limit-confirmed"),
        ("supported", observed("CPU"), MISMATCH, "violation"),
        ("supported int8", observed("NPU", dtype="INT8"), MATCH, "confirmed"),
        ("supported int8", observed("NPU", dtype="FLOAT16"), MATCH, "violation"),
        ("supported int8", observed("NPU", dtype="FLOAT16"), MISMATCH, "violation"),
        ("supported int8", observed("NPU", dtype="INT8"), MISMATCH, "wrong-result"),
        ("outside int8", observed("NPU", dtype="FLOAT16"), MISMATCH, "limit-confirmed"),
        ("outside int8", observed("NPU", dtype="INT8"), MATCH, "doc-drift"),
        ("supported", observed(infra_error="worker timed out after 5 s"), None, "infra-error"),
        ("outside", observed(infra_error="ssh dropped"), MISMATCH, "infra-error"),
    ],
)
def test_design_table(documented, obs, comparison, expected):
    """Operator cases: placement, precision and result checks give the operator verdict table
    (against a control that ran as asked, as one Pow layer)."""
    assert GENERIC_JUDGE(CASES[documented], obs, comparison, RAN).verdict == expected


RAN = ControlSeen("control", "", ("Pow",))
REFUSED = ControlSeen(
    "control", "build failed: E not support do_quantization = False", (), checks.REFUSED
)
ON_CPU = ControlSeen("c", "CPU fallback: Pow", (), checks.ON_CPU)
IN_FLOAT16 = ControlSeen("c", "precision fallback: Pow: FLOAT16", ("Pow",), checks.OTHER_PRECISION)


@pytest.mark.parametrize(
    ("documented", "obs", "control", "expected"),
    [
        # refused or moved like its control: nothing of the case's own limit was tested
        ("outside", observed(failed_stage="build", error="E"), REFUSED, "untestable"),
        ("supported", observed(failed_stage="build", error="E"), REFUSED, "untestable"),
        ("outside", observed("CPU"), ON_CPU, "untestable"),
        ("supported", observed("CPU"), ON_CPU, "untestable"),
        ("outside int8", observed("NPU", dtype="FLOAT16"), IN_FLOAT16, "untestable"),
        # fell back another way than its control: the case's own fallback is its verdict (an
        # int8 model on the CPU beside a float16 control the platform refuses)
        ("supported", observed("CPU"), REFUSED, "violation"),
        ("outside", observed("CPU"), REFUSED, "limit-confirmed"),
        ("outside int8", observed("NPU", dtype="FLOAT16"), REFUSED, "limit-confirmed"),
        ("supported", observed(failed_stage="build", error="E"), ON_CPU, "violation"),
        # on the NPU past the limit: a rewrite only with a layer the control lacks
        ("outside", observed("NPU"), ControlSeen("c", "", ()), "limit-rewritten"),
        ("outside", observed("NPU"), ControlSeen("c", "", ("Pow", "Expand")), "doc-drift"),
        ("outside", observed("NPU"), REFUSED, "untestable"),
        ("outside", observed("NPU"), None, "untestable"),
        # a supported case that ran is confirmed whatever befell its control
        ("supported", observed("NPU"), REFUSED, "confirmed"),
        # the operator under test left no layer: whatever its control, it is no statement
        ("supported", observed("NPU", op="Mul"), RAN, "rewritten-away"),
        ("outside", observed("NPU", op="Mul"), RAN, "rewritten-away"),
    ],
)
def test_a_case_is_judged_against_its_control(documented, obs, control, expected):
    assert GENERIC_JUDGE(CASES[documented], obs, MATCH, control).verdict == expected


def test_a_fallback_keeps_the_numeric_disagreement_as_a_note():
    verdict = GENERIC_JUDGE(CASES["supported"], observed("CPU"), MISMATCH)
    assert verdict.detail.startswith("placement: CPU fallback: Pow: Pow on CPU")
    assert f"not run as asked; result: {MISMATCH.detail}" in verdict.detail
    assert statuses(verdict)[RESULT] == "wrong-result"  # the check itself still says so


def test_only_int8_cases_expect_a_precision():
    assert [e.prop for e in CASES["supported"].expects] == [PLACEMENT, RESULT]
    int8 = CASES["supported int8"]
    assert [e.prop for e in int8.expects] == [PLACEMENT, PRECISION, RESULT]
    assert int8.expects[1].value == "int8"
    assert all(e.limits == int8.limits for e in int8.expects)


def test_int8_gru_running_in_float16_is_a_precision_fallback():
    """Recorded simulator build of rk3562/GRU/int8/typical: exGRU runs in FLOAT16."""
    case = OPERATOR_CASES["rk3562/GRU/int8/typical"]
    assert case.documented == "outside" and case.outside_because == ("GRU/dtype",)
    ran = ControlSeen(case.control.id, "", ("exGRU",))  # its float16 typical model
    verdict = JUDGE(case, logged("rk3562_int8_gru_typical"), MATCH, ran)
    assert verdict.verdict == "limit-confirmed"
    precision = next(c for c in verdict.checks if c["prop"] == PRECISION)
    assert precision["status"] == "limit-confirmed"
    assert precision["observed"] == "precision fallback: GRU/exGRU: FLOAT16 (INT8 asked)"
    assert verdict.detail.startswith("precision: precision fallback: GRU/exGRU: FLOAT16")
    # exGRU is on the NPU: placement alone would have called the dtype limit unenforced
    assert statuses(verdict)[PLACEMENT] == "doc-drift"


def test_int8_conv_in_int8_confirms_the_precision():
    """Recorded int8 Conv+Relu build: every compute layer is INT8."""
    layers = parse_build_log((LOGS / "rk3562_int8_conv_relu.log").read_text()).layers
    case = replace(CASES["supported int8"], layer_types=("ConvRelu",))
    obs = observed()
    obs.placement = layers
    verdict = GENERIC_JUDGE(case, obs, MATCH)
    assert verdict.verdict == "confirmed"
    assert next(c for c in verdict.checks if c["prop"] == PRECISION)["observed"] == (
        "ConvRelu: INT8 (INT8 asked)"
    )


def test_a_layer_table_without_data_types_leaves_the_precision_unobserved():
    verdict = GENERIC_JUDGE(CASES["supported int8"], observed("NPU"), MATCH)
    assert statuses(verdict)[PRECISION] == UNOBSERVED
    assert verdict.verdict == "confirmed"


def test_the_simulator_observes_the_precision_through_the_build_log():
    assert PRECISION in SIMULATOR_OBSERVES


def test_outside_pow_on_cpu_with_a_wrong_result_is_limit_confirmed():
    """The order rule on a recorded build: Pow with exponent 4 (documented outside) compiled
    onto the CPU; numbers that disagree are a note, not a wrong result."""
    case = OPERATOR_CASES["rk3562/Pow/float16/values=4"]
    verdict = JUDGE(case, logged("rk3562_fp16_pow4"), MISMATCH)
    assert verdict.verdict == "limit-confirmed"
    assert verdict.detail == (
        f"placement: CPU fallback: Pow: Pow on CPU (not run as asked; result: {MISMATCH.detail})"
    )


# -- the document's own contradictions --------------------------------------------------------

RK3588_INPUT = "rk3588/input/int8/uint8/4d/c3/w32"


def test_rk3588_input_case_rests_on_the_contradicted_n_formula():
    """Recorded simulator build of an RK3588 3x3 first-layer convolution at width 32.

    The formula gives N = 9, outside the section's own 1..7, so the case is documented outside;
    the compiler keeps it on the NPU: doc-drift by the letter, doc-inconsistent in fact."""
    case = platform_cases("rk3588")[RK3588_INPUT]
    assert case.documented == "outside"
    verdict = JUDGE(case, logged("rk3588_int8_input_c3_w32"), MATCH)
    assert verdict.verdict == "doc-inconsistent"
    width = next(c for c in verdict.checks if c["prop"] == WIDTH_LIMIT)
    assert width["status"] == "doc-inconsistent"
    assert width["would_be"] == "doc-drift"
    assert "would be doc-drift" in width["observed"]
    assert "rk3588/conv/A/Convolution/N: the MAX(..., 3) floor" in verdict.detail
    assert statuses(verdict)["input buffer stride"] == "confirmed"  # rests on no contradiction


def test_wrong_numbers_stand_whatever_the_document_says():
    case = platform_cases("rk3588")[RK3588_INPUT]
    verdict = JUDGE(case, logged("rk3588_int8_input_c3_w32"), MISMATCH)
    assert verdict.verdict == "wrong-result"


def test_infrastructure_trouble_stands_whatever_the_document_says():
    case = platform_cases("rk3588")[RK3588_INPUT]
    obs = logged("rk3588_int8_input_c3_w32", infra_error="worker died")
    assert JUDGE(case, obs, None).verdict == "infra-error"


def check(prop: str, status: str, phase: str, inconsistent: tuple[str, ...] = ()) -> Check:
    return Check(prop, ("a/limit",), "documented", f"{prop} seen", status, phase, inconsistent)


CONTRADICTED = ("a/limit: the document says 9 and 1..7",)


def test_a_finding_on_a_consistent_limit_outranks_doc_inconsistent():
    checks = [
        check(WIDTH_LIMIT, "doc-drift", PLACEMENT_PHASE, CONTRADICTED),
        check("input buffer stride", "doc-drift", LAYOUT_PHASE),
        check(RESULT, "confirmed", RESULT_PHASE),
    ]
    verdict = verdict_of(checks, None, "simulator")
    assert verdict.verdict == "doc-drift"
    assert verdict.detail.startswith("input buffer stride:")


def test_a_contradicted_fallback_is_doc_inconsistent_with_the_would_be_verdict():
    checks = [
        check(PLACEMENT, "violation", PLACEMENT_PHASE, CONTRADICTED),
        check(RESULT, "wrong-result", RESULT_PHASE, CONTRADICTED),
    ]
    verdict = verdict_of(checks, None, "simulator")
    assert verdict.verdict == "doc-inconsistent"
    assert "would be violation; the document contradicts a/limit" in verdict.detail
    assert "not run as asked; result: result seen" in verdict.detail


def test_unobserved_and_wrong_results_are_never_rewritten():
    checks = [
        check(PLACEMENT, UNOBSERVED, PLACEMENT_PHASE, CONTRADICTED),
        check(RESULT, "wrong-result", RESULT_PHASE, CONTRADICTED),
    ]
    verdict = verdict_of(checks, None, "simulator")
    assert verdict.verdict == "wrong-result"
    assert [c["status"] for c in verdict.checks] == [UNOBSERVED, "wrong-result"]


def test_a_layout_drift_does_not_override_a_fallback():
    checks = [
        check(WIDTH_LIMIT, "limit-confirmed", PLACEMENT_PHASE),
        check("input buffer stride", "doc-drift", LAYOUT_PHASE),
    ]
    assert verdict_of(checks, None, "simulator").verdict == "limit-confirmed"


# -- the verdict table the documentation shows --------------------------------------------------


def documented_verdicts() -> dict[str, set[str]]:
    """Verdict -> the pytest outcomes of its rows in the verdict table of docs/report.md."""
    text = (ROOT / "docs" / "report.md").read_text()
    section = text.split("\n## Verdicts\n", 1)[1].split("\n## ", 1)[0]
    table = next(part for part in section.split("\n\n") if part.startswith("| documented |"))
    rows: dict[str, set[str]] = {}
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        (verdict,) = re.fullmatch(r"`([a-z-]+)`", cells[2]).groups()
        rows.setdefault(verdict, set()).add(cells[3])
    return rows


def test_the_docs_list_every_verdict_with_its_pytest_outcome():
    rows = documented_verdicts()
    assert set(VERDICTS) == set(rows)  # every verdict that can occur, and no other
    for verdict, outcomes in rows.items():
        failing = {o for o in outcomes if o.startswith("fail")}
        assert bool(failing) == (verdict in FAILING_VERDICTS), verdict
        assert not failing or failing == outcomes, verdict
        # the verdict kinds table says the same (its "pytest" field)
        said = {"pass": "pass", "fail": "fail", "skip": "skipped", "error": "error"}
        assert all(o.startswith(said[KINDS[verdict].pytest]) for o in outcomes), verdict


# -- placement -------------------------------------------------------------------------------


def test_input_and_output_operators_on_cpu_do_not_count_as_fallback():
    # The toolkit lists Input/OutputOperator layers on the CPU for every model; its parser
    # marks them "io".
    target, how = placement_of(observed("NPU").placement, ["Pow"])
    assert (target, how) == ("NPU", "Pow: on NPU")


def test_rewritten_op_is_judged_by_the_whole_network():
    layers = [{"op": "Mul", "target": "NPU"}, {"op": "exDataConvert", "target": "CPU"}]
    target, how = placement_of(layers, ["Div"])
    assert target == "CPU"
    assert "rewritten away" in how


def test_missing_outputs_without_failure_is_infrastructure():
    verdict = GENERIC_JUDGE(CASES["supported"], observed(), None)
    assert verdict.verdict == "infra-error"


def test_documented_must_be_known():
    with pytest.raises(ValueError, match="documented must be one of"):
        Case(**{**CASES["supported"].__dict__, "documented": "maybe"})


def test_rewritten_op_with_only_io_layers_on_cpu_is_on_npu():
    layers = [
        {"op": "InputOperator", "target": "CPU", "io": True},
        {"op": "Mul", "target": "NPU"},
        {"op": "OutputOperator", "target": "CPU", "io": True},
    ]
    assert placement_of(layers, ["Div"])[0] == "NPU"


def test_a_property_the_target_does_not_observe_is_unobserved_and_named():
    blind = observed()
    blind.observes = frozenset({RESULT})
    verdict = GENERIC_JUDGE(CASES["supported"], blind, MATCH)
    placement = next(c for c in verdict.checks if c["prop"] == PLACEMENT)
    assert placement["status"] == "unobserved"
    assert placement["observed"].startswith("simulator does not observe this")
    assert verdict.verdict == "confirmed" and "not observable on simulator: placement" in (
        verdict.detail
    )


def test_the_report_cell_shows_the_precision_the_layers_ran_in():
    case = OPERATOR_CASES["rk3562/GRU/int8/typical"]
    obs = logged("rk3562_int8_gru_typical")
    verdict = JUDGE(case, obs, MATCH)
    record = make_record(
        case.id, verdict.verdict, op="GRU", dtype="int8", placement=obs.placement,
        checks=list(verdict.checks),
    )  # fmt: skip
    facts = dict(case_facts(record))
    assert facts["precision"] == "precision fallback: GRU/exGRU: FLOAT16 (INT8 asked)"
    assert "precision" not in dict(case_facts(make_record("fp16", checks=[])))
