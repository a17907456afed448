"""Test cases from the operator catalogue: each documented limit probed at and beyond its bounds.

For every limit the generator proposes parameter variants of the operator's typical model
(``harness.models.DEFAULT_PARAMS``): each bound of a range and the first value outside it
(8192 and 8193 for ``(0,8192]``), the neighbours of a "multiples of 4" rule (1, 4, 8 and 3,
5), every allowed value plus a documented-absent one (Pow exponent 4), products either side
of their cap (Hardmax h*w = 16383 and 16384). Whether a variant is documented as supported
is not decided by the proposer but by ``documented_status``, which checks the variant's
subjects against *every* limit of the operator; so a pad of 7 that needs a kernel of 8 is
honestly "outside" (because of the kernel).

Every case exists once per dtype the operator documents, plus its typical model in each
dtype it does not document (an "outside" case, e.g. int8 Div). Limits that a tiny model on
the simulator cannot probe are returned as ``Unprobed`` with the reason, so reports can
account for every documented limit.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness.models import DEFAULT_PARAMS
from harness.spec.operators import Limit, Operator, OperatorCatalogue

DTYPES = ("int8", "float16")
# Models larger than this many float32 elements (weights plus activations) are not generated:
# an 8192-wide GRU's recurrent weights alone are 3*8192*8192 floats (800 MB).
MAX_ELEMENTS = 1 << 24

# Layer types the toolkit's layer table may list for each operator (fused or renamed forms).
LAYER_TYPES: dict[str, tuple[str, ...]] = {
    "GRU": ("GRU", "exGRU"),
    "LSTM": ("LSTM", "exLSTM"),
    "GlobalMaxPool": ("GlobalMaxPool", "MaxPool"),
    "GlobalAveragePool": ("GlobalAveragePool", "AveragePool"),
}
# Values just outside a documented value set that an ONNX model can still express.
OUTSIDE_VALUES: dict[tuple[str, str], tuple[Any, ...]] = {
    ("Pow", "values"): (4,),
    ("Gather", "axis"): (-1,),
    ("Hardmax", "axis"): (0, 2),
    ("Pad", "mode"): ("edge",),
    ("AveragePool", "count_include_pad"): (0,),
}
# Pow's T2 names the exponent's dtypes the way the document spells them.
EXPONENT_DTYPES = {
    "float": "float32",
    "float16": "float16",
    "int8": "int8",
    "int32": "int32",
    "int64": "int64",
}
_BINARY = ("Div", "Mul", "Max", "MulRelu")
_POOLS = ("MaxPool", "AveragePool")
_GLOBAL_POOLS = ("GlobalMaxPool", "GlobalAveragePool")
_RNN = ("GRU", "LSTM")
_NCHW = ("batch", "channel", "height", "width")
_POOL_PADS = ("pad_top", "pad_left", "pad_bottom", "pad_right")


@dataclass(frozen=True)
class Case:
    """One model to run: an operator, a dtype and parameters probing one or more limits."""

    id: str
    platform: str
    op: str
    dtype: str
    limit: str  # the first limit this case probes
    value: str  # what is probed, e.g. "batch_size=3"
    documented: str  # "supported" or "outside"
    params: dict[str, Any]
    seed: int
    source: dict[str, str]
    layer_types: tuple[str, ...]
    limits: tuple[str, ...] = ()  # every limit whose probe produced these parameters
    outside_because: tuple[str, ...] = ()  # limit ids the parameters break


@dataclass(frozen=True)
class Unprobed:
    limit: Limit
    reason: str


@dataclass
class CaseSet:
    cases: list[Case] = field(default_factory=list)
    unprobed: list[Unprobed] = field(default_factory=list)


# -- subjects: what the documented limits talk about, read off a model's parameters ----------


def subjects(op: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The documented quantities (dims, attributes) a model with ``params`` has."""
    p = {**DEFAULT_PARAMS[op], **params}
    if op in _BINARY:
        out = [max(a, b) for a, b in zip(p["a_shape"], p["b_shape"], strict=True)]
        return {**dict(zip(_NCHW, out, strict=True)), **_form(p["b_shape"], out)}
    if op == "Expand":
        out = list(p["output_shape"])
        return {**dict(zip(_NCHW, out, strict=True)), **_form(p["input_shape"], out)}
    if op in _RNN:
        found = {k: p[k] for k in ("seq_length", "batch_size", "input_size", "hidden_size")}
        found["direction"] = p["direction"]
        found["num_directions"] = 2 if p["direction"] == "bidirectional" else 1
        if "linear_before_reset" in p:
            found["linear_before_reset"] = p["linear_before_reset"]
        return found
    if op in _POOLS:
        found = dict(zip(_NCHW, p["shape"], strict=True))
        found |= dict(zip(("kernel_h", "kernel_w"), p["kernel"], strict=True))
        found |= dict(zip(("strides_h", "strides_w"), p["strides"], strict=True))
        found |= dict(zip(_POOL_PADS, p["pads"], strict=True))
        found |= {"ceil_mode": p["ceil_mode"], "auto_pad": "NOTSET", "storage_order": 0}
        found["count_include_pad"] = p.get("count_include_pad", 1)
        return found
    if op in _GLOBAL_POOLS:
        found = dict(zip(_NCHW, p["shape"], strict=True))
        return found | {"kernel_h": found["height"], "kernel_w": found["width"]}
    if op == "Pow":
        found = dict(zip(_NCHW, p["shape"], strict=True))
        dtype = {v: k for k, v in EXPONENT_DTYPES.items()}[p["exponent_dtype"]]
        return found | {"values": p["exponent"], "exponent_dtype": dtype}
    found = dict(zip(_NCHW, p["shape"], strict=True))
    if op in ("Gather", "Hardmax"):
        found["axis"] = p["axis"]
    if op == "Pad":
        found["mode"] = p["mode"]
    return found


