"""Whether a model's quantities satisfy a documented formula (``h1*w1<16*p``, ``h1%16=0``).

A ``formula`` or ``product`` limit read from an operator list keeps its comparison as written
(``rule["expression"]``, ``=`` meaning equality), the named constants it uses
(``rule["constants"]``: ``{"p": 8192}``), possibly a precondition (``rule["when"]``:
``dilated_kernel_h > 1``) and ``rule["unsupported_when"]`` when the document lists the
comparison as what is not supported. Expressions are evaluated over integers with a closed
grammar (names, integers, + - * / %, comparisons, ``and`` and ``or``), never by ``eval``.
"""

from __future__ import annotations

import ast
import functools
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_SINGLE_EQUALS = re.compile(r"(?<![<>=!])=(?!=)")


class FormulaError(ValueError):
    """An expression outside the grammar; names the expression."""


@functools.cache
def parse(expression: str) -> ast.Expression:
    """The expression's syntax tree, checked against the grammar (each text parsed once)."""
    try:
        tree = ast.parse(_SINGLE_EQUALS.sub("==", expression), mode="eval")
    except SyntaxError:
        raise FormulaError(f"not a formula: {expression!r}") from None
    for node in ast.walk(tree):
        allowed = (
            *(ast.Expression, ast.Compare, ast.BinOp, ast.UnaryOp, ast.USub, ast.Name),
            *(ast.BoolOp, ast.And, ast.Or),
        )
        kinds = (*allowed, ast.Load, *_BINARY, *_COMPARE)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            continue
        if not isinstance(node, kinds):
            raise FormulaError(f"{type(node).__name__} in formula {expression!r}")
    return tree


def names(expression: str) -> set[str]:
    return {node.id for node in ast.walk(parse(expression)) if isinstance(node, ast.Name)}


def equalities(expression: str) -> list[tuple[tuple[str, ...], int]]:
    """The products of names the expression compares for equality with an integer, with that
    integer: ``[(("height", "width"), 1)]`` for ``height * width = 1 or height * width > 8``."""
    found = []
    for node in ast.walk(parse(expression)):
        if not (isinstance(node, ast.Compare) and [type(op) for op in node.ops] == [ast.Eq]):
            continue
        value, product = node.comparators[0], _factors(node.left)
        if isinstance(value, ast.Constant) and isinstance(value.value, int) and product:
            found.append((product, value.value))
    return found


def _factors(node: ast.expr) -> tuple[str, ...]:
    """The names of ``a * b * c``, or () for any other expression."""
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = _factors(node.left), _factors(node.right)
        return (*left, *right) if left and right else ()
    return ()


def evaluate(expression: str, values: Mapping[str, Any]) -> Any:
    """The expression's value with ``values`` for its names (KeyError for a missing one)."""
    return _value(parse(expression).body, values)


def _value(node: ast.expr, values: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        return -_value(node.operand, values)
    if isinstance(node, ast.BoolOp):  # "and"/"or" of comparisons, as Python evaluates them
        parts = (_value(value, values) for value in node.values)
        return all(parts) if isinstance(node.op, ast.And) else any(parts)
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_value(node.left, values), _value(node.right, values))
    assert isinstance(node, ast.Compare)
    left = _value(node.left, values)
    for op, right_node in zip(node.ops, node.comparators, strict=True):
        right = _value(right_node, values)
        if not _COMPARE[type(op)](left, right):
            return False
        left = right
    return True


def applies(rule: Mapping[str, Any], found: Mapping[str, Any]) -> bool:
    """Whether a limit's precondition (``rule["when"]``) holds for quantities ``found``; one
    over a quantity ``found`` lacks, or in words the grammar cannot read ("dilation != (1, 1)"),
    is not known to hold."""
    when = rule.get("when")
    if not when:
        return True
    try:
        return bool(evaluate(when, {**found, **rule.get("constants", {})}))
    except (KeyError, FormulaError):
        return False


def holds(rule: Mapping[str, Any], found: Mapping[str, Any]) -> bool:
    """Whether quantities ``found`` satisfy the limit whose ``rule`` this is; a formula over
    a quantity ``found`` lacks, or whose precondition does not hold, does not apply."""
    if not applies(rule, found):
        return True
    try:
        result = bool(evaluate(rule["expression"], {**found, **rule.get("constants", {})}))
    except KeyError:
        return True
    return not result if rule.get("unsupported_when") else result
