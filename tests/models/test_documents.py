"""The model declarations against the whole operator list (V2.3.2, every platform group): each
declared operator is an entry, its typical model lies inside the documented limits, and every
subject a limit names is set and read back under the document's own name."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pytest
from tests.helpers.declared import MODELS, OPERATORS

from harness.cases.operators.status import documented_status, governing_limits
from harness.documented.limits import Limit
from harness.documented.operators import DocumentedOperator, OperatorCatalogue
from harness.models.reference import ORT, SPEC, host_references
from harness.vendors.rknn.documents.operator_list.committed import load
from harness.vendors.rknn.documents.operators import operator_catalogue

DOCUMENT = load("V2.3.2")
# One target per platform group: each group's section is its catalogue.
CATALOGUES = [operator_catalogue(group.targets[0], "V2.3.2") for group in DOCUMENT.groups]
SEED = {"Div", "Mul", "Max", "MulRelu", "Pow", "Expand", "Gather", "Hardmax", "Pad", "GRU"}
SEED |= {"LSTM", "MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"}
DECLARED = sorted(set(OPERATORS) - SEED)


def _entries(op: str) -> Iterator[tuple[OperatorCatalogue, DocumentedOperator]]:
    """The operator in each group whose section documents it (not absent)."""
    for catalogue in CATALOGUES:
        found = catalogue.operators.get(op)
        if found is not None and not any(lim.kind == "absent" for lim in found.limits()):
            yield catalogue, found


def _broken(
    catalogue: OperatorCatalogue, op: DocumentedOperator, found: Mapping[str, Any]
) -> set[str]:
    """The limits subjects ``found`` break in any documented dtype."""
    limits = governing_limits(catalogue, op)
    return {
        limit
        for dtype in op.data_dtypes() or ("int8",)
        for limit in documented_status(MODELS, op, limits, dtype, found)
        if limit != f"{op.name}/dtype"
    }


# Where no model can lie inside every group's limits: RK3566/RK3568 documents every Transpose
# but the identity (which the toolkit removes) as unsupported.
UNAVOIDABLE = {("Transpose", "rk3566"): {"Transpose/attr/perm@perm=[0,2,3,1]"}}


def test_the_judge_finds_a_transpose_outside_rk3588s_perm_limits() -> None:
    """h1=8 under perm [0,1,3,2]: not a multiple of 16 (T1) and h1*w1 past 2*q at w1=1024."""
    catalogue = operator_catalogue("rk3588", "V2.3.2")
    op = catalogue.operators["Transpose"]
    params = MODELS.with_subject("Transpose", {"perm": "[0,1,3,2]"}, "h1", 8)
    params = MODELS.with_subject("Transpose", params, "w1", 1024)
    limits = governing_limits(catalogue, op)
    found = MODELS.subjects("Transpose", params)
    assert set(documented_status(MODELS, op, limits, "int8", found)) == {
        "Transpose/attr/h1%16=0@perm=[0,1,3,2]@type=T1",
        "Transpose/attr/h1*w1<2*q@perm=[0,1,3,2]@type=T1",
    }
    assert set(documented_status(MODELS, op, limits, "float16", found)) == {
        "Transpose/attr/h1*w1<2*q@perm=[0,1,3,2]@type=T2",
    }


def test_sub_reads_its_two_documented_forms_and_breaks_on_another() -> None:
    catalogue = operator_catalogue("rk3588", "V2.3.2")
    op = catalogue.operators["Sub"]
    for b_shape, form, broken in [
        ([1, 8, 1, 1], "[b,c,1,1]", False),
        ([1, 1, 1, 1], "[scalar]", False),
        ([1, 8, 1, 6], "[b,c,1,w]", True),
    ]:
        found = MODELS.subjects("Sub", {"b_shape": b_shape})
        assert found["form"] == form
        assert bool(_broken(catalogue, op, found)) == broken, b_shape


def test_every_declared_operator_is_an_entry_of_the_document() -> None:
    missing = [op for op in DECLARED if not any(_entries(op))]
    assert not missing
    assert {"Transpose", "ConvolutionRelu", "Clip", "DepthwiseConvolution"} <= set(DECLARED)


@pytest.mark.parametrize("op", DECLARED)
def test_typical_model_lies_inside_every_groups_limits(op: str) -> None:
    found = MODELS.subjects(op, {})
    for catalogue, documented in _entries(op):
        broken = _broken(catalogue, documented, found)
        where = catalogue.platform
        assert broken == UNAVOIDABLE.get((op, where), set()), (where, found)


def _documented_values(limit: Limit) -> list[Any]:
    if limit.kind == "range" and limit.interval is not None:
        if math.isinf(limit.interval.hi):  # "(0, ∞]": its lowest integer only
            return [math.floor(limit.interval.lo) + 1]
        return list(limit.interval.integer_bounds())
    if limit.kind in ("values", "fixed") and limit.values is not None:
        return list(limit.values)
    return []


def _probes(op: str) -> Iterator[tuple[str, dict[str, Any], str, Any]]:
    """(limit id, condition params, subject, value) for every value a limit names."""
    for catalogue, documented in _entries(op):
        for limit in governing_limits(catalogue, documented):
            base = {k: v[0] for k, v in limit.condition.items() if k != "type"}
            key = str(limit.rule.get("element", limit.subject))
            for value in _documented_values(limit):
                yield limit.id, base, key, value
            for factor in limit.rule.get("factors", ()) if limit.kind == "product" else ():
                yield limit.id, base, factor, 96


# Operators whose limits name a value to set (the others document rank, dtypes, quantization,
# multi-core and broadcasting only, checked by the tests above and in test_models.py).
PROBED = [op for op in DECLARED if any(_probes(op))]


@pytest.mark.parametrize("op", PROBED)
def test_every_documented_subject_is_set_and_read_back(op: str) -> None:
    checked = 0
    for limit_id, base, key, value in _probes(op):
        params = MODELS.with_subject(op, base, key, value)  # KeyError: a subject the model lacks
        found = MODELS.subjects(op, params)
        wanted = value % 4 if key == "axis" else value
        assert found[key] == wanted, (limit_id, key, value)
        assert all(found[k] == v for k, v in base.items()), limit_id
        checked += 1
    assert checked


@pytest.mark.parametrize(
    ("op", "key", "value"),
    [
        ("Transpose", "h1", 8192),
        ("Convolution", "kernel_h", 31),
        ("ConvolutionRelu", "dilations_w", 31),
        ("DepthwiseConvolution", "kernel_w", 8),
        ("ConvTranspose", "pads_top", 15),
        ("Softmax", "axis", 3),
        ("Concat", "axis", 0),
        ("Split", "axis", 0),  # a batch of 1 splits no two ways: the setter grows it
        ("ConvTranspose", "pads_top", 16),  # cropping more than the output: grown too
        ("ConvTranposeRelu", "pads_left", 15),
        ("exMatMul", "k", 8192),
        ("exSDPAttention", "channel", 8192),
        ("exNorm", "axes", "[1,2,3]"),
        ("exWindow", "mode", "reverse"),
        ("exWindow", "mode", "partition_num_first"),
    ],
)
def test_a_documented_bound_builds(op: str, key: str, value: Any) -> None:
    params = MODELS.with_subject(op, {}, key, value)
    built = MODELS.build(op, params, seed=0)
    assert MODELS.subjects(op, built.params)[key] == value
    assert set(host_references(built).outputs) == {SPEC, ORT}


@pytest.mark.parametrize("op", [op for op in DECLARED if MODELS.probing[op].outside_values])
def test_values_outside_the_documented_sets_build_and_both_references_agree(op: str) -> None:
    for key, values in MODELS.probing[op].outside_values.items():
        for value in values:
            built = MODELS.build(op, MODELS.with_subject(op, {}, key, value), seed=0)
            outputs = host_references(built).outputs
            assert set(outputs) == {SPEC, ORT}
            for spec, ort in zip(outputs[SPEC], outputs[ORT], strict=True):
                np.testing.assert_allclose(spec, ort, rtol=1e-5, atol=1e-5)


PERMS = sorted(
    {
        perm
        for _, documented in _entries("Transpose")
        for limit in documented.limits()
        for perm in limit.condition.get("perm", ())
    }
)


@pytest.mark.parametrize("perm", PERMS)
def test_every_documented_perm_is_read_back_and_transposes_as_numpy(perm: str) -> None:
    built = MODELS.build("Transpose", MODELS.with_subject("Transpose", {}, "perm", perm), seed=0)
    assert MODELS.subjects("Transpose", built.params)["perm"] == perm
    want = np.transpose(built.inputs[0], [int(axis) for axis in perm.strip("[]").split(",")])
    for outputs in host_references(built).outputs.values():
        np.testing.assert_array_equal(outputs[0], want)
