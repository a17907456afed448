"""Model I/O suites (seed 003): input width alignment, convolution width limits, output layouts.

One test per case (``harness.vendors.rknn.model_io.cases``) for ``--platform X`` (``all``: every
documented target). Each record lists a check per documented property; properties the target
that ran the case cannot observe are checks with status ``unobserved`` and never make a test
pass or fail.
Select with -k, e.g. ``-k "conv and ConvTranspose"`` or ``-k input``.
"""

import pytest

from harness.plugin import RunPolicy, check_verdict
from harness.results.records import CaseRecord

pytestmark = pytest.mark.hil_suite("model-io")


def test_documented_io(
    hil_record: CaseRecord, hil_policy: RunPolicy, pytestconfig: pytest.Config
) -> None:
    check_verdict(hil_record, pytestconfig.getoption("strict_docs"), hil_policy)
