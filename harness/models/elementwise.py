"""Element-wise operators: Add, Sub, Div, Mul, Max, Min, AddRelu, MulRelu, Greater (binary,
with broadcasting), Pow and Where."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from onnx import TensorProto, helper

from harness.models.builder import (
    NCHW,
    Broadcast,
    Graph,
    OperatorSpec,
    Parametrization,
    Params,
    away_from_zero,
    broadcast_form,
    dim_setters,
    distinct,
    fp16_exact,
    nchw,
    shape_reader,
    uniform,
)

# Both operands are graph inputs by default: the toolkit rewrites a constant divisor into a
# Mul, and a constant operand would test the constant path rather than the operator
# (the vendor's page of the docs). ``b_constant: 1`` makes B a float32 initializer, the
# documented constTensor.
BINARY_DEFAULTS = {"a_shape": [1, 8, 4, 6], "b_shape": [1, 8, 1, 6], "b_constant": 0}

Operands = Callable[[np.random.Generator, list[int], list[int]], list[np.ndarray]]


def _signed(rng: np.random.Generator, a: list[int], b: list[int]) -> list[np.ndarray]:
    return [uniform(rng, a, -2.0, 2.0), uniform(rng, b, -2.0, 2.0)]


def _nonzero_divisor(rng: np.random.Generator, a: list[int], b: list[int]) -> list[np.ndarray]:
    return [uniform(rng, a, -2.0, 2.0), away_from_zero(rng, b, 0.5, 2.0)]


def _all_distinct(rng: np.random.Generator, a: list[int], b: list[int]) -> list[np.ndarray]:
    return distinct(rng, [a, b])


# More than two int8 steps of [-1, 1) (4/255) after float16 rounding: an int8 build rounds
# each operand to half a step of its range, so operands closer than a step compare either
# way. Hand-checked: every mismatch of the rk3576 Greater int8 cases (distinct operands,
# 3e-5 apart) was such a pair.
COMPARE_GAP = 1 / 60


def _apart(rng: np.random.Generator, a: list[int], b: list[int]) -> list[np.ndarray]:
    """Operands of a comparison in [-1, 1) on interleaved grids: every value of A at least
    ``COMPARE_GAP`` from every value of B, wherever broadcasting pairs them (never a tie)."""
    cells = -1.0 + 2 * COMPARE_GAP * np.arange(int(1 / COMPARE_GAP))
    return [
        fp16_exact(rng.choice(cells, size=tuple(shape)) + offset * COMPARE_GAP)
        for shape, offset in ((a, 0.5), (b, 1.5))
    ]


def _read_binary(p: Mapping[str, Any]) -> dict[str, Any]:
    out = [max(a, b) for a, b in zip(p["a_shape"], p["b_shape"], strict=True)]
    # A constant B has the type of its float32 initializer; a graph input B has the data's.
    constant = {"constant_B": "float"} if p["b_constant"] else {}
    return {**nchw(out), **broadcast_form(p["b_shape"], out), **constant}


def _set_constant_b(p: dict[str, Any], value: Any) -> None:
    p["b_constant"] = 1  # stored as float32, the one type the documented constTensor lists


def _set_binary_dim(p: dict[str, Any], axis: int, value: int) -> None:
    p["a_shape"][axis] = value
    if p["b_shape"][axis] != 1:  # a broadcast axis of B stays broadcast
        p["b_shape"][axis] = value


# A is the full-size operand; the vendor's forms ("same as Expand") are probed on B.
BINARY_PROBING = Parametrization(
    read=_read_binary,
    setters={**dim_setters(_set_binary_dim), "constant_B": _set_constant_b},
    broadcast=Broadcast("B", lambda source, out: {"a_shape": out, "b_shape": source}),
)
# Operators documenting an operand type T2 "float(constTensor)": a constant B chooses it.
CONSTANT_B_PROBING = replace(BINARY_PROBING, dtype_subjects={"T2": "constant_B"})


def _binary(
    chain: tuple[str, ...],
    operands: Operands,
    probing: Parametrization = BINARY_PROBING,
    defaults: Mapping[str, Any] = BINARY_DEFAULTS,
) -> OperatorSpec:
    """A binary operator ``chain[0]`` on inputs A, B, followed by the unary ops ``chain[1:]``."""

    def build(p: Params, rng: np.random.Generator) -> Graph:
        a, b = p.shape("a_shape"), p.shape("b_shape")
        for axis, (da, db) in enumerate(zip(a, b, strict=True)):
            if da != db and 1 not in (da, db):
                raise p.error("b_shape", f"does not broadcast with a_shape {a} on axis {axis}")
        names = [f"t{i}" for i in range(len(chain) - 1)] + ["C"]
        nodes = [helper.make_node(chain[0], ["A", "B"], [names[0]])]
        nodes += [
            helper.make_node(op, [src], [dst])
            for op, src, dst in zip(chain[1:], names[:-1], names[1:], strict=True)
        ]
        data_a, data_b = operands(rng, a, b)
        if p.choice("b_constant", (0, 1)):
            return Graph(nodes, {"A": data_a}, ["C"], {"B": data_b})
        return Graph(nodes, {"A": data_a, "B": data_b}, ["C"])

    return OperatorSpec(defaults, build, probing)


# The exponent's dtypes as the vendor document spells them (its T2), and as numpy does; int16
# and double are types ONNX Pow takes that the document does not list.
EXPONENT_DTYPES = {
    "float": "float32",
    "float16": "float16",
    "int8": "int8",
    "int16": "int16",
    "double": "float64",
    "int32": "int32",
    "int64": "int64",
}
POW_EXPONENT_DTYPES = tuple(EXPONENT_DTYPES.values())


def _build_pow(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    exponent = p.number("exponent")
    dtype = np.dtype(p.choice("exponent_dtype", POW_EXPONENT_DTYPES))
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        if not (exponent.is_integer() and info.min <= exponent <= info.max):
            raise p.error("exponent", f"not representable as {dtype}")
    stored = np.array([exponent], dtype=dtype)  # shape [1], as the vendor table lists Y
    if float(stored[0]) != exponent:
        raise p.error("exponent", f"not exactly representable as {dtype}")
    # Fractional exponents need positive bases, negative ones bases away from zero; integral
    # non-negative ones get both signs.
    if exponent.is_integer() and exponent >= 0:
        base = away_from_zero(rng, shape, 0.5, 2.0)
    else:
        base = uniform(rng, shape, 0.5, 2.0)
    node = helper.make_node("Pow", ["X", "exponent"], ["Y"])
    return Graph([node], {"X": base}, ["Y"], {"exponent": stored})


def _read_pow(p: Mapping[str, Any]) -> dict[str, Any]:
    spelled = {numpy: doc for doc, numpy in EXPONENT_DTYPES.items()}
    return {
        **nchw(p["shape"]),
        "values": p["exponent"],
        "exponent_dtype": spelled[p["exponent_dtype"]],
    }


def _set_exponent(p: dict[str, Any], value: Any) -> None:
    p["exponent"] = value


def _set_exponent_dtype(p: dict[str, Any], value: Any) -> None:
    p["exponent_dtype"] = EXPONENT_DTYPES[value]


POW_PROBING = Parametrization(
    read=_read_pow,
    setters={
        **dim_setters(),
        "values": _set_exponent,
        "exponent_dtype": _set_exponent_dtype,
    },
    # The next integer power after the documented 3; exponent types T2 does not list, an
    # integer and a float one.
    outside_values={"values": (4,), "exponent_dtype": ("int16", "double")},
    dtype_subjects={"T2": "exponent_dtype"},  # the exponent's dtype is a model parameter
)

# Sub documents its broadcasts as the forms [b, c, 1, 1] and [scalar] only (not "same as
# Expand"): its typical B is the per-channel [b,c,1,1], and a one-element B reads [scalar].
SUB_DEFAULTS = {**BINARY_DEFAULTS, "b_shape": [1, 8, 1, 1]}


def _read_sub(p: Mapping[str, Any]) -> dict[str, Any]:
    found = _read_binary(p)
    return found | ({"form": "[scalar]"} if math.prod(p["b_shape"]) == 1 else {})


SUB_PROBING = replace(CONSTANT_B_PROBING, read=_read_sub)


def _cast_to_float(spec: OperatorSpec) -> OperatorSpec:
    """``spec``'s comparison with its bool result cast to float32, the output type the
    harness compares; the case judges the comparison's own layer."""

    def build(p: Params, rng: np.random.Generator) -> Graph:
        graph = spec.build(p, rng)
        graph.nodes[-1].output[0] = "compared"
        graph.nodes.append(helper.make_node("Cast", ["compared"], ["C"], to=TensorProto.FLOAT))
        return graph

    return replace(spec, build=build)


