"""Case generation from the operator catalogue: bounds, documented status, ids, seeds."""

import json

import numpy as np
import onnx
import pytest
import yaml
from tests.helpers.declared import MODELS

from harness.cases.case import model_seed
from harness.cases.operators import operator_cases
from harness.cases.operators.status import documented_status
from harness.cases.operators.variant import element_count
from harness.documented.operators import load_operators
from harness.documented.properties import PLACEMENT, RESULT
from harness.judge.compare import compare, tolerance_for
from harness.pipeline import GENERIC_JUDGE
from harness.targets.observation import Observation
from harness.vendors.rknn.documents.operators import SEED_PATH, seed_catalogue
from harness.vendors.rknn.platforms import PLATFORMS


@pytest.fixture(scope="module")
def catalogue():
    return seed_catalogue()


@pytest.fixture(scope="module")
def cases(catalogue):
    return {case.id: case for case in operator_cases(catalogue, MODELS).cases}


@pytest.mark.parametrize(
    ("case_id", "documented"),
    [
        # (0,8192] on the GRU batch with "when greater than 1, only multiples of 4"
        ("rk3562/GRU/float16/batch_size=1", "supported"),
        ("rk3562/GRU/float16/batch_size=3", "outside"),
        ("rk3562/GRU/float16/batch_size=4", "supported"),
        ("rk3562/GRU/float16/batch_size=5", "outside"),
        ("rk3562/GRU/float16/batch_size=8", "supported"),
        ("rk3562/GRU/float16/batch_size=8192", "supported"),
        ("rk3562/GRU/float16/batch_size=8193", "outside"),
        # Pow: exactly six exponents
        ("rk3562/Pow/float16/values=-0.5", "supported"),
        ("rk3562/Pow/float16/values=4", "outside"),
        # MaxPool kernel (0,7]
        ("rk3562/MaxPool/int8/kernel_h=7", "supported"),
        ("rk3562/MaxPool/int8/kernel_h=8", "outside"),
        # Pad reflect width (0,8176]
        ("rk3562/Pad/float16/width=8176", "supported"),
        ("rk3562/Pad/float16/width=8177", "outside"),
        # Hardmax axis=1: height*width < 16384
        ("rk3562/Hardmax/float16/height*width=16383", "supported"),
        ("rk3562/Hardmax/float16/height*width=16384", "outside"),
        # Expand h in [1,8192]
        ("rk3562/Expand/float16/[b,c,1,w]:h=8192", "supported"),
        ("rk3562/Expand/float16/[b,c,1,w]:h=8193", "outside"),
        # Div's broadcasting "same as Expand"; int8 Div is not documented
        ("rk3562/Div/float16/B[b,c,1,w]:h=8193", "outside"),
        ("rk3562/Div/int8/typical", "outside"),
        ("rk3562/Div/float16/typical", "supported"),
    ],
)
def test_boundaries_and_their_documented_status(cases, case_id, documented):
    assert cases[case_id].documented == documented


def test_the_probed_value_is_what_the_model_has(cases):
    for case_id, key, value in [
        ("rk3562/GRU/float16/batch_size=3", "batch_size", 3),
        ("rk3562/Pad/float16/width=8177", "width", 8177),
        ("rk3562/MaxPool/float16/kernel_w=8", "kernel_w", 8),
        ("rk3562/Expand/float16/[b,c,1,w]:h=8193", "h", 8193),
    ]:
        case = cases[case_id]
        assert MODELS.subjects(case.op, case.params)[key] == value
        built = MODELS.build(case.op, case.params, case.seed)  # really constructible
        assert built.params


def test_outside_cases_name_the_limits_they_break(cases):
    case = cases["rk3562/Pad/float16/width=8177"]
    assert case.outside_because == ("Pad/data/width@mode=reflect",)
    assert case.params["mode"] == "reflect"
    pad7 = cases["rk3562/MaxPool/float16/pad_top=7"]
    # ONNX needs pad < kernel, so pad 7 needs kernel 8: honestly outside because of the kernel
    assert pad7.outside_because == ("MaxPool/attr/kernel_shape/kernel_h",)


