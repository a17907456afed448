"""The validity check: a generated case exercises what its rule names (none of the 11 RKNN
platforms' cases is degenerate), and each kind of degenerate model is told apart."""

import pytest
from tests.helpers.declared import MODELS

from harness.cases.operators import operator_cases
from harness.cases.operators.status import governing_limits
from harness.cases.validity import (
    DEGENERATE,
    NO_BROADCAST,
    NO_MOVE,
    SAME_MOVE,
    SAME_OUTPUT,
    SIZE_1,
    degeneracy,
)
from harness.documented.limits import Limit
from harness.vendors import vendor_named

RKNN = vendor_named("rknn")
# Resize's pytorch_half_pixel is half_pixel wherever an output axis is longer than 1, which
# every integral scale of the model gives: the one proposal no shape makes valid.
IRREPARABLE = {"Resize": "coordinate_transformation_mode=pytorch_half_pixel"}


def _limit(op: str, kind: str, subject: str, **rule: object) -> Limit:
    return Limit(f"{op}/test", kind, "test", "test", subject=subject, rule=rule)


@pytest.mark.parametrize("platform", RKNN.platforms)
def test_no_generated_case_of_a_platform_is_degenerate(platform: str) -> None:
    catalogue = RKNN.operators(platform)
    generated = operator_cases(catalogue, MODELS)
    found = []
    for case in generated.cases:
        limits = governing_limits(catalogue, catalogue.operators[case.op])
        probed = [limit for limit in limits if limit.id in case.limits]
        if (why := degeneracy(MODELS, case.op, case.params, probed)) is not None:
            found.append(f"{case.id}: {why.reason()}")
    assert found == []
    # a proposal the generator could not make valid is a generation bug, unless irreparable
    refused = [
        f"{item.limit.id}: {item.reason}"
        for item in generated.unprobed
        if f"{DEGENERATE} (" in item.reason
        and not item.reason.startswith(IRREPARABLE.get(item.limit.op, "-"))
    ]
    assert refused == []


def test_a_transpose_that_moves_no_element_or_moves_as_a_simpler_perm_is_degenerate() -> None:
    def why(shape: list[int], perm: str) -> str | None:
        found = degeneracy(MODELS, "Transpose", {"shape": shape, "perm": perm}, [])
        return found and f"{found.kind}: {found.why}"

    # the reviewers' rk3588/Transpose/int8/h1*w1=131071: h1 of 1, so swapping h and w moves none
    assert why([1, 4, 1, 131071], "[0,1,3,2]") == (
        f"{NO_MOVE}: perm [0,1,3,2] of [1, 4, 1, 131071] moves no element"
    )
    # at batch 1, [2,0,3,1] moves the data as [0,2,3,1] does
    assert why([1, 4, 16, 16], "[2,0,3,1]") == (
        f"{SAME_MOVE}: perm [2,0,3,1] of [1, 4, 16, 16] moves data as [0,2,3,1] does"
    )
    assert why([2, 4, 16, 16], "[2,0,3,1]") is None
    assert why([1, 4, 16, 16], "[0,2,3,1]") is None


def test_a_softmax_over_one_element_is_degenerate_unless_its_rule_is_about_that_size() -> None:
    over_batch = {"shape": [1, 8, 4, 6], "axis": 0}
    found = degeneracy(MODELS, "Softmax", over_batch, [])
    assert found is not None and found.kind == SIZE_1
    batch_rule = _limit("Softmax", "range", "batch")
    assert degeneracy(MODELS, "Softmax", over_batch, [batch_rule]) is None
    # the generator's axis=0 grows the batch it reduces over
    cases = operator_cases(RKNN.operators("rk3588"), MODELS, ops=["Softmax"]).cases
    assert {c.params["shape"][0] for c in cases if c.value == "axis=0"} == {2}


def test_a_broadcast_case_whose_operands_have_one_shape_is_degenerate() -> None:
    form = _limit("Expand", "broadcast", "h", **{"from": "[b, c, 1, w]"})
    same = {"input_shape": [1, 2, 1, 4], "output_shape": [1, 2, 1, 4]}
    found = degeneracy(MODELS, "Expand", same, [form])
    assert found is not None and found.kind == NO_BROADCAST
    broadcast = {"input_shape": [1, 2, 1, 4], "output_shape": [1, 2, 2, 4]}
    assert degeneracy(MODELS, "Expand", broadcast, [form]) is None
    assert degeneracy(MODELS, "Expand", same, []) is None  # no broadcasting rule probed


def test_a_mode_with_the_typical_modes_output_is_degenerate() -> None:
    # nearest x2: asymmetric picks the pixels half_pixel does on [1, 4, 3, 4]
    asymmetric = {"coordinate_transformation_mode": "asymmetric", "scales": [1, 1, 2, 2]}
    found = degeneracy(MODELS, "Resize", asymmetric, [])
    assert found is not None and found.kind == SAME_OUTPUT
    at_three = MODELS.with_subject("Resize", {}, "coordinate_transformation_mode", "asymmetric")
    assert at_three["scales"] == [1, 1, 3, 3]
    assert degeneracy(MODELS, "Resize", at_three, []) is None
