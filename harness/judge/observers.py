"""The observers every target can serve: the result against the host reference, placement,
precision and the platform's rule of what its CPU runs.

Placement and precision are read from ``Observation.placement``, one entry per compiled layer
(its ``"target"`` and ``"dtype"``, e.g. NPU and INT8); layers the vendor marks ``"io": True``
(its input/output operators, listed for every model) never count as a fallback.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from harness.cases.case import Case, Expect
from harness.documented.properties import CPU_RULE, PLACEMENT, PRECISION, RESULT
from harness.judge.checks import (
    INFRA,
    ON_CPU,
    OTHER_PRECISION,
    REFUSED,
    ControlSeen,
    Observer,
    Outcome,
    Rejection,
    Seen,
)
from harness.judge.verdict import (
    PLACEMENT_PHASE,
    RESULT_PHASE,
    REWRITTEN_AWAY,
    UNOBSERVED,
    UNTESTABLE,
)
from harness.targets.observation import Observation


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
    compute = [layer for layer in layers if not layer.get("io")]
    if not op_types:
        return compute, "whole network"
    mine = own_layers(layers, op_types)
    return (mine, "/".join(op_types)) if mine else (compute, "whole network (op rewritten away)")


def own_layers(layers: Sequence[dict[str, Any]], op_types: Sequence[str]) -> list[dict[str, Any]]:
    """The compiled layers (not the vendor's own, ``"io"``) of one of ``op_types``."""
    wanted = {name.lower() for name in op_types}
    return [
        layer
        for layer in layers
        if not layer.get("io") and str(layer.get("op", "")).lower() in wanted
    ]


def placement_of(
    layers: Sequence[dict[str, Any]],
    op_types: Sequence[str],
    cpu_allowed: Sequence[tuple[str, str]] = (),
) -> tuple[str, str]:
    """Where the op under test ran: ("NPU" | "CPU", how that was decided).

    The op counts as on the CPU if any of its layers (``layers_under_test``) is, other than
    a layer of a type ``cpu_allowed`` names (``Case.cpu_allowed``), which the detail names
    with why it is allowed.
    """
    judged, scope = layers_under_test(layers, op_types)
    if not judged:
        return "NPU", "no layer table in the build log; assumed NPU"
    allowed = {layer.lower(): (layer, why) for layer, why in cpu_allowed}
    on_cpu = [layer for layer in judged if str(layer.get("target", "")).upper() == "CPU"]
    faulted = sorted({str(layer.get("op")) for layer in on_cpu} - _types(allowed, on_cpu))
    if faulted:
        return "CPU", f"{scope}: {', '.join(faulted)} on CPU"
    kept = sorted({allowed[str(layer.get("op")).lower()] for layer in on_cpu})
    notes = "".join(f"; {layer} on the CPU, as allowed: {why}" for layer, why in kept)
    return "NPU", f"{scope}: on NPU{notes}"


def _types(allowed: dict[str, tuple[str, str]], layers: Sequence[dict[str, Any]]) -> set[str]:
    """The layer types of ``layers`` that ``allowed`` names, as the layers spell them."""
    return {str(layer.get("op")) for layer in layers if str(layer.get("op")).lower() in allowed}


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
    """On the NPU, on the CPU or rejected, against ``expect.value`` (documented supported),
    and for a case outside a limit against its inside control (``Seen.control``).

    A refusal or CPU fallback is a fallback (``FALLBACK``), which the verdict reads against
    the control (``verdict_of``: like the control's, ``untestable``). An outside case on the
    NPU whose compiled layers hold a layer its control's lack met the limit by a rewrite
    (``limit-rewritten``: split, decomposed, wrapped in Slice or Transpose); with none, it
    ran past the limit unenforced (``doc-drift``; fewer layers than its control, say no
    broadcast to expand, is no rewrite); against a control that did not run as asked, or
    none, it says nothing (``untestable``). A build in which the operator under test left no
    layer of its own ran
    something else (``rewritten-away``, naming what)."""
    supported = bool(expect.value)
    if seen.failure:
        return by_documentation(supported), seen.failure
    case = seen.case
    target, how = placement_of(seen.observation.placement, case.layer_types, case.cpu_allowed)
    if target == "CPU":
        return by_documentation(supported), f"CPU fallback: {how}"
    layers = compiled_layers(seen.observation.placement)
    op_types = seen.case.layer_types
    # an empty layer table reports nothing: no sign of a rewrite
    if op_types and layers and not own_layers(seen.observation.placement, op_types):
        became = " + ".join(layers) or "nothing"
        ran = "/".join(op_types)
        return REWRITTEN_AWAY, f"no {ran} layer was built: the model compiled as {became}"
    if supported:
        return "confirmed", how
    control = seen.control
    if control is None:
        return UNTESTABLE, f"{how}; no inside control to tell a rewrite from an unenforced limit"
    if control.trouble:
        return UNTESTABLE, f"{how}; {control.failed()}"
    added = Counter(layers) - Counter(control.layers)
    if added:
        return "limit-rewritten", (
            f"limit met by a rewrite: compiled as {' + '.join(layers)}, its control "
            f"{control.id} as {' + '.join(control.layers)}{_passes(seen.observation.rewrites)}"
        )
    return "doc-drift", (
        f"limit not enforced: {how}, no layer its control {control.id} lacks ({' + '.join(layers)})"
    )


def _passes(rewrites: Sequence[str]) -> str:
    """The compiler passes the build log names, if any (`` (tiling_global_maxpool)``)."""
    passes = list(dict.fromkeys(line.split(":")[0].strip() for line in rewrites))
    return f" ({', '.join(passes)})" if passes else ""


def compiled_layers(layers: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """The compiled compute layers as "Op" or "Op@CPU", in order; the vendor's input and
    output operators (``"io"``) left out."""
    return tuple(
        str(layer.get("op", "")) + ("@CPU" if str(layer.get("target", "")).upper() == "CPU" else "")
        for layer in layers
        if not layer.get("io")
    )


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
        how = f"{', '.join(cannot)} on the CPU, which {seen.case.platform} cannot run"
        return "unrunnable", how
    return "confirmed", f"{', '.join(sorted(set(on_cpu)))} on the CPU, which it runs"


def precisions_of(
    layers: Sequence[dict[str, Any]], op_types: Sequence[str]
) -> tuple[list[str], str]:
    """The data types the layers under test ran in (upper case, sorted; empty when the layer
    table gives none) and how those layers were chosen (``layers_under_test``)."""
    judged, scope = layers_under_test(layers, op_types)
    return sorted({str(layer.get("dtype", "")).upper() for layer in judged} - {""}), scope


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
    ran, scope = precisions_of(seen.observation.placement, seen.case.layer_types)
    if not ran:
        return UNOBSERVED, f"{scope}: the layer table gives no data type"
    asked = str(expect.value).upper()
    observed = f"{scope}: {', '.join(ran)} ({asked} asked)"
    if ran != [asked]:
        return by_documentation(supported), f"precision fallback: {observed}"
    return "confirmed", observed


def control_seen(case: Case, observation: Observation, rejected: Rejection) -> ControlSeen:
    """What ``case`` showed, as the cases it is the control of read it: whether the operator
    under test ran as asked (built, on the NPU, in the precision asked; built as other layers
    still counts as run, those layers being what a case is compared with) and its compiled
    layers."""
    failure, infra = rejected(observation)
    layers = compiled_layers(observation.placement)
    if infra or failure:
        return ControlSeen(case.id, infra or failure or "", layers, INFRA if infra else REFUSED)
    if PLACEMENT in observation.observes:
        target, how = placement_of(observation.placement, case.layer_types)
        if target == "CPU":
            return ControlSeen(case.id, f"CPU fallback: {how}", layers, ON_CPU)
    if case.dtype == "int8" and PRECISION in observation.observes:
        ran, scope = precisions_of(observation.placement, case.layer_types)
        if ran and ran != ["INT8"]:
            trouble = f"precision fallback: {scope}: {', '.join(ran)} (INT8 asked)"
            return ControlSeen(case.id, trouble, layers, OTHER_PRECISION)
    return ControlSeen(case.id, "", layers)


GENERIC_OBSERVERS = {
    RESULT: Observer(_result, "the target returns no outputs to compare", RESULT_PHASE),
    PLACEMENT: Observer(
        _placement, "the target reports no layer placement", PLACEMENT_PHASE, ON_CPU
    ),
    PRECISION: Observer(
        _precision, "the target reports no per-layer data types", PLACEMENT_PHASE, OTHER_PRECISION
    ),
    CPU_RULE: Observer(_cpu_rule, "the target reports no layer placement", PLACEMENT_PHASE, ON_CPU),
}
