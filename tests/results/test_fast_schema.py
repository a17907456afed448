"""The compiled schema check agrees with jsonschema: it never accepts a record, run.json or
probe record that jsonschema refuses (the journal readers trust it), nor refuses a good one."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.helpers.records import make_record

from harness.results.fast_schema import compile_check
from harness.results.schema import PROBE_SCHEMA, RECORD_SCHEMA, RUN_SCHEMA

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "limit", "reason", "id", "x"]), inner, max_size=3)
    ),
    max_leaves=8,
)
GOOD: dict[str, dict[str, Any]] = {
    "record": make_record(
        "rk3562/Pow/float16/values=2",
        checks=[{"prop": "p", "limits": ["l"], "documented": "d", "observed": "o", "status": "s"}],
        reference={"used": "onnx.reference", "metrics": {"onnx.reference": {"cosine": 1.0}}},
        known={"reference": "R-1", "note": "", "status": "changed", "expected": "violation"},
        sdk="2.5.0",
    ).to_json(),
    "run": {
        "tier": "full",
        "baseline": None,
        "left_out": [{"id": "a", "reason": "slow"}],
        "shard": {"index": 1, "count": 2, "selection": "s", "cases": 0},
    },
    "probe": {
        **{name: "x" for name in ("id", "platform", "op", "limit", "dtype", "subject")},
        **{"documented": "[1,8]", "side": "upper", "edge": 8, "stop": "found", "first_bad": 9},
        "steps": [{"value": 9, "case": "c", "behaved": False, "behaviour": "b", "verdict": "v"}],
    },
}
SCHEMAS = {"record": RECORD_SCHEMA, "run": RUN_SCHEMA, "probe": PROBE_SCHEMA}


def paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``data`` a value could be replaced at, and a new key of each object."""
    found = [prefix]
    if isinstance(data, dict):
        found.append((*prefix, "new-key"))
        for key, value in data.items():
            found += paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += paths(value, (*prefix, index))
    return found


def replaced(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    data = copy.deepcopy(data)
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return data


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=300, deadline=None)
@given(data=st.data(), value=JSON)
def test_the_fast_check_agrees_with_jsonschema(name: str, data: st.DataObject, value: Any) -> None:
    good, schema = GOOD[name], SCHEMAS[name]
    assert compile_check(schema)(good) and jsonschema.Draft202012Validator(schema).is_valid(good)
    path = data.draw(st.sampled_from(paths(good)))
    mutated = replaced(good, path, value)
    expected = jsonschema.Draft202012Validator(schema).is_valid(mutated)
    assert compile_check(schema)(mutated) == expected, (path, value)


def test_an_unknown_keyword_has_no_fast_check() -> None:
    with pytest.raises(ValueError, match="'minLength' has no fast check"):
        compile_check({"type": "string", "minLength": 1})
