"""Operator cases of every platform, from the operator list each platform's section states.

The catalogue per platform is the newest operator list's section (seed 001's tables on
RK3562); every limit of it is either probed by a case or listed as unprobed with the reason,
and the document's formulas and type-conditional limits decide what a case expects.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
from tests.helpers import paths
from tests.helpers.declared import MODELS

from harness.cases.operators import operator_cases
from harness.cases.operators.status import documented_status, governing_limits
from harness.documented.documents import Entry
from harness.documented.formulas import FormulaError, equalities, evaluate, holds, names
from harness.documented.limits import Limit
from harness.documented.operators import ListedOperator, OperatorCatalogue, Source
from harness.vendors.rknn.documents.operator_list.committed import load, versions
from harness.vendors.rknn.documents.operators import (
    listed_operators,
    operator_catalogue,
    seed_catalogue,
)
from harness.vendors.rknn.platforms import PLATFORMS

ROOT = paths.ROOT


# -- formulas ---------------------------------------------------------------------------------


def test_formulas_compare_with_their_named_constants() -> None:
    rule = {"expression": "h1*w1<16*p", "constants": {"p": 8192}}
    assert holds(rule, {"h1": 16, "w1": 8191})
    assert not holds(rule, {"h1": 16, "w1": 8192})
    assert holds({"expression": "h1%16=0"}, {"h1": 32})
    assert not holds({"expression": "h1%16=0"}, {"h1": 33})


def test_a_formula_over_a_quantity_the_model_lacks_does_not_apply() -> None:
    assert holds({"expression": "h1%16=0"}, {"w1": 3})


def test_a_precondition_and_an_unsupported_comparison_are_read_as_written() -> None:
    width = {"expression": "width < 16383", "when": "dilation > 1"}
    assert holds(width, {"width": 20000, "dilation": 1})
    assert not holds(width, {"width": 20000, "dilation": 2})
    pads = {"expression": "kernel - pads < 0", "unsupported_when": True}
    assert not holds(pads, {"kernel": 1, "pads": 2})
    assert holds(pads, {"kernel": 3, "pads": 2})


def test_a_formula_names_the_products_it_holds_equal_to_an_integer() -> None:
    assert equalities("height * width = 1 or height * width > 8") == [(("height", "width"), 1)]
    assert equalities("kernel_h=1 and kernel_w=1") == [(("kernel_h",), 1), (("kernel_w",), 1)]
    # a remainder, a sum or a chained equality is no product at a value
    assert equalities("h1%16=0") == equalities("a+b=3") == equalities("h1=w1=1") == []


@pytest.mark.parametrize("text", ["__import__('os')", "a.b < 1", "f(x) < 1", "x < 1.5"])
def test_a_formula_outside_the_grammar_is_refused(text: str) -> None:
    with pytest.raises(FormulaError, match="formula"):
        evaluate(text, {"x": 1, "a": 1})


def test_every_documented_formula_parses_over_its_names_and_constants() -> None:
    checked = 0
    for version in versions():
        for group in load(version).groups:
            for limit in group.limits():
                if "expression" not in limit.rule:
                    continue
                rule = limit.rule
                known = {*rule.get("names", ()), *rule.get("constants", {})}
                assert names(rule["expression"]) <= known, (version, limit.id)
                if rule.get("when"):
                    names(rule["when"])
                checked += 1
    assert checked > 2000  # every version's Transpose alone states hundreds


# -- the catalogue of a platform ----------------------------------------------------------------


def test_a_fused_heading_with_alternatives_is_one_operator_each() -> None:
    fused = Entry(
        "ConvolutionPRelu/LeakyRelu", "3.2.9", 1, "", (), ("Convolution", "PRelu/LeakyRelu")
    )
    assert fused.operators() == ("ConvolutionPRelu", "ConvolutionLeakyRelu")
    assert Entry("Clip/ReLU6", "3.2.50", 1, "", ()).operators() == ("Clip",)
    depthwise = Entry("Depthwise Convolution", "3.2.6", 1, "", ())
    assert depthwise.operators() == ("DepthwiseConvolution",)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_entry_of_the_platforms_section_is_an_operator(platform: str) -> None:
    group = load(versions()[-1]).group(platform)
    catalogue = operator_catalogue(platform)
    expected = {name for entry in group.entries for name in entry.operators()}
    assert expected <= set(catalogue.operators)
    fused = next(e for e in group.entries if e.same_as and e.name.startswith("Convolution"))
    base = catalogue.operators[fused.same_as or ""].limits()
    stated = catalogue.operators[fused.operators()[0]].limits()
    assert len(stated) == len(base) + len(fused.limits)  # the base's limits plus its own


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_limit_is_probed_or_has_a_reason(platform: str) -> None:
    catalogue = operator_catalogue(platform)
    found = operator_cases(catalogue, MODELS)
    probed = {limit for case in found.cases for limit in case.limits}
    unprobed = {item.limit.id for item in found.unprobed}
    for item in found.unprobed:
        assert item.reason, item.limit.id
    for op in catalogue.operators.values():
        for limit in op.limits():
            assert limit.id in probed | unprobed, (platform, limit.id)
    assert all(case.platform == platform for case in found.cases)
    assert len({case.id for case in found.cases}) == len(found.cases)


def test_rk3562_keeps_seed_001_for_the_operators_it_covers() -> None:
    catalogue = operator_catalogue("rk3562")
    seed = seed_catalogue()
    for name, op in seed.operators.items():
        assert catalogue.operators[name] is op
    assert "Transpose" in catalogue.operators  # the operator list's, for the rest


def test_platforms_read_their_own_section() -> None:
    """RK3588's MaxPool limits come from 3.2, RV1106's from 3.4: their data types differ."""
    rk3588 = operator_catalogue("rk3588").operators["Mul"]
    rv1106 = operator_catalogue("rv1106").operators["Mul"]
    assert "float16" in rk3588.data_dtypes()
    assert rv1106.data_dtypes() == ("int8",)
    case = next(
        c
        for c in operator_cases(operator_catalogue("rv1106"), MODELS, ops=["Mul"]).cases
        if c.dtype == "float16"
    )
    assert case.documented == "outside"
    assert case.deciding_limit == "Mul/dtype"


def test_an_operator_absent_from_a_section_is_expected_off_the_npu() -> None:
    catalogue = operator_catalogue("rv1106")
    gather = catalogue.operators["Gather"]
    assert [limit.kind for limit in gather.limits()] == ["absent"]
    cases = operator_cases(catalogue, MODELS, ops=["Gather"]).cases
    assert {c.dtype for c in cases} == {"int8", "float16"}
    for case in cases:
        assert case.documented == "outside"
        assert case.deciding_limit == "Gather/op/absent"


# -- type-conditional limits -----------------------------------------------------------------


def _limit(**fields: object) -> Limit:
    base = {"id": "", "kind": "range", "text": "", "source": "list § 1", "op": "Pad"}
    return Limit(**{**base, **fields})  # type: ignore[arg-type]


def _with_type_condition() -> OperatorCatalogue:
    """Pad as a list might state it: T1 int8, T2 float16, a width bound for T2 only."""
    dtypes = (
        _limit(id="Pad/dtype/T1", kind="dtype", subject="T1", values=("int8",),
               rule={"kinds": {"int8": "Tensor"}}),
        _limit(id="Pad/dtype/T2", kind="dtype", subject="T2", values=("float16",),
               rule={"kinds": {"float16": "Tensor"}}),
    )  # fmt: skip
    width = next(lim for lim in seed_catalogue().operators["Pad"].limits() if lim.kind == "range")
    only_t2 = dataclasses.replace(
        width, id="Pad/x@type=T2", condition={**width.condition, "type": ("T2",)}
    )
    pad = ListedOperator("Pad", "1", (*dtypes, only_t2))
    return OperatorCatalogue("rknn2-x", "rk3588", Source("f", "t", "d", ""), {"Pad": pad})


def test_a_limit_for_one_type_variable_is_probed_and_judged_in_its_dtype_only() -> None:
    catalogue = _with_type_condition()
    cases = operator_cases(catalogue, MODELS).cases
    probing = [c for c in cases if "Pad/x@type=T2" in c.limits and c.value != "typical"]
    assert probing and {c.dtype for c in probing} == {"float16"}
    pad = catalogue.operators["Pad"]
    limit = pad.limits()[-1]
    outside = next(c for c in probing if c.documented == "outside")
    found = MODELS.subjects("Pad", outside.params)
    limits = governing_limits(catalogue, pad)
    assert documented_status(MODELS, pad, limits, "float16", found) == (limit.id,)
    assert (
        documented_status(MODELS, pad, limits, "int8", found) == ()
    )  # T1: the limit does not apply


# -- the plugin ----------------------------------------------------------------------------------


def _collected(*args: str) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "suites/test_operators.py", "--collect-only", "-q",
         "-p", "no:cacheprovider", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode in (0, 5), run.stdout + run.stderr
    return [line for line in run.stdout.splitlines() if "::" in line]


def test_several_platforms_and_all_run_in_one_session() -> None:
    two = _collected("--platform", "rk3588,rv1106")
    platforms = {line.split("[")[1].split("/")[0] for line in two}
    assert platforms == {"rk3588", "rv1106"}
    every = _collected("--platform", "all")
    assert {line.split("[")[1].split("/")[0] for line in every} == set(PLATFORMS)


def test_an_unknown_platform_in_a_list_is_a_usage_error() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "suites/test_operators.py", "--collect-only", "-q",
         "-p", "no:cacheprovider", "--platform", "rk3588,rk9999"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 4
    assert "rk9999" in run.stderr


def test_listed_operators_take_only_sections_entries_and_absent_ones() -> None:
    group = load(versions()[-1]).group("rk3588")
    found = listed_operators(group)
    absent = {lim.op for lim in group.absent}
    for name, op in found.items():
        kinds = {limit.kind for limit in op.limits()}
        assert (kinds == {"absent"}) == (name in absent or name.startswith(tuple(absent)))
    assert all(name in found for name in MODELS.probing if group.entry(name) is not None)


def test_a_product_is_probed_exactly_at_its_cap() -> None:
    """RK3588's Transpose h1*w1 < p (p=8192) under perm [0,3,1,2]: 8192 outside, and inside
    the nearest product both of whose factors hold data, 90*91 (8191 is prime: 1*8191 would
    move data as [0,3,2,1] does); seed 001's square caps keep their 127*129 and 128*128."""
    cases = operator_cases(operator_catalogue("rk3588"), MODELS, ops=["Transpose"]).cases
    probing = {
        c.value: c.documented
        for c in cases
        if c.limits == ("Transpose/attr/h1*w1<p@perm=[0,3,1,2]@type=T1/T2",)
    }
    assert probing == {"h1*w1=90*91": "supported", "h1*w1=8192": "outside"}
    seed = operator_cases(seed_catalogue(), MODELS, ops=["Hardmax"]).cases
    assert {"height*width=16383", "height*width=16384"} <= {c.value for c in seed}


