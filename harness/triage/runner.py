"""Running prepared user models through the suites' executor, into one results directory."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness.cases.case import Case
from harness.cases.user_models import model_case
from harness.modelfiles.prepare import PreparedModel
from harness.models.builder import OperatorSpec
from harness.pipeline import CaseExecutor, Stages
from harness.results.records import CaseRecord
from harness.targets.target import Target


class ModelRunner:
    """Runs prepared models as cases of ``platform`` in ``dtype`` with the suites' executor:
    the same records, journal and case folders as the suites write."""

    def __init__(
        self,
        results: Path,
        backend: Target,
        platform: str,
        dtype: str,
        stages: Stages,
        sdk: str,
    ) -> None:
        """``stages`` and ``sdk``: as the suites' executor gets them
        (``harness.vendors.stages.stages_for``)."""
        self.results = results
        self.platform = platform
        self.dtype = dtype
        # the stages' declarations, and each model's as it is run; the executor reads it
        self._models: dict[str, OperatorSpec] = dict(stages.models)
        # every array, uncapped: triage compares observed and reference tensors layer by layer
        stages = replace(stages, models=self._models, observed_cap=None)
        self.executor = CaseExecutor(results, backend, stages, sdk)

    def run(self, prepared: PreparedModel, kind: str = "model") -> CaseRecord:
        case, specs = model_case(prepared, self.platform, self.dtype, kind)
        self._models.update(specs)
        return self.executor.execute(case)

    def refuse(self, case: Case, exc: Exception) -> CaseRecord:
        """The bad-input record of ``case``, whose model ``exc`` says cannot be used."""
        return self.executor.refuse(case, exc)

    def case_folder(self, record: CaseRecord) -> Path:
        return self.results / record.artifacts
