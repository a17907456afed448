import numpy as np
import pytest

from harness.cases.case import Case
from harness.cases.operators import operator_cases
from harness.judge.compare import compare, tolerance_for
from harness.judge.observers import placement_of
from harness.pipeline import GENERIC_JUDGE
from harness.spec.operators import load_operators
from harness.spec.properties import PLACEMENT, RESULT
from harness.targets.observation import Observation

REF = [np.arange(6, dtype=np.float32)]
TOL = tolerance_for("float16")
MATCH = compare(REF, REF, TOL)
MISMATCH = compare([REF[0] + 1], REF, TOL)
POW = operator_cases(load_operators(), ops=["Pow"]).cases
CASES = {
    "supported": next(c for c in POW if c.documented == "supported"),
    "outside": next(c for c in POW if c.documented == "outside"),
}


def observed(target: str = "NPU", op: str = "Pow", **kw) -> Observation:
    layers = [
        {"op": "InputOperator", "target": "CPU", "io": True},
        {"op": op, "target": target},
        {"op": "OutputOperator", "target": "CPU", "io": True},
    ]
    observes = frozenset({RESULT, PLACEMENT})
    return Observation(backend="simulator", outputs=REF, placement=layers, observes=observes, **kw)


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
        ("outside", observed("CPU"), MISMATCH, "wrong-result"),
        ("supported", observed(infra_error="worker timed out after 5 s"), None, "infra-error"),
        ("outside", observed(infra_error="ssh dropped"), MISMATCH, "infra-error"),
    ],
)
def test_design_table(documented, obs, comparison, expected):
    """Operator cases: the placement and result checks give the operator verdict table."""
    assert GENERIC_JUDGE(CASES[documented], obs, comparison).verdict == expected


def test_operator_cases_expect_placement_and_result():
    supported, outside = CASES["supported"], CASES["outside"]
    assert [e.prop for e in supported.expects] == [PLACEMENT, RESULT]
    assert supported.expects[0].value is True and outside.expects[0].value is False
    assert all(e.limits == supported.limits for e in supported.expects)
    verdict = GENERIC_JUDGE(outside, observed("NPU"), MATCH)
    assert {c["prop"]: c["status"] for c in verdict.checks} == {
        PLACEMENT: "doc-drift",
        RESULT: "confirmed",
    }


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