def test_a_fused_entry_checks_its_fusion_and_leaves_the_bounds_to_its_base() -> None:
    catalogue = operator_catalogue("rk3588")
    fused, base = catalogue.operators["ConvolutionRelu"], catalogue.operators["Convolution"]
    assert len(fused.adopted) == len(base.limits()) and not base.adopted
    found = operator_cases(catalogue, MODELS, ops=["ConvolutionRelu", "Convolution"])
    fused_cases = [c for c in found.cases if c.op == "ConvolutionRelu"]
    assert {c.value for c in fused_cases} == {"typical"}
    assert {c.dtype for c in fused_cases} == {"int8", "float16"}
    adopted = {u.limit.id: u.reason for u in found.unprobed if u.limit.op == "ConvolutionRelu"}
    assert {limit.id for limit in fused.adopted} <= set(adopted)
    probed_on_base = {limit for c in found.cases if c.op == "Convolution" for limit in c.limits}
    assert "Convolution/weight/kernel_h" in probed_on_base
    # The adopted limits still judge the fused model: past the base's kernel bound, outside.
    bound = next(lim for lim in fused.adopted if lim.id.endswith("/weight/kernel_h"))
    params = MODELS.with_subject("ConvolutionRelu", {}, "kernel_h", 32)
    limits = governing_limits(catalogue, fused)
    assert bound.id in documented_status(
        MODELS, fused, limits, "int8", MODELS.subjects("ConvolutionRelu", params)
    )