def _form(source: list[int], out: list[int]) -> dict[str, Any]:
    """The Expand broadcasting form ``[b,c,1,w]->[b,c,h,w]`` that maps ``source`` to ``out``."""
    letters = [
        "1" if s == 1 and o != 1 else letter
        for s, o, letter in zip(source, out, "bchw", strict=True)
    ]
    return {"form": "[" + ",".join(letters) + "]", **dict(zip("bchw", out, strict=True))}


def element_count(op: str, params: Mapping[str, Any]) -> int:
    """Float32 elements of weights and activations: the size budget's measure."""
    s = subjects(op, params)
    if op in _RNN:
        gates = 3 if op == "GRU" else 4
        h, i = s["hidden_size"], s["input_size"]
        weights = s["num_directions"] * gates * h * (i + h + 2)
        activations = s["seq_length"] * s["batch_size"] * (i + s["num_directions"] * h)
        return weights + activations
    return 2 * math.prod(s[d] for d in _NCHW)


# -- the documented status of a set of subjects ---------------------------------------------


def governing_limits(catalogue: OperatorCatalogue, op: Operator) -> list[Limit]:
    """The operator's limits plus those it adopts ("broadcasting constraints same as Expand")."""
    limits = op.limits()
    adopted = {limit.rule["same_as"] for limit in limits if limit.kind == "broadcast-support"}
    for name in sorted(adopted):
        limits += [lim for lim in catalogue.operators[name].limits() if lim.kind == "broadcast"]
    return limits


def documented_status(
    op: Operator, limits: Iterable[Limit], dtype: str, found: Mapping[str, Any]
) -> tuple[str, ...]:
    """Ids of the ``limits`` (of ``op``) that ``found`` (subjects) and ``dtype`` break."""
    broken = []
    if dtype not in op.data_dtypes():
        broken.append(f"{op.name}/dtype")
    broken += [limit.id for limit in limits if not _satisfies(limit, found)]
    return tuple(broken)


def _key(limit: Limit) -> str:
    return str(limit.rule.get("element", limit.subject))


def _applies(limit: Limit, found: Mapping[str, Any]) -> bool:
    return all(found.get(k) in allowed for k, allowed in limit.condition.items())


def _satisfies(limit: Limit, found: Mapping[str, Any]) -> bool:
    if not _applies(limit, found):
        return True
    key = _key(limit)
    kind = limit.kind
    if kind == "range" and key in found and limit.interval is not None:
        return found[key] in limit.interval
    if kind == "multiple-of" and key in found:
        value = found[key]
        return value <= limit.rule["when_greater_than"] or value % limit.rule["multiple_of"] == 0
    if kind in ("values", "fixed") and key in found and limit.values is not None:
        return found[key] in limit.values
    if kind == "unsupported" and key in found:
        return not found[key]
    if kind == "product":
        factors = limit.rule["factors"]
        if all(f in found for f in factors):
            return math.prod(found[f] for f in factors) < limit.rule["less_than"]
    if kind == "broadcast" and found.get("form") == limit.rule["from"] and key in found:
        assert limit.interval is not None
        return found[key] in limit.interval
    if kind == "dtype" and limit.subject == "T2" and "exponent_dtype" in found:
        return found["exponent_dtype"] in (limit.values or ())
    return True


# -- proposing variants ---------------------------------------------------------------------

Variant = tuple[str, dict[str, Any]]  # (what is probed, parameter overrides)


