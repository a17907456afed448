"""A prepared user model as a case: the ``Case`` and the model declaration it names.

A user model runs through the same executor as the generated cases: the case's ``op`` names
a declaration (``OperatorSpec``) whose builder hands the prepared model over whole
(``Graph.model``) with inputs drawn from the case's seed (or the given ones). What the harness
changed to run it is part of the case's parameters, so it is in the journal.

A user model is judged by its layers' documented status (``harness.cases.model_check``, when
the run checked it against its platform's document): "supported" when no layer is outside a
documented limit, expecting every layer on the NPU (whole network: any CPU layer is a CPU
fallback, a violation, unless it is one the toolkit keeps on the CPU by design and the
platform's document lets its CPU run: ``cpu_allowed``) and every output matching the host
references; "outside" when one is, its first such limit deciding and its line the case's
documented text: a CPU fallback or a refusal is then what the document expects
(``limit-confirmed``), a model on the NPU says nothing of the limit without an inside control
(``untestable``), and a wrong result stays one, its bundle saying which limit the document
puts the layer outside of. Without a check (no document for the platform) it is judged as
"supported".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from harness.cases.case import Case, Expect, case_seed
from harness.cases.model_check import ModelCheck
from harness.documented.properties import PLACEMENT, RESULT
from harness.modelfiles.prepare import PreparedModel
from harness.models.builder import Graph, OperatorSpec, Params

LIMIT = "model"  # the limit column of a user model's record
UNDOCUMENTED = (
    "No vendor document covers a user's model: it is expected to run with every layer on the "
    "NPU and every output matching the host references."
)
DTYPES = ("float16", "int8")
# A whole network's tolerance (dtype -> the fields it overrides; ``judge.compare``): an
# operator's bound on one element leaves room for a few roundings, a network's output carries
# every layer's (MobileNetV2's 52 on the simulator: fp16 off by 0.015 where its outputs span
# 5, int8 by a tenth of the span). An element is wrong past 2 (fp16) or 32 (int8)
# quantization steps of the output's span; the whole agrees by cosine, as the toolkit's
# accuracy analysis judges a model.
WHOLE_NETWORK = {"float16": {"atol_steps": 2.0}, "int8": {"atol_steps": 32.0}}
EXPECTS = (
    Expect(PLACEMENT, (), "every layer runs on the NPU", True),
    Expect(RESULT, (), "every output matches the host reference"),
)


def model_case(
    prepared: PreparedModel,
    platform: str,
    dtype: str,
    kind: str = "model",
    seed: int | None = None,
    layer_types: tuple[str, ...] = (),
    check: ModelCheck | None = None,
    cpu_allowed: Mapping[str, str] | None = None,
) -> tuple[Case, dict[str, OperatorSpec]]:
    """The case of ``prepared`` on ``platform`` in ``dtype``, and the declaration it names.

    ``kind`` is the id's middle part ("model", "reduce", "layers"...); the seed defaults to the
    id's recorded seed. ``layer_types`` narrows placement and precision to those compiled
    layers (a single-operator model of the catalogue); by default the whole network counts.
    ``check``: its layers against the platform's document, which decides its documented status;
    ``cpu_allowed``: the CPU layers that are no fallback (``Vendor.cpu_allowed``).
    """
    case = _case(prepared.name, prepared.source, platform, dtype, kind, seed, layer_types)
    case = replace(case, cpu_allowed=tuple(sorted((cpu_allowed or {}).items())))
    if check is not None:
        case = documented_by(case, check)
    return case, {case.op: model_spec(prepared)}


def documented_by(case: Case, check: ModelCheck) -> Case:
    """``case`` as the document judges its layers: "outside" with the first limit a layer
    crosses (its id deciding, its line the documented text), else "supported" per layer."""
    source = {**case.source, "seed": check.seed}
    found = check.first_outside()
    if found is None:
        return replace(case, source={**source, "text": check.summary()})
    _, line = found
    return replace(
        case,
        documented="outside",
        deciding_limit=line.id,
        outside_because=(line.id,),
        source={**source, "section": line.where, "text": line.text},
        expects=tuple(_outside(expect, line.id) for expect in case.expects),
    )


def _outside(expect: Expect, limit: str) -> Expect:
    """An expectation of a model with a layer outside ``limit``: its placement is no longer
    "every layer on the NPU" (a CPU fallback or a refusal is what the document expects)."""
    if expect.prop != PLACEMENT:
        return replace(expect, limits=(limit,))
    said = f"outside {limit}: a CPU fallback or a refusal is what the document expects"
    return replace(expect, limits=(limit,), documented=said, value=False)


def refused_case(name: str, model: str, platform: str, dtype: str, kind: str = "model") -> Case:
    """The case a user's model file ``model`` would have been, had it been usable: what its
    bad-input record is about."""
    return _case(name, {"model": model}, platform, dtype, kind)


def _case(
    name: str,
    source: dict[str, str],
    platform: str,
    dtype: str,
    kind: str,
    seed: int | None = None,
    layer_types: tuple[str, ...] = (),
) -> Case:
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    case_id = f"{platform}/{kind}/{name}/{dtype}"
    return Case(
        id=case_id,
        platform=platform,
        op=f"{kind}:{name}",
        dtype=dtype,
        limit=LIMIT,
        value=name,
        documented="supported",
        params={},
        seed=case_seed(case_id) if seed is None else seed,
        source={
            "seed": "user model",
            "section": Path(source.get("model", name)).name,
            "text": UNDOCUMENTED,
            **source,
            "kind": kind,
        },
        layer_types=layer_types,
        expects=EXPECTS,
        from_user=True,
    )


def model_spec(prepared: PreparedModel) -> OperatorSpec:
    """The declaration whose builder hands ``prepared`` over; its parameters record what it is
    and what was changed."""
    defaults: dict[str, Any] = {
        "inputs": {
            name: {"shape": shape, "dtype": str(dtype), "given": name in prepared.given}
            for name, shape, dtype in zip(
                prepared.input_names, prepared.input_shapes, prepared.input_types, strict=True
            )
        },
        "outputs": list(prepared.output_names),
        "ranges": {name: list(bounds) for name, bounds in prepared.ranges.items()},
        "nodes": len(prepared.model.graph.node),
        "changes": list(prepared.changes),
    }
    if prepared.build_config:  # the record keeps the user's own build settings
        defaults["build_config"] = dict(prepared.build_config)

    def build(params: Params, rng: np.random.Generator) -> Graph:
        for name in defaults:
            params.set(name, params.raw(name))
        inputs = prepared.draw(rng)
        return Graph(
            nodes=[],
            inputs=dict(zip(prepared.input_names, inputs, strict=True)),
            outputs=list(prepared.output_names),
            model=prepared.model,
            calibration=prepared.calibration,
            expected=prepared.expected,
            build_config=dict(prepared.build_config),
        )

    return OperatorSpec(defaults=defaults, build=build)
