"""The generator: every case of every operator, each proposed variant checked, repaired and
judged against every limit of its operator."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from harness.cases.case import Case, CaseSet, Untested, model_seed
from harness.cases.controls import TYPICAL, with_controls
from harness.cases.operators.expectations import case_expects
from harness.cases.operators.proposals import RANK, probing_variants
from harness.cases.operators.repairs import exercised, shrunk
from harness.cases.operators.status import (
    CONSTANT_OPERAND,
    DTYPES,
    TYPE,
    decision,
    documented_status,
    governing_limits,
    inconsistencies,
    one_of,
    type_variables,
)
from harness.cases.operators.variant import (
    Variant,
    builds,
    condition_params,
    element_count,
    refusal,
)
from harness.cases.validity import Degenerate
from harness.documented.limits import Limit
from harness.documented.operators import CpuRule, DocumentedOperator, OperatorCatalogue
from harness.models import Declarations
from harness.models.budget import SizeBudget, size_budget


def variant_case(
    models: Declarations,
    catalogue: OperatorCatalogue,
    op: DocumentedOperator,
    limit: Limit,
    dtype: str,
    variant: Variant,
) -> Case:
    """The case the generator makes of ``variant`` probing ``limit`` in ``dtype``: the same
    id, documented status, deciding limit and expectations."""
    result = CaseSet()
    variant = shrunk(models, op, governing_limits(catalogue, op), limit, variant)
    _add_case(models, result, {}, set(), catalogue, op, dtype, limit, variant)
    return result.cases[0]


def operator_cases(
    catalogue: OperatorCatalogue,
    models: Declarations,
    ops: Iterable[str] | None = None,
    max_elements: int | None = None,
) -> CaseSet:
    """Every case of every operator (or of ``ops``) with the models of ``models`` (the run's
    vendor's ``Vendor.declarations``), in catalogue order, ids unique; a model
    over ``max_elements`` (default: the size budget's) is listed as unprobed instead, as are
    the limits of an operator no model is declared for."""
    budget = SizeBudget(max_elements) if max_elements is not None else size_budget()
    result = CaseSet()
    by_params: dict[tuple[str, str, str], int] = {}
    ids: set[str] = set()  # the case ids so far, for _unique_id
    wanted = set(ops) if ops is not None else None
    for op in catalogue.operators.values():
        if wanted is not None and op.name not in wanted:
            continue
        if op.name not in models.probing:
            why = f"no model of {op.name} is declared yet (harness.models)"
            result.unprobed.extend(Untested(limit, why) for limit in op.limits())
            continue
        first = len(result.cases)  # this operator's cases start here
        proposals: list[tuple[Limit | None, Variant]] = [(None, Variant(TYPICAL, {}))]
        adopted = {limit.id for limit in op.adopted}
        governing = governing_limits(catalogue, op)
        for limit in op.limits():
            found = (
                probing_variants(models, op, limit, catalogue)
                if limit.id not in adopted
                else _ADOPTED
            )
            if isinstance(found, str):
                result.unprobed.append(Untested(limit, found))
                continue
            for variant in found:
                # a documented value the model does not build (a mode no ONNX pattern becomes)
                refused = refusal(models, op.name, json.dumps(variant.params, sort_keys=True))
                if refused is not None and limit.kind in ("values", "enum"):
                    why = f"{variant.what}: the model cannot be built ({refused})"
                    result.unprobed.append(Untested(limit, why))
                else:
                    proposals.append((limit, shrunk(models, op, governing, limit, variant)))
        proposals.extend((None, variant) for variant in operand_forms(models, op.name))
        for probed, proposed in proposals:
            what = proposed.what
            over = budget.over_elements("model", element_count(models, op.name, proposed.params))
            if over is not None:
                assert probed is not None  # the typical model is always small
                result.unprobed.append(Untested(probed, f"{what}: {over}"))
                continue
            made = exercised(models, op, governing, probed, proposed)
            if isinstance(made, Degenerate):  # never a case: what it would run is not its rule
                if probed is None:  # the typical model and its operand forms are declared
                    raise ValueError(f"{op.name}: model {what} is {made.reason()}")
                result.unprobed.append(Untested(probed, f"{what}: {made.reason()}"))
                continue
            what, params, bound = made
            dtypes = DTYPES if probed is None else _probed_dtypes(op, probed)
            if not dtypes:
                assert probed is not None
                types = "/".join(str(t) for t in probed.condition.get(TYPE, ()))
                why = f"stated for {types}, whose dtypes are neither int8 nor float16"
                result.unprobed.append(Untested(probed, why))
            for dtype in dtypes:
                variant = Variant(what, params, bound)
                _add_case(models, result, by_params, ids, catalogue, op, dtype, probed, variant)
        result.cases[first:] = with_controls(result.cases[first:])
    return result


def operand_forms(models: Declarations, op: str) -> list[Variant]:
    """The typical model in the forms users' models take that no limit varies, each judged
    against every limit like any case: a binary operator's B as a constant (the toolkit
    rewrites a constant divisor into a Mul), of A's full shape, per channel and of one
    element; an operator with an axis on every other axis of its rank-4 input; the forms the
    model declares (``Parametrization.forms``: Gather's indices fed at run time)."""
    declared, typical = models.probing[op], models.subjects(op, {})
    proposed: dict[str, dict[str, Any]] = {}
    if declared.broadcast is not None and CONSTANT_OPERAND in declared.setters:
        out = [typical[letter] for letter in "bchw"]
        proposed["B=constant"] = models.with_subject(op, {}, CONSTANT_OPERAND, "float")
        for source in (out, [out[0], out[1], 1, 1], [1, 1, 1, 1]):
            form = "[" + ",".join(map(str, source)) + "]"
            proposed[f"B={form}"] = declared.broadcast.params(source, out)
    if isinstance(typical.get("axis"), int) and "axis" not in declared.fixed:
        for axis in range(RANK):
            if axis != typical["axis"]:
                proposed[f"axis={axis}"] = models.with_subject(op, {}, "axis", axis)
    for what, (key, value) in declared.forms.items():
        proposed[what] = models.with_subject(op, {}, key, value)
    return [
        Variant(what, params)
        for what, params in proposed.items()
        if builds(models, op, json.dumps(params, sort_keys=True))
    ]


# A fused entry's bounds are its base entry's: probed there, the entry's cases check the fusion.
_ADOPTED = "stated by the entry this one fuses onto, and probed on that entry's operator"


def _probed_dtypes(op: DocumentedOperator, limit: Limit) -> list[str]:
    """The dtypes a limit is probed in: those the operator documents (all, when it documents
    none), of the limit's type variables when it names some."""
    limits, types = op.limits(), limit.condition.get(TYPE)
    documented = [dtype for dtype in op.data_dtypes() if dtype in DTYPES] or DTYPES
    return [
        dtype
        for dtype in documented
        if types is None or one_of(type_variables(limits, dtype), types)
    ]


def _add_case(
    models: Declarations,
    result: CaseSet,
    by_params: dict[tuple[str, str, str], int],
    ids: set[str],
    catalogue: OperatorCatalogue,
    op: DocumentedOperator,
    dtype: str,
    limit: Limit | None,
    variant: Variant,
) -> None:
    what, params = variant.what, variant.params
    limit_id = limit.id if limit else f"{op.name}/dtype"
    limits = governing_limits(catalogue, op)
    found = models.subjects(op.name, params)
    marked = inconsistencies(limits, found)
    key = (op.name, dtype, json.dumps(params, sort_keys=True))
    if key in by_params:
        index = by_params[key]
        existing = result.cases[index]
        # a form no limit proposes (limit None) adds nothing to a case a limit probes
        if limit is not None and limit_id not in existing.limits:
            result.cases[index] = _with_limit(existing, limit_id, marked, catalogue.cpu_rule)
        return
    case_id = _unique_id(ids, f"{catalogue.platform}/{op.name}/{dtype}/{what}", limit)
    ids.add(case_id)
    broken = documented_status(models, op, limits, dtype, found)
    if limit is None and broken and limit_id not in broken:  # a form outside another limit
        limit_id = broken[0]  # (a constant operand no dtype lists) probes that limit
    deciding, not_isolable = decision(variant.bound or limit_id, broken, limits, found)
    stated = op.limits()
    source_limit = limit or next((lim for lim in stated if lim.kind == "dtype"), None)
    source_limit = source_limit or next(iter(stated), None)
    if source_limit is None:  # an entry that states no limit at all: only its typical cases
        source_limit = Limit(f"{op.name}/dtype", "no-limit", "", catalogue.source.file)
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
            seed=model_seed(op.name, params),
            source={"seed": seed_file, "section": section, "text": source_limit.text},
            layer_types=models.layer_types(op.name),
            limits=(limit_id,),
            outside_because=broken,
            expects=case_expects(
                (limit_id,), broken, dtype, marked, deciding, not_isolable, catalogue.cpu_rule
            ),
            deciding_limit=deciding,
            not_isolable=not_isolable,
        )
    )


def _unique_id(taken: set[str], case_id: str, limit: Limit | None) -> str:
    """``case_id``, or when another model already has it (the same value probed under another
    condition: Transpose's h1=16 for each perm) the id with the condition appended."""
    if case_id not in taken:
        return case_id
    condition = ",".join(f"{k}={v}" for k, v in condition_params(limit).items()) if limit else ""
    candidate = f"{case_id}@{condition}" if condition else case_id
    index = 2
    while candidate in taken:
        candidate, index = f"{case_id}@{condition}#{index}", index + 1
    return candidate


def _with_limit(
    case: Case, limit_id: str, marked: Mapping[str, str], cpu_rule: CpuRule | None
) -> Case:
    limits = (*case.limits, limit_id)
    expects = case_expects(
        limits,
        case.outside_because,
        case.dtype,
        marked,
        case.deciding_limit,
        case.not_isolable,
        cpu_rule,
    )
    return replace(case, limits=limits, expects=expects)