def _set(op: str, params: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``params`` with the subject ``key`` set to ``value`` (the inverse of ``subjects``)."""
    p = copy.deepcopy({**DEFAULT_PARAMS[op], **params})
    if op in _RNN and key == "num_directions":
        p["direction"] = "bidirectional" if value == 2 else "forward"
    elif op == "Pow" and key == "values":
        p["exponent"] = value
    elif op == "Pow" and key == "exponent_dtype":
        p["exponent_dtype"] = EXPONENT_DTYPES[value]
    elif key in p and not isinstance(p[key], list):  # a scalar parameter of the same name
        p[key] = value
    elif key in ("kernel_h", "kernel_w"):
        axis = key.endswith("w")
        p["kernel"][axis] = value
        for side in (axis, axis + 2):  # ONNX needs each pad smaller than the kernel
            p["pads"][side] = min(p["pads"][side], value - 1)
        p["shape"][2 + axis] = max(p["shape"][2 + axis], value)
    elif key in ("strides_h", "strides_w"):
        p["strides"][key.endswith("w")] = value
    elif key in _POOL_PADS:
        index = _POOL_PADS.index(key)
        p["pads"][index] = value
        kernel_axis = index % 2
        p["kernel"][kernel_axis] = max(p["kernel"][kernel_axis], value + 1)
    elif key in _NCHW:
        _set_dim(op, p, _NCHW.index(key), value)
    else:
        raise KeyError(f"{op}: no model parameter for subject {key!r}")
    return p


def _set_dim(op: str, p: dict[str, Any], axis: int, value: int) -> None:
    if op in _BINARY:
        p["a_shape"][axis] = value
        if p["b_shape"][axis] != 1:
            p["b_shape"][axis] = value
        return
    p["shape"][axis] = value
    if op == "Pad" and p["mode"] == "reflect":  # reflect pads must be smaller than the dim
        for side in (axis, axis + 4):
            p["pads"][side] = min(p["pads"][side], value - 1)


def _range_probes(limit: Limit) -> list[int]:
    assert limit.interval is not None
    lo, hi = limit.interval.integer_bounds()
    floor = 0 if limit.interval.lo_closed and limit.interval.lo == 0 else 1
    probes = [lo, hi, hi + 1]
    if lo - 1 >= floor:
        probes.append(lo - 1)
    return probes


def _variants(op: Operator, limit: Limit, catalogue: OperatorCatalogue) -> list[Variant] | str:
    """Parameter variants probing ``limit``, or the reason it cannot be probed."""
    name, key = op.name, _key(limit)
    kind = limit.kind
    base: dict[str, Any] = {k: v[0] for k, v in limit.condition.items()}
    try:
        if kind == "range":
            return [(f"{key}={v}", _set(name, base, key, v)) for v in _range_probes(limit)]
        if kind == "multiple-of":
            step, above = limit.rule["multiple_of"], limit.rule["when_greater_than"]
            neighbours = sorted({above, step, 2 * step, step - 1, step + 1})
            return [(f"{key}={v}", _set(name, base, key, v)) for v in neighbours]
        if kind == "values":
            assert limit.values is not None
            values = (*limit.values, *OUTSIDE_VALUES.get((name, key), ()))
            if len(values) == 1 and key in ("auto_pad", "storage_order"):
                return f"the model builder always sets {key}={values[0]}; nothing to vary"
            return [(f"{key}={v}", _set(name, base, key, v)) for v in values]
        if kind == "unsupported" and name in _POOLS:
            return [(f"{key}=1", _set(name, base, key, 1))]
        if kind == "product":
            return _product_variants(name, limit)
        if kind == "broadcast":
            return _broadcast_variants(name, limit)
        if kind == "broadcast-support" and limit.role == "B":
            return _binary_broadcast_variants(name, catalogue)
        if kind == "dtype" and name == "Pow" and limit.subject == "T2":
            assert limit.values is not None
            return [
                (f"exponent_dtype={v}", _set(name, {}, "exponent_dtype", v)) for v in limit.values
            ]
    except KeyError as exc:
        return f"no model parameter expresses it ({exc.args[0]})"
    return _UNPROBED_REASONS.get(kind, f"{kind} limits are not probed by the operator suites")


_UNPROBED_REASONS = {
    "quantization": "the int8 cases use the toolkit's default per-layer quantization; the "
    "scheme itself is not varied",
    "multi-core": "the simulator has no NPU cores to observe",
    "layout": "exGRU/exLSTM layouts are toolkit extensions an ONNX model cannot select",
    "rank": "the Gather model always feeds rank-1 indices",
    "fixed": "ONNX LSTM/GRU models cannot express this extension attribute",
    "dtype": "the data dtype is probed by every case (one per dtype)",
    "broadcast-support": "probed once per operator, through role B",
    "unsupported": "the ONNX operator has no such attribute",
}


def _product_variants(op: str, limit: Limit) -> list[Variant]:
    cap = limit.rule["less_than"]
    side = math.isqrt(cap)  # 16384 = 128 * 128; 127 * 129 = 16383 is the largest inside
    a, b = limit.rule["factors"]
    axis = {k: v[0] for k, v in limit.condition.items()}
    found = []
    for x, y in ((side - 1, side + 1), (side, side)):
        p = _set(op, _set(op, axis, a, x), b, y)
        found.append((f"{a}*{b}={x * y}", p))
    return found


def _broadcast_variants(op: str, limit: Limit) -> list[Variant]:
    source = limit.rule["from"].strip("[]").split(",")
    variants = []
    for value in _range_probes(limit):
        out = [1, 2, 3, 4]  # b, c, h, w; the probed one replaced below
        out["bchw".index(limit.subject)] = value
        shape = [1 if s == "1" else o for s, o in zip(source, out, strict=True)]
        variants.append(
            (
                f"{limit.rule['from']}:{limit.subject}={value}",
                {"input_shape": shape, "output_shape": out},
            )
        )
    return variants


def _binary_broadcast_variants(op: str, catalogue: OperatorCatalogue) -> list[Variant]:
    """Each of Expand's forms, applied to operand B, at a small size and beyond 8192."""
    variants = []
    for form_limit in catalogue.operators["Expand"].limits():
        if form_limit.kind != "broadcast":
            continue
        source = form_limit.rule["from"].strip("[]").split(",")
        for value in (5, _range_probes(form_limit)[2]):
            out = [1, 2, 3, 4]
            out["bchw".index(form_limit.subject)] = value
            b_shape = [1 if s == "1" else o for s, o in zip(source, out, strict=True)]
            what = f"B{form_limit.rule['from']}:{form_limit.subject}={value}"
            variants.append((what, {"a_shape": out, "b_shape": b_shape}))
    return variants


# -- the generator --------------------------------------------------------------------------


def case_seed(case_id: str) -> int:
    """The recorded seed of a case: stable across runs and machines."""
    return int(hashlib.sha256(case_id.encode()).hexdigest()[:8], 16)


def operator_cases(
    catalogue: OperatorCatalogue, ops: Iterable[str] | None = None, max_elements: int = MAX_ELEMENTS
) -> CaseSet:
    """Every case of every operator (or of ``ops``), in catalogue order, ids unique."""
    result = CaseSet()
    by_params: dict[tuple[str, str, str], int] = {}
    wanted = set(ops) if ops is not None else None
    for op in catalogue.operators.values():
        if wanted is not None and op.name not in wanted:
            continue
        proposals: list[tuple[Limit | None, Variant]] = [(None, ("typical", {}))]
        for limit in op.limits():
            found = _variants(op, limit, catalogue)
            if isinstance(found, str):
                result.unprobed.append(Unprobed(limit, found))
            else:
                proposals.extend((limit, variant) for variant in found)
        for probed, (what, params) in proposals:
            if element_count(op.name, params) > max_elements:
                assert probed is not None  # the typical model is always small
                result.unprobed.append(
                    Unprobed(
                        probed,
                        f"{what}: model needs {element_count(op.name, params)} elements, "
                        f"over the budget of {max_elements}",
                    )
                )
                continue
            dtypes = DTYPES if probed is None else op.data_dtypes()
            for dtype in dtypes:
                _add_case(result, by_params, catalogue, op, dtype, probed, what, params)
    return result


def _add_case(
    result: CaseSet,
    by_params: dict[tuple[str, str, str], int],
    catalogue: OperatorCatalogue,
    op: Operator,
    dtype: str,
    limit: Limit | None,
    what: str,
    params: dict[str, Any],
) -> None:
    limit_id = limit.id if limit else f"{op.name}/dtype"
    key = (op.name, dtype, json.dumps(params, sort_keys=True))
    if key in by_params:
        index = by_params[key]
        existing = result.cases[index]
        if limit_id not in existing.limits:
            result.cases[index] = _with_limit(existing, limit_id)
        return
    case_id = f"{catalogue.platform}/{op.name}/{dtype}/{what}"
    limits = governing_limits(catalogue, op)
    broken = documented_status(op, limits, dtype, subjects(op.name, params))
    source_limit = limit or next(lim for lim in op.limits() if lim.kind == "dtype")
    seed_file, _, section = source_limit.source.partition(" § ")
    by_params[key] = len(result.cases)
    result.cases.append(
        Case(
            id=case_id,
            platform=catalogue.platform,
            op=op.name,
            dtype=dtype,
            limit=limit_id,
            value=what,
            documented="outside" if broken else "supported",
            params=params,
            seed=case_seed(case_id),
            source={"seed": seed_file, "section": section, "text": source_limit.text},
            layer_types=LAYER_TYPES.get(op.name, (op.name,)),
            limits=(limit_id,),
            outside_because=broken,
        )
    )


def _with_limit(case: Case, limit_id: str) -> Case:
    return replace(case, limits=(*case.limits, limit_id))
