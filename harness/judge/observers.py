"""The observers every target can serve: the result against the host reference, placement,
precision and the platform's rule of what its CPU runs.

Placement and precision are read from ``Observation.placement``, one entry per compiled layer
(its ``"target"`` and ``"dtype"``, e.g. NPU and INT8); layers the vendor marks ``"io": True``
(its input/output operators, listed for every model) never count as a fallback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.cases.case import Expect
from harness.documented.properties import CPU_RULE, PLACEMENT, PRECISION, RESULT
from harness.judge.checks import Observer, Outcome, Seen
from harness.judge.verdict import PLACEMENT_PHASE, RESULT_PHASE, UNOBSERVED


def by_documentation(supported: bool) -> str:
    """The verdict of a rejection or a CPU fallback: a violation of support, or a limit shown."""
    return "violation" if supported else "limit-confirmed"


def layers_under_test(
    layers: Sequence[dict[str, Any]], op_types: Sequence[str]
) -> tuple[list[dict[str, Any]], str]:
    """The compiled layers of the op under test and how they were chosen.

    When the compiler rewrote the op into other layer types (none of ``op_types`` is left),
    the whole network stands for it; with no ``op_types`` (a whole user model is under test)
    it is the whole network.
    """
    wanted = {name.lower() for name in op_types}
    compute = [layer for layer in layers if not layer.get("io")]
    if not op_types:
        return compute, "whole network"
    mine = [layer for layer in compute if str(layer.get("op", "")).lower() in wanted]
    return (mine, "/".join(op_types)) if mine else (compute, "whole network (op rewritten away)")


def placement_of(layers: Sequence[dict[str, Any]], op_types: Sequence[str]) -> tuple[str, str]:
    """Where the op under test ran: ("NPU" | "CPU", how that was decided).

    The op counts as on the CPU if any of its layers (``layers_under_test``) is.
    """
    judged, scope = layers_under_test(layers, op_types)
    if not judged:
        return "NPU", "no layer table in the build log; assumed NPU"
    on_cpu = [layer for layer in judged if str(layer.get("target", "")).upper() == "CPU"]
    if on_cpu:
        names = ", ".join(sorted({str(layer.get("op")) for layer in on_cpu}))
        return "CPU", f"{scope}: {names} on CPU"
    return "NPU", f"{scope}: on NPU"


def _result(expect: Expect, seen: Seen) -> Outcome:
    """The outputs against the host reference; undecided when the host references disagree
    (``reference-disagreement``: no verdict on the SDK either way)."""
    if seen.failure:
        return by_documentation(seen.case.documented == "supported"), seen.failure
    comparison = seen.comparison
    if comparison is None:
        return "infra-error", "the backend returned no outputs and reported no failure"
    against = f" (against {comparison.reference})" if comparison.reference else ""
    if comparison.disagreeing:
        used, others = comparison.reference, comparison.others
        parts = [
            f"{name} differs from {used}: {others[name].agreement.detail}; "
            f"observed against {name}: {others[name].observed.detail}"
            for name in comparison.disagreeing
        ]
        parts.append(f"observed against {used}: {comparison.detail}")
        return "reference-disagreement", "; ".join(parts)
    status = "confirmed" if comparison.passed else "wrong-result"
    return status, comparison.detail + against


def _placement(expect: Expect, seen: Seen) -> Outcome:
    """On the NPU, on the CPU or rejected, against ``expect.value`` (documented supported).

    An op outside a limit that runs on the NPU as more layers than its model has nodes met
    the limit by a rewrite (split, decomposed, wrapped in Slice or Transpose): the limit holds
    for the layer, so that is ``limit-rewritten``, not doc drift."""
    supported = bool(expect.value)
    if seen.failure:
        return by_documentation(supported), seen.failure
    target, how = placement_of(seen.observation.placement, seen.case.layer_types)
    if target == "CPU":
        return by_documentation(supported), f"CPU fallback: {how}"
    if supported:
        return "confirmed", how
    observation = seen.observation
    rewrite = rewrite_of(
        seen.nodes, observation.placement, observation.rewrites, seen.case.routine_rewrites
    )
    if rewrite:
        return "limit-rewritten", f"limit met by a rewrite: {rewrite}"
    return "doc-drift", f"limit not enforced: {how}"


def rewrite_of(
    nodes: Sequence[str],
    layers: Sequence[dict[str, Any]],
    rewrites: Sequence[str],
    routine: Sequence[str] = (),
) -> str:
    """The compiler's rewrite of a model at an edge: the layers before and after and the
    passes the build log names (``convert_large_dilation_conv_to_normal_conv``); "" unless
    the model compiled to more layers than it has nodes through a pass that is not part of
    the operator's ``routine`` lowering (a layer the compiler adds in front of every model,
    with no pass named, is no rewrite)."""
    compute = [str(layer.get("op", "")) for layer in layers if not layer.get("io")]
    passes = list(dict.fromkeys(line.split(":")[0].strip() for line in rewrites))
    if not nodes or len(compute) <= len(nodes) or not set(passes) - set(routine):
        return ""
    return f"model {' + '.join(nodes)} compiled as {' + '.join(compute)} ({', '.join(passes)})"


def _cpu_rule(expect: Expect, seen: Seen) -> Outcome:
    """Every layer on the CPU among the operators the platform's CPU runs (``expect.value``,
    lower-case; empty: the platform runs none); ``expect.documented`` is the rule's text."""
    if seen.failure:
        return "confirmed", "no layer ran (the model was rejected)"
    on_cpu = [
        str(layer.get("op", ""))
        for layer in seen.observation.placement
        if not layer.get("io") and str(layer.get("target", "")).upper() == "CPU"
    ]
    if not on_cpu:
        return "confirmed", "no layer on the CPU"
    cannot = sorted({op for op in on_cpu if op.lower() not in expect.value})
    if cannot:
        where = seen.case.platform
        return "unrunnable", f"{', '.join(cannot)} on the CPU, which {where} cannot run"
    return "confirmed", f"{', '.join(sorted(set(on_cpu)))} on the CPU, which it runs"


def _precision(expect: Expect, seen: Seen) -> Outcome:
    """The precision the layers under test ran in, against the one asked (``expect.value``).

    Another precision (an int8 build running a layer in FLOAT16) is a precision fallback:
    the asked path was never exercised, judged like a CPU fallback. The precision asked is
    ``confirmed`` whatever the case's documented status: whether an outside case's limit went
    unenforced is the placement check's to say.
    """
    supported = seen.case.documented == "supported"
    if seen.failure:
        return by_documentation(supported), seen.failure
    judged, scope = layers_under_test(seen.observation.placement, seen.case.layer_types)
    ran = sorted({str(layer.get("dtype", "")).upper() for layer in judged} - {""})
    if not ran:
        return UNOBSERVED, f"{scope}: the layer table gives no data type"
    asked = str(expect.value).upper()
    observed = f"{scope}: {', '.join(ran)} ({asked} asked)"
    if ran != [asked]:
        return by_documentation(supported), f"precision fallback: {observed}"
    return "confirmed", observed


GENERIC_OBSERVERS = {
    RESULT: Observer(_result, "the target returns no outputs to compare", RESULT_PHASE),
    PLACEMENT: Observer(_placement, "the target reports no layer placement", PLACEMENT_PHASE),
    PRECISION: Observer(_precision, "the target reports no per-layer data types", PLACEMENT_PHASE),
    CPU_RULE: Observer(_cpu_rule, "the target reports no layer placement", PLACEMENT_PHASE),
}