def test_every_documented_dtype_and_the_undocumented_one(cases):
    assert {"rk3562/GRU/float16/typical", "rk3562/GRU/int8/typical"} <= set(cases)
    assert "rk3562/GRU/int8/batch_size=3" not in cases  # limits only in documented dtypes
    assert "rk3562/Expand/int8/[b,c,1,w]:h=8193" in cases


def test_ids_unique_stable_and_seeds_recorded(catalogue):
    first = operator_cases(catalogue, MODELS)
    again = operator_cases(catalogue, MODELS)
    ids = [case.id for case in first.cases]
    assert len(ids) == len(set(ids))
    assert ids == [case.id for case in again.cases]
    for case in first.cases:
        assert case.seed == model_seed(case.op, case.params)
        json.dumps(case.params)  # recorded in the journal
    # the dtypes of one model are fed the same data (and share its host references)
    seeds = {(case.op, json.dumps(case.params, sort_keys=True)): set() for case in first.cases}
    for case in first.cases:
        seeds[case.op, json.dumps(case.params, sort_keys=True)].add(case.seed)
    assert all(len(found) == 1 for found in seeds.values())
    assert len({case.seed for case in first.cases}) == len(seeds)  # other models, other data


def test_every_limit_is_probed_or_says_why(catalogue):
    result = operator_cases(catalogue, MODELS)
    probed = {limit for case in result.cases for limit in case.limits}
    unprobed = {item.limit.id for item in result.unprobed}
    for limit in catalogue.limits():
        assert limit.id in probed | unprobed, limit.id
    assert all(item.reason for item in result.unprobed)


def test_size_budget_leaves_out_huge_models_with_a_reason(catalogue):
    result = operator_cases(catalogue, MODELS, ops=["GRU"])
    huge = [u for u in result.unprobed if "budget" in u.reason]
    assert huge and all("hidden_size=819" in u.reason for u in huge)
    assert all(element_count(MODELS, c.op, c.params) <= 1 << 24 for c in result.cases)


def test_every_generated_case_builds_a_valid_model(catalogue):
    # A case the model builder rejects would surface as a harness error in the suite.
    for case in operator_cases(catalogue, MODELS).cases:
        MODELS.build(case.op, case.params, case.seed)


# -- every bound probed alone, or the reason it cannot be --------------------------------------


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize(("pad", "kernel"), [("pad_top", "kernel_h"), ("pad_right", "kernel_w")])
def test_the_largest_pad_a_documented_kernel_allows_is_probed_inside(cases, op, pad, kernel):
    # ONNX wants a pad below the kernel: pad 6 with kernel 7 is the top of [0,7] inside.
    case = cases[f"rk3562/{op}/float16/{pad}=6"]
    found = MODELS.subjects(case.op, case.params)
    assert (found[pad], found[kernel]) == (6, 7)
    assert case.documented == "supported" and case.outside_because == ()
    assert case.limits == (f"{op}/attr/pad/{pad}",)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_a_pad_needing_an_undocumented_kernel_is_decided_by_the_kernel(cases, op):
    case = cases[f"rk3562/{op}/int8/pad_top=7"]
    assert case.limit == f"{op}/attr/pad/pad_top"
    assert case.deciding_limit == f"{op}/attr/kernel_shape/kernel_h"  # not the pad it probes
    assert case.not_isolable == "needs kernel_h=8"
    above = cases[f"rk3562/{op}/int8/pad_top=8"]
    assert above.deciding_limit == f"{op}/attr/pad/pad_top"
    assert above.not_isolable == "needs kernel_h=9"
    placement = case.expects[0]
    assert f"decided by {op}/attr/kernel_shape/kernel_h" in placement.documented
    assert "not isolable: needs kernel_h=8" in placement.documented


