"""The CPU layers a user's model may have without a fallback: those the toolkit keeps on the
CPU by design (the vendor's ``cpu-placements.yaml``) where the platform's document lets its
CPU run them (``Vendor.cpu_allowed``: RKNN's ``documents.operators.cpu_allowed``)."""

from __future__ import annotations

import numpy as np
import pytest
from tests.helpers.user_models import five_node_model

from harness.cases.user_models import model_case
from harness.documented.properties import PLACEMENT, PRECISION, RESULT
from harness.judge.compare import compare, tolerance_for
from harness.modelfiles.prepare import prepare
from harness.pipeline import GENERIC_JUDGE
from harness.targets.observation import Observation
from harness.vendors.rknn.documents.operators import cpu_allowed

REF = [np.arange(6, dtype=np.float32)]
MATCH = compare(REF, REF, tolerance_for("int8"))
RESHAPE = "RKNN Compiler Support Operator List V2.3.2 § 4.49 Reshape, p. 320: a CPU operator"


def observed(*layers: tuple[str, str]) -> Observation:
    table = [{"op": "InputOperator", "target": "CPU", "io": True}]
    table += [{"op": op, "target": target, "dtype": "INT8"} for op, target in layers]
    return Observation(
        backend="simulator",
        outputs=REF,
        placement=table,
        observes=frozenset({RESULT, PLACEMENT, PRECISION}),
    )


@pytest.mark.parametrize("platform", ["rk3588", "rv1106"])
def test_the_classifiers_reshape_is_allowed_where_the_cpu_runs_it(platform: str) -> None:
    allowed = cpu_allowed(platform)
    assert list(allowed) == ["Reshape"] and allowed["Reshape"].endswith(f"({RESHAPE})")


def test_rk2118_whose_cpu_runs_nothing_allows_nothing() -> None:
    assert cpu_allowed("rk2118") == {}


def user_case(platform: str, cpu_allowed: dict[str, str] | None):
    prepared = prepare(five_node_model(), "five", "five.onnx")
    return model_case(prepared, platform, "int8", cpu_allowed=cpu_allowed)[0]


def test_an_allowed_cpu_layer_is_no_fallback_and_the_placement_says_why() -> None:
    case = user_case("rk3588", cpu_allowed("rk3588"))
    verdict = GENERIC_JUDGE(case, observed(("Conv", "NPU"), ("Reshape", "CPU")), MATCH, None)
    assert verdict.verdict == "confirmed"
    (placement,) = [check for check in verdict.checks if check["prop"] == PLACEMENT]
    assert placement["observed"].startswith(
        "whole network: on NPU; Reshape on the CPU, as allowed: a shape change the toolkit"
    )
    assert placement["observed"].endswith(f"({RESHAPE})")


def test_any_other_cpu_layer_is_still_a_fallback() -> None:
    case = user_case("rk3588", cpu_allowed("rk3588"))
    layers = observed(("Conv", "CPU"), ("Reshape", "CPU"))
    verdict = GENERIC_JUDGE(case, layers, MATCH, None)
    assert verdict.verdict == "violation"
    assert verdict.detail.startswith("placement: CPU fallback: whole network: Conv on CPU")
    # and without the platform's allowance the Reshape is one too
    verdict = GENERIC_JUDGE(user_case("rk3588", None), observed(("Reshape", "CPU")), MATCH, None)
    assert verdict.detail.startswith("placement: CPU fallback: whole network: Reshape on CPU")
