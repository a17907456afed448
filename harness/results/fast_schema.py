"""A fast yes/no check of JSON data against the results schemas, compiled once into closures.

jsonschema walks a record in about a millisecond, which made a baseline of 100,000 records a
minute of validation; a compiled check takes a few microseconds. It answers only "valid or
not": a record it refuses is validated again by jsonschema for the message (``schema_problem``),
so what a message says stays jsonschema's. It knows the keywords the results schemas use, with
jsonschema's meaning, and refuses to compile any other, so it never accepts what jsonschema
would refuse (``tests/results/test_fast_schema.py`` compares the two on mutated records).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

_TYPES: dict[str, Check] = {
    "string": lambda x: isinstance(x, str),
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "number": lambda x: isinstance(x, int | float) and not isinstance(x, bool),
    "integer": lambda x: (
        (isinstance(x, int) and not isinstance(x, bool))
        or (isinstance(x, float) and x.is_integer())
    ),
}


def compile_check(schema: dict[str, Any] | bool) -> Check:
    """A function telling whether data fits ``schema``; ValueError for a keyword it does not
    know."""
    if schema is True:
        return lambda x: True
    if schema is False:
        return lambda x: False
    checks = [
        check
        for key, value in schema.items()
        if (check := _keyword(key, value, schema)) is not None
    ]
    if len(checks) == 1:
        return checks[0]
    return lambda x: all(check(x) for check in checks)


def _keyword(key: str, value: Any, schema: dict[str, Any]) -> Check | None:
    if key == "type":
        types = [_TYPES[name] for name in ([value] if isinstance(value, str) else value)]
        return types[0] if len(types) == 1 else lambda x: any(t(x) for t in types)
    if key == "enum":
        if not all(isinstance(item, str) for item in value):
            raise ValueError(f"enum {value!r}: only strings have a fast check")
        allowed = frozenset(value)
        return lambda x: isinstance(x, str) and x in allowed
    if key == "required":
        names = tuple(value)
        return lambda x: not isinstance(x, dict) or all(name in x for name in names)
    if key == "properties":
        subs = {name: compile_check(sub) for name, sub in value.items()}
        return lambda x: (
            not isinstance(x, dict) or all(sub(x[name]) for name, sub in subs.items() if name in x)
        )
    if key == "additionalProperties":
        sub, known = compile_check(value), frozenset(schema.get("properties", ()))
        return lambda x: (
            not isinstance(x, dict)
            or all(sub(item) for name, item in x.items() if name not in known)
        )
    if key == "items":
        sub = compile_check(value)
        return lambda x: not isinstance(x, list) or all(sub(item) for item in x)
    if key == "anyOf":
        options = [compile_check(sub) for sub in value]
        return lambda x: any(option(x) for option in options)
    if key == "minimum":
        return lambda x: not _TYPES["number"](x) or not x < value  # NaN passes, as there
    if key == "maximum":
        return lambda x: not _TYPES["number"](x) or not x > value
    if key == "pattern":
        pattern = re.compile(value)
        return lambda x: not isinstance(x, str) or pattern.search(x) is not None
    if key in ("$schema", "description", "title"):
        return None
    raise ValueError(f"schema keyword {key!r} has no fast check")
