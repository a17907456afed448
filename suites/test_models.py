"""A folder of ONNX models as a suite: ``pytest suites/test_models.py --models DIR``.

One test per model (``harness.cases.model_dir``): ``.onnx`` files and ONNX backend node tests
(``model.onnx`` + ``test_data_set_0``). ``--models-select`` picks by name (shell globs, comma
separated) or ``catalogue`` (the models made only of the catalogue's operators), e.g.
``--models "$(python -c 'import onnx.backend.test, os; print(os.path.dirname(
onnx.backend.test.__file__))')/data/node" --models-select catalogue``.
"""

import pytest

from harness.plugin import RunPolicy, check_verdict
from harness.results.records import CaseRecord

pytestmark = pytest.mark.hil_suite("models")


def test_model(hil_record: CaseRecord, hil_policy: RunPolicy, pytestconfig: pytest.Config) -> None:
    check_verdict(hil_record, pytestconfig.getoption("strict_docs"), hil_policy)
