"""The model declarations against the whole operator list (V2.3.2, every platform group): each
declared operator is an entry, its typical model lies inside the documented limits, and every
subject a limit names is set and read back under the document's own name."""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import pytest

from harness.catalogue.documents import Entry, Group
from harness.catalogue.limits import Limit
from harness.models import OPERATORS, PROBING, build_model, subjects, with_subject
from harness.models.reference import ORT, SPEC, host_references
from harness.vendors.rknn.operator_list.catalogue import load

DOCUMENT = load("V2.3.2")
SEED = {"Div", "Mul", "Max", "MulRelu", "Pow", "Expand", "Gather", "Hardmax", "Pad", "GRU"}
SEED |= {"LSTM", "MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"}
DECLARED = sorted(set(OPERATORS) - SEED)


def _entries(op: str) -> Iterator[tuple[Group, Entry]]:
    for group in DOCUMENT.groups:
        entry = next((e for e in group.entries if e.name == op), None)
        if entry is not None:
            yield group, entry


def _governing(group: Group, entry: Entry) -> list[Limit]:
    """The entry's limits, those of the entry it says it is the same as (a fused entry's
    convolution), and Expand's forms where it broadcasts "as Expand"."""
    limits = list(entry.limits)
    if entry.same_as and (base := group.entry(entry.same_as)) is not None:
        limits += base.limits
    if any(lim.rule.get("same_as") == "Expand" for lim in limits):
        expand = group.entry("Expand")
        limits += [lim for lim in expand.limits if lim.kind == "broadcast"] if expand else []
    return limits


# -- a small evaluator for the document's formulas: arithmetic and one comparison -------------

_OPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Mod: operator.mod,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
}