def test_a_bound_probed_alone_records_no_reason(cases):
    case = cases["rk3562/MaxPool/float16/kernel_h=8"]
    assert case.deciding_limit == "MaxPool/attr/kernel_shape/kernel_h"
    assert case.not_isolable == ""
    # 8193 is also no multiple of 4; 8196 crosses the batch range alone.
    first = cases["rk3562/GRU/float16/batch_size=8193"]
    assert first.not_isolable == "also crosses GRU/X/batch_size/multiple-of"
    alone = cases["rk3562/GRU/float16/batch_size=8196"]
    assert alone.documented == "outside" and alone.not_isolable == ""
    assert set(alone.outside_because) == {
        f"GRU/{role}/batch_size" for role in ("X", "sequence_lens", "initial_h", "Y", "Y_h")
    }


@pytest.mark.parametrize("op", ["Div", "Mul", "Max", "MulRelu"])
def test_adopted_broadcast_forms_are_probed_at_their_top_and_beyond(catalogue, cases, op):
    forms = [lim for lim in catalogue.operators["Expand"].limits() if lim.kind == "broadcast"]
    for form in forms:
        what = f"B{form.rule['from']}:{form.subject}"
        inside, outside = (
            cases[f"rk3562/{op}/float16/{what}=8192"],
            cases[f"rk3562/{op}/float16/{what}=8193"],
        )
        assert MODELS.subjects(op, inside.params)[form.subject] == 8192
        assert inside.documented == "supported"
        assert outside.outside_because == (form.id,)
        assert outside.deciding_limit == form.id and outside.not_isolable == ""


@pytest.mark.parametrize("op", ["Div", "Mul", "MulRelu"])
def test_the_documented_constant_operand_is_probed(cases, op):
    # T2: float(constTensor): B as a float32 initializer instead of a graph input.
    case = cases[f"rk3562/{op}/float16/constant_B=float"]
    assert case.limits == (f"{op}/dtype/T2",)
    assert case.documented == "supported"
    built = MODELS.build(case.op, case.params, case.seed)
    assert built.input_names == ["A"]
    initializer = onnx.load_from_string(built.onnx_bytes).graph.initializer
    assert [(t.name, t.data_type) for t in initializer] == [("B", onnx.TensorProto.FLOAT)]


def test_a_constant_operand_max_does_not_document_is_probed_as_outside(cases):
    # Max's T1 lists int8(Tensor) and float16(Tensor) only: a constant B is no documented form
    for dtype in ("int8", "float16"):
        case = cases[f"rk3562/Max/{dtype}/B=constant"]
        assert case.params["b_constant"] == 1
        assert case.outside_because == ("Max/dtype/T1",)
        # a reading the document contradicts: its expectations say so
        assert all(e.inconsistent[0].startswith("Max/dtype/T1: ") for e in case.expects[:2])
    assert cases["rk3562/Mul/float16/constant_B=float"].documented == "supported"  # const T2
    assert all(not e.inconsistent for e in cases["rk3562/Max/float16/typical"].expects)


@pytest.mark.parametrize(
    ("spelled", "onnx_type"),
    [("int16", onnx.TensorProto.INT16), ("double", onnx.TensorProto.DOUBLE)],
)
def test_an_exponent_type_the_document_omits_is_outside(cases, spelled, onnx_type):
    for dtype in ("int8", "float16"):
        case = cases[f"rk3562/Pow/{dtype}/exponent_dtype={spelled}"]
        assert case.outside_because == ("Pow/dtype/T2",)
        assert case.deciding_limit == "Pow/dtype/T2"
        built = MODELS.build(case.op, case.params, case.seed)
        (exponent,) = onnx.load_from_string(built.onnx_bytes).graph.initializer
        assert exponent.data_type == onnx_type


