import numpy as np
import pytest

from harness.judge.compare import compare, tolerance_for
from harness.judge.verdict import decide, placement_of
from harness.targets.observation import Observation

REF = [np.arange(6, dtype=np.float32)]
TOL = tolerance_for("float16")
MATCH = compare(REF, REF, TOL)
MISMATCH = compare([REF[0] + 1], REF, TOL)


def observed(target: str = "NPU", op: str = "Pow", **kw) -> Observation:
    layers = [
        {"op": "InputOperator", "target": "CPU"},
        {"op": op, "target": target},
        {"op": "OutputOperator", "target": "CPU"},
    ]
    return Observation(backend="simulator", outputs=REF, placement=layers, **kw)


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
    assert decide(documented, obs, comparison, ["Pow"]).verdict == expected


def test_input_and_output_operators_on_cpu_do_not_count_as_fallback():
    # The toolkit lists Input/OutputOperator layers on the CPU for every model.
    target, how = placement_of(observed("NPU").placement, ["Pow"])
    assert (target, how) == ("NPU", "Pow: on NPU")


def test_rewritten_op_is_judged_by_the_whole_network():
    layers = [{"op": "Mul", "target": "NPU"}, {"op": "exDataConvert", "target": "CPU"}]
    target, how = placement_of(layers, ["Div"])
    assert target == "CPU"
    assert "rewritten away" in how


def test_missing_outputs_without_failure_is_infrastructure():
    verdict = decide("supported", observed(), None, ["Pow"])
    assert verdict.verdict == "infra-error"


def test_documented_must_be_known():
    with pytest.raises(ValueError, match="documented must be one of"):
        decide("maybe", observed(), MATCH, ["Pow"])


def test_rewritten_op_with_only_io_layers_on_cpu_is_on_npu():
    layers = [
        {"op": "InputOperator", "target": "CPU"},
        {"op": "Mul", "target": "NPU"},
        {"op": "OutputOperator", "target": "CPU"},
    ]
    assert placement_of(layers, ["Div"])[0] == "NPU"
