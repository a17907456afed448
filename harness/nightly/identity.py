"""The one place that says which records of two runs are the same case."""

from __future__ import annotations

from harness.results.records import CaseRecord, record_key


def identity(record: CaseRecord) -> str:
    """The key records are matched by across runs and within a run: the case on its SDK
    (``record_key``), so a run on several SDKs and its baseline match release by release."""
    return record_key(record)