def test_a_negative_axis_is_the_axis_it_denotes(catalogue, cases):
    gather = catalogue.operators["Gather"]
    found = MODELS.subjects("Gather", {"axis": -1})
    assert found["axis"] == 3
    assert documented_status(MODELS, gather, gather.limits(), "float16", found) == ()
    # Every ONNX axis of a 4-D input is documented: no Gather case is outside by its axis.
    assert not [c for c in cases.values() if "Gather/attr/axis" in c.outside_because]
    assert cases["rk3562/Hardmax/float16/axis=-1"].documented == "supported"


def test_outside_cases_name_a_deciding_limit_they_break(cases):
    for case in cases.values():
        if case.documented == "supported":
            assert (case.deciding_limit, case.not_isolable) == ("", ""), case.id
            continue
        assert case.deciding_limit in case.outside_because, case.id
        # Parameters that break only other limits never credit the probed one (an adopted
        # broadcasting form is probed through the operator's own limit, so it is exempt).
        if case.limit not in case.outside_because and not case.limit.endswith("/broadcast"):
            assert case.deciding_limit != case.limit and case.not_isolable, case.id


def test_every_range_bound_is_probed_alone_or_says_why(catalogue):
    result = operator_cases(catalogue, MODELS)
    for limit in catalogue.limits():
        if limit.kind != "range":
            continue
        key = limit.rule.get("element", limit.subject)
        lo, hi = limit.interval.integer_bounds()
        probing = [case for case in result.cases if limit.id in case.limits]
        if not probing:  # the model cannot express it: unprobed, with the reason
            assert any(u.limit.id == limit.id for u in result.unprobed), limit.id
            continue
        values = {case.id: MODELS.subjects(case.op, case.params)[key] for case in probing}
        for edge, documented in ((hi, "supported"), (hi + 1, "outside")):
            at = [case for case in probing if values[case.id] == edge]
            if not at:  # only a model over the size budget may leave a bound out
                assert any(
                    u.limit.id == limit.id and u.reason.startswith(f"{key}={edge}:")
                    for u in result.unprobed
                ), (limit.id, edge)
                continue
            alone = [c for c in at if c.documented == documented and not c.not_isolable]
            assert alone or all(c.not_isolable for c in at), (limit.id, edge)
            if not alone and documented == "supported":  # the nearest value that is alone
                assert any(
                    c.documented == "supported" and lo <= values[c.id] < hi for c in probing
                ), limit.id


def test_cases_carry_the_contradictions_of_the_limits_they_probe(tmp_path):
    """Marking a probed limit (Pow's exponent types) reaches the probing cases' expectations,
    and only theirs; the judge then reads it from the case, not from the catalogue."""
    raw = yaml.safe_load(SEED_PATH.read_text(encoding="utf-8"))
    raw["operators"]["Pow"]["dtypes"]["T2"]["inconsistent"] = "a reason"
    marked = tmp_path / "rk3562-operators.yaml"
    marked.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    catalogue = load_operators(marked, PLATFORMS)
    cases = {c.id: c for c in operator_cases(catalogue, MODELS, ops=["Pow"]).cases}
    probing = cases["rk3562/Pow/float16/exponent_dtype=int32"]
    assert "Pow/dtype/T2" in probing.limits
    assert all(e.inconsistent == ("Pow/dtype/T2: a reason",) for e in probing.expects)
    assert all(not e.inconsistent for e in cases["rk3562/Pow/float16/typical"].expects)

    ref = [np.arange(4, dtype=np.float32)]
    layers = [{"op": "Pow", "target": "NPU", "dtype": "FLOAT16"}]
    seen = Observation("simulator", ref, layers, observes=frozenset({PLACEMENT, RESULT}))
    verdict = GENERIC_JUDGE(probing, seen, compare(ref, ref, tolerance_for("float16")))
    assert verdict.verdict == "doc-inconsistent"
    assert "would be confirmed; the document contradicts Pow/dtype/T2: a reason" in verdict.detail
