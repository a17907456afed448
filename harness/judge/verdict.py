"""Verdicts: the documented expectation against what a backend observed (design.md's table).

| documented | observed                                   | verdict         |
|------------|--------------------------------------------|-----------------|
| any        | board, SSH, toolkit or timeout trouble     | infra-error     |
| supported  | rejected at build or failed at run time    | violation       |
| outside    | rejected at build or failed at run time    | limit-confirmed |
| any        | output does not match the reference        | wrong-result    |
| supported  | op under test on CPU                       | violation       |
| outside    | op under test on CPU                       | limit-confirmed |
| supported  | on NPU and correct                         | confirmed       |
| outside    | on NPU and correct                         | doc-drift       |
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.judge.compare import Comparison
from harness.results.records import DOCUMENTED
from harness.targets.observation import Observation

# Layers the toolkit lists for every model, always on the CPU: not a fallback.
IO_LAYERS = frozenset({"InputOperator", "OutputOperator"})


@dataclass(frozen=True)
class Verdict:
    verdict: str
    detail: str
    checks: tuple[
        dict[str, Any], ...
    ] = ()  # per documented property (harness.vendors.rknn.io_checks)


def placement_of(layers: Sequence[dict[str, Any]], op_types: Sequence[str]) -> tuple[str, str]:
    """Where the op under test ran: ("NPU" | "CPU", how that was decided).

    The op counts as on the CPU if any layer of its type is; when the compiler rewrote it into
    other layer types (none of ``op_types`` is left), the whole network is judged instead.
    """
    wanted = {name.lower() for name in op_types}
    compute = [layer for layer in layers if str(layer.get("op", "")) not in IO_LAYERS]
    mine = [layer for layer in compute if str(layer.get("op", "")).lower() in wanted]
    judged = mine or compute
    if not judged:
        return "NPU", "no layer table in the build log; assumed NPU"
    on_cpu = [layer for layer in judged if str(layer.get("target", "")).upper() == "CPU"]
    scope = "/".join(op_types) if mine else "whole network (op rewritten away)"
    if on_cpu:
        names = ", ".join(sorted({str(layer.get("op")) for layer in on_cpu}))
        return "CPU", f"{scope}: {names} on CPU"
    return "NPU", f"{scope}: on NPU"


def decide(
    documented: str,
    observation: Observation,
    comparison: Comparison | None,
    op_types: Sequence[str],
) -> Verdict:
    """Apply the verdict table; ``comparison`` is None when there were no outputs to compare."""
    if documented not in DOCUMENTED:
        raise ValueError(f"documented must be one of {DOCUMENTED}, got {documented!r}")
    supported = documented == "supported"
    if observation.infra_error:
        return Verdict("infra-error", observation.infra_error)
    if observation.failed_stage:
        what = f"{observation.failed_stage} failed: {observation.error or 'no message'}"
        return Verdict("violation" if supported else "limit-confirmed", what)
    if comparison is None:
        return Verdict("infra-error", "the backend returned no outputs and reported no failure")
    if not comparison.passed:
        return Verdict("wrong-result", comparison.detail)
    target, how = placement_of(observation.placement, op_types)
    if target == "CPU":
        return Verdict("violation" if supported else "limit-confirmed", f"CPU fallback: {how}")
    if supported:
        return Verdict("confirmed", f"{how}; {comparison.detail}")
    return Verdict("doc-drift", f"limit not enforced: {how}; {comparison.detail}")
