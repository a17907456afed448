"""Operator constraint suites: every documented limit of the platform's operator tables.

One test per case (``harness.cases.operators``); select with -k, e.g. ``-k "Pow and float16"``, or
with the markers ``supported`` / ``outside``.
"""

import pytest

from harness.plugin import RunPolicy, check_verdict
from harness.results.records import CaseRecord

pytestmark = pytest.mark.hil_suite("operators")


def test_documented_limit(
    hil_record: CaseRecord, hil_policy: RunPolicy, pytestconfig: pytest.Config
) -> None:
    check_verdict(hil_record, pytestconfig.getoption("strict_docs"), hil_policy)
