"""What a case expects: its placement, its precision, the CPU rule and its result."""

from __future__ import annotations

from collections.abc import Mapping

from harness.cases.case import Expect
from harness.documented.operators import CpuRule
from harness.documented.properties import CPU_RULE, PLACEMENT, PRECISION, RESULT


def case_expects(
    limits: tuple[str, ...],
    broken: tuple[str, ...],
    dtype: str,
    marked: Mapping[str, str],
    deciding: str,
    not_isolable: str,
    cpu_rule: CpuRule | None,
) -> tuple[Expect, ...]:
    """Where the op runs (the NPU when documented supported; an outside case names the limit
    deciding it), in the precision asked (int8 cases), that nothing lands on a CPU the
    platform's rule says cannot run it, and that its output is right; each naming the limits
    of ``marked`` (limit id -> why the document contradicts itself) the case probes or
    breaks."""
    why = f"; not isolable: {not_isolable}" if not_isolable else ""
    where = (
        f"CPU fallback or rejected (outside: {', '.join(broken)}; decided by {deciding}{why})"
        if broken
        else "on the NPU (documented supported)"
    )
    inconsistent = tuple(
        f"{i}: {marked[i]}" for i in dict.fromkeys((*limits, *broken)) if i in marked
    )
    expects = [Expect(PLACEMENT, limits, where, not broken, inconsistent)]
    if dtype == "int8":
        asked = "the layers under test run in int8, as the build asks"
        expects.append(Expect(PRECISION, limits, asked, "int8", inconsistent))
    if cpu_rule is not None:
        runs = tuple(op.lower() for op in cpu_rule.operators)
        expects.append(Expect(CPU_RULE, limits, f"{cpu_rule.text} ({cpu_rule.source})", runs))
    result = "the output matches the host reference"
    return (*expects, Expect(RESULT, limits, result, inconsistent=inconsistent))