def _value(node: ast.AST, names: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return names[node.id]  # KeyError: a name the model does not express
    if isinstance(node, ast.BinOp):
        return _OPS[type(node.op)](_value(node.left, names), _value(node.right, names))
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _value(node.left, names), _value(node.comparators[0], names)
        return _OPS[type(node.ops[0])](left, right)
    raise ValueError(f"not a formula: {ast.dump(node)}")


def formula(text: str, names: Mapping[str, Any]) -> bool:
    python = re.sub(r"(?<![<>!=])=(?!=)", "==", text)  # "h1%16=0" compares
    return bool(_value(ast.parse(python, mode="eval").body, names))


def _form(text: str) -> str:
    return text.replace(" ", "")


def breaks(limit: Limit, found: Mapping[str, Any]) -> bool:
    """Whether subjects ``found`` break ``limit`` (False where the limit does not apply, or
    names what the model does not express). ``type`` conditions hold for every dtype here."""
    for key, allowed in limit.condition.items():
        if key != "type" and found.get(key) not in allowed:
            return False
    names = {**found, **limit.rule.get("constants", {})}
    if "when" in limit.rule:
        try:
            if not formula(limit.rule["when"], names):
                return False
        except (KeyError, ValueError):  # words ("dilation != (1, 1)"): not read here
            return False
    key = str(limit.rule.get("element", limit.subject))
    value = found.get(key)
    if limit.kind == "range" and value is not None and limit.interval is not None:
        return value not in limit.interval
    if limit.kind in ("values", "fixed") and value is not None and limit.values is not None:
        return value not in limit.values
    if limit.kind == "unsupported":
        return bool(value)
    if limit.kind == "product" and all(f in found for f in limit.rule["factors"]):
        return math.prod(found[f] for f in limit.rule["factors"]) >= limit.rule["less_than"]
    if limit.kind == "formula":
        try:
            holds = formula(limit.rule["expression"], names)
        except KeyError:
            return False
        return holds if limit.rule.get("unsupported_when") else not holds
    if limit.kind == "broadcast" and found.get("form") == _form(limit.rule["from"]):
        assert limit.interval is not None
        return found[key] not in limit.interval
    if limit.kind == "broadcast-support" and limit.values and "form" in found:
        return found["form"] not in {_form(v) for v in limit.values}
    return False


# Where no model can lie inside every group's limits: RK3566/RK3568 documents every Transpose
# but the identity (which the toolkit removes) as unsupported.
UNAVOIDABLE = {("Transpose", "3.1"): {"Transpose/attr/perm@perm=[0,2,3,1]"}}


def test_the_evaluator_finds_a_transpose_outside_rk3588s_perm_limits() -> None:
    """h1=8 under perm [0,1,3,2]: not a multiple of 16 (T1) and h1*w1 past 2*q at w1=1024."""
    group = DOCUMENT.group("rk3588")
    entry = group.entry("Transpose")
    assert entry is not None
    params = with_subject("Transpose", {"perm": "[0,1,3,2]"}, "h1", 8)
    params = with_subject("Transpose", params, "w1", 1024)
    broken = {lim.id for lim in entry.limits if breaks(lim, subjects("Transpose", params))}
    assert broken == {
        "Transpose/attr/h1%16=0@perm=[0,1,3,2]@type=T1",
        "Transpose/attr/h1*w1<2*q@perm=[0,1,3,2]@type=T1",
        "Transpose/attr/h1*w1<2*q@perm=[0,1,3,2]@type=T2",
    }


def test_sub_reads_its_two_documented_forms_and_breaks_on_another() -> None:
    group = DOCUMENT.group("rk3588")
    entry = group.entry("Sub")
    assert entry is not None
    for b_shape, form, broken in [
        ([1, 8, 1, 1], "[b,c,1,1]", False),
        ([1, 1, 1, 1], "[scalar]", False),
        ([1, 8, 1, 6], "[b,c,1,w]", True),
    ]:
        found = subjects("Sub", {"b_shape": b_shape})
        assert found["form"] == form
        assert any(breaks(lim, found) for lim in entry.limits) == broken, b_shape


def test_every_declared_operator_is_an_entry_of_the_document() -> None:
    missing = [op for op in DECLARED if not any(_entries(op))]
    assert not missing
    assert {"Transpose", "ConvolutionRelu", "Clip/ReLU6", "Depthwise Convolution"} <= set(DECLARED)


@pytest.mark.parametrize("op", DECLARED)
def test_typical_model_lies_inside_every_groups_limits(op: str) -> None:
    found = subjects(op, {})
    for group, entry in _entries(op):
        broken = {lim.id for lim in _governing(group, entry) if breaks(lim, found)}
        assert broken == UNAVOIDABLE.get((op, group.section), set()), (group.section, found)


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
    for group, entry in _entries(op):
        for limit in _governing(group, entry):
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
        params = with_subject(op, base, key, value)  # KeyError: a subject the model lacks
        found = subjects(op, params)
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
        ("Depthwise Convolution", "kernel_w", 8),
        ("ConvTranspose", "pads_top", 15),
        ("Softmax", "axis", 3),
        ("Concat", "axis", 0),
    ],
)
def test_a_documented_bound_builds(op: str, key: str, value: Any) -> None:
    params = with_subject(op, {}, key, value)
    built = build_model(op, params, seed=0)
    assert subjects(op, built.params)[key] == value


@pytest.mark.parametrize("op", [op for op in DECLARED if PROBING[op].outside_values])
def test_values_outside_the_documented_sets_build_and_both_references_agree(op: str) -> None:
    for key, values in PROBING[op].outside_values.items():
        for value in values:
            built = build_model(op, with_subject(op, {}, key, value), seed=0)
            outputs = host_references(built).outputs
            assert set(outputs) == {SPEC, ORT}
            for spec, ort in zip(outputs[SPEC], outputs[ORT], strict=True):
                np.testing.assert_allclose(spec, ort, rtol=1e-5, atol=1e-5)


PERMS = sorted(
    {
        perm
        for group, entry in _entries("Transpose")
        for limit in entry.limits
        for perm in limit.condition.get("perm", ())
    }
)


@pytest.mark.parametrize("perm", PERMS)
def test_every_documented_perm_is_read_back_and_transposes_as_numpy(perm: str) -> None:
    built = build_model("Transpose", with_subject("Transpose", {}, "perm", perm), seed=0)
    assert subjects("Transpose", built.params)["perm"] == perm
    want = np.transpose(built.inputs[0], [int(axis) for axis in perm.strip("[]").split(",")])
    for outputs in host_references(built).outputs.values():
        np.testing.assert_array_equal(outputs[0], want)
