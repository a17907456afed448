"""Case generation from the operator catalogue: bounds, documented status, ids, seeds."""

import json

import numpy as np
import pytest
import yaml

from harness.cases.case import case_seed
from harness.cases.operators import element_count, operator_cases, subjects
from harness.judge.compare import compare, tolerance_for
from harness.models import build_model
from harness.pipeline import GENERIC_JUDGE
from harness.spec.operators import DEFAULT_PATH, load_operators
from harness.spec.properties import PLACEMENT, RESULT
from harness.targets.observation import Observation


@pytest.fixture(scope="module")
def catalogue():
    return load_operators()


@pytest.fixture(scope="module")
def cases(catalogue):
    return {case.id: case for case in operator_cases(catalogue).cases}


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
        assert subjects(case.op, case.params)[key] == value
        built = build_model(case.op, case.params, case.seed)  # really constructible
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
    first = operator_cases(catalogue)
    again = operator_cases(catalogue)
    ids = [case.id for case in first.cases]
    assert len(ids) == len(set(ids))
    assert ids == [case.id for case in again.cases]
    for case in first.cases:
        assert case.seed == case_seed(case.id)
        json.dumps(case.params)  # recorded in the journal


def test_every_limit_is_probed_or_says_why(catalogue):
    result = operator_cases(catalogue)
    probed = {limit for case in result.cases for limit in case.limits}
    unprobed = {item.limit.id for item in result.unprobed}
    for limit in catalogue.limits():
        assert limit.id in probed | unprobed, limit.id
    assert all(item.reason for item in result.unprobed)


def test_size_budget_leaves_out_huge_models_with_a_reason(catalogue):
    result = operator_cases(catalogue, ops=["GRU"])
    huge = [u for u in result.unprobed if "budget" in u.reason]
    assert huge and all("hidden_size=819" in u.reason for u in huge)
    assert all(element_count(c.op, c.params) <= 1 << 24 for c in result.cases)


def test_every_generated_case_builds_a_valid_model(catalogue):
    # A case the model builder rejects would surface as a harness error in the suite.
    for case in operator_cases(catalogue).cases:
        build_model(case.op, case.params, case.seed)


def test_cases_carry_the_contradictions_of_the_limits_they_probe(tmp_path):
    """Marking a probed limit (Pow's exponent types) reaches the probing cases' expectations,
    and only theirs; the judge then reads it from the case, not from the catalogue."""
    raw = yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))
    raw["operators"]["Pow"]["dtypes"]["T2"]["inconsistent"] = "a reason"
    marked = tmp_path / "rk3562-operators.yaml"
    marked.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    cases = {c.id: c for c in operator_cases(load_operators(marked), ops=["Pow"]).cases}
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
