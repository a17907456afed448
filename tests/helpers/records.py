"""Plausible case records for the tests of the journal, the report and the bundles."""

from __future__ import annotations

from typing import Any

from harness.results.records import CaseRecord


def make_record(case_id: str, verdict: str = "confirmed", **fields: Any) -> CaseRecord:
    """A plausible record of a simulator run; ``fields`` override its values."""
    values: dict[str, Any] = {
        "platform": "rk3562",
        "op": "Expand",
        "dtype": "float16",
        "limit": "expand.h",
        "value": "8192",
        "documented": "supported",
        "backend": "simulator",
        "detail": "Expand: on NPU",
        "placement": [{"op": "Expand", "target": "NPU", "name": "Expand:y"}],
        "metrics": {"max_abs": 0.001, "cosine": 0.99999},
        "versions": {"rknn-toolkit2": "2.5.0"},
        "source": {"seed": "rknn_ops.md", "section": "Expand", "text": "h <= 8192"},
    }
    values.update(fields)
    return CaseRecord(id=case_id, verdict=verdict, **values)


HOSTILE_ID = '<script>alert("id")</script>'


def _records() -> list[CaseRecord]:
    pow_layers = [
        {"op": "InputOperator", "target": "CPU", "io": True},
        {"op": "Pow", "target": "CPU"},
        {"op": "OutputOperator", "target": "CPU", "io": True},
    ]
    return [
        make_record("expand-h-8192"),
        make_record("expand-h-8193", "doc-drift", value="8193", documented="outside"),
        make_record("expand-h-8192-int8", "confirmed", dtype="int8"),
        make_record(
            "pow-4",
            "limit-confirmed",
            op="Pow",
            limit="pow.exponent",
            value="4",
            documented="outside",
            placement=pow_layers,
        ),
        make_record("expand-h-8192-board", "violation", backend="rock-5b", detail="CPU fallback"),
        make_record(
            HOSTILE_ID,
            "wrong-result",
            op="<b>Pow|x</b>",
            dtype="int8",
            detail="a | b <img src=x onerror=alert(1)>",
        ),
        make_record("gru-batch-3", "infra-error", op="GRU", limit="gru.batch", value="3"),
        make_record("mp-8", "violation", platform="rk3588", backend="simulator", op="MaxPool"),
    ]