def _build_where(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    # The bool condition is a constant (the harness feeds float inputs only), about half true.
    condition = {"condition": rng.random(tuple(shape)) < 0.5}
    node = helper.make_node("Where", ["condition", "X", "Y"], ["Z"])
    inputs = dict(zip(("X", "Y"), distinct(rng, [shape, shape]), strict=True))
    return Graph([node], inputs, ["Z"], condition)


OPERATORS = {
    "Where": OperatorSpec(
        {"shape": [1, 8, 6, 8]},
        _build_where,
        Parametrization(
            shape_reader(), dim_setters(), size=lambda s: 4 * math.prod(s[d] for d in NCHW)
        ),
    ),
    "Add": _binary(("Add",), _signed, CONSTANT_B_PROBING),
    "Sub": _binary(("Sub",), _signed, SUB_PROBING, SUB_DEFAULTS),
    "Min": _binary(("Min",), _all_distinct),
    "AddRelu": _binary(("Add", "Relu"), _signed, CONSTANT_B_PROBING),
    "Div": _binary(("Div",), _nonzero_divisor, CONSTANT_B_PROBING),
    "Mul": _binary(("Mul",), _signed, CONSTANT_B_PROBING),
    "Max": _binary(("Max",), _all_distinct),
    # Operands apart: no ties for float16 rounding, nor int8 rounding, to decide.
    "Greater": _cast_to_float(_binary(("Greater",), _apart)),
    "MulRelu": _binary(("Mul", "Relu"), _signed, CONSTANT_B_PROBING),
    "Pow": OperatorSpec(
        {"shape": [1, 4, 6, 8], "exponent": 2.0, "exponent_dtype": "float32"},
        _build_pow,
        POW_PROBING,
    ),
}
