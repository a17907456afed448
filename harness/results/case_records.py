"""The record of a generated case: what every record copies from its case, in one place for
the suites' pipeline, the host-checked rules and the tests. Apart from ``records`` because the
report, which reads records, must not import the case generator's types."""

from __future__ import annotations

from typing import Any

from harness.cases.case import Case
from harness.results.records import CaseRecord


def case_record(case: Case, *, backend: str, verdict: str, **fields: Any) -> CaseRecord:
    """A record of ``case``: its id, documented status, source, seed and parameters, then
    ``fields`` (a run's own ``source`` or ``params`` replace the case's)."""
    copied: dict[str, Any] = {
        "source": dict(case.source),
        "seed": case.seed,
        "params": dict(case.params),
        "deciding_limit": case.deciding_limit,
        "not_isolable": case.not_isolable,
    }
    return CaseRecord(
        case.id,
        case.platform,
        case.op,
        case.dtype,
        case.limit,
        case.value,
        case.documented,
        backend,
        verdict,
        **{**copied, **fields},
    )
