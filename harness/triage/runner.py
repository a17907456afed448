"""Running prepared user models through the suites' executor, into one results directory."""

from __future__ import annotations

from pathlib import Path

from harness.cases.case import Case
from harness.cases.user_models import model_case
from harness.judge.checks import Judge
from harness.modelfiles.prepare import PreparedModel
from harness.models.builder import OperatorSpec
from harness.pipeline import GENERIC_JUDGE, CaseExecutor, Recipe
from harness.results.records import CaseRecord
from harness.targets.target import Target
from harness.targets.timing import JobTiming


class ModelRunner:
    """Runs prepared models as cases of ``platform`` in ``dtype`` with the suites' executor:
    the same records, journal and case folders as the suites write."""

    def __init__(
        self,
        results: Path,
        backend: Target,
        platform: str,
        dtype: str,
        judge: Judge = GENERIC_JUDGE,
        recipe: Recipe = lambda job: {},
        perf: JobTiming | None = None,
    ) -> None:
        self.results = results
        self.platform = platform
        self.dtype = dtype
        self._models: dict[str, OperatorSpec] = {}  # filled per case; the executor reads it
        # every array, uncapped: triage compares observed and reference tensors layer by layer
        self.executor = CaseExecutor(
            results,
            backend,
            models=self._models,
            judge=judge,
            recipe=recipe,
            perf=perf,
            observed_cap=None,
        )

    def run(self, prepared: PreparedModel, kind: str = "model") -> CaseRecord:
        case, specs = model_case(prepared, self.platform, self.dtype, kind)
        self._models.update(specs)
        return self.executor.execute(case)

    def refuse(self, case: Case, exc: Exception) -> CaseRecord:
        """The bad-input record of ``case``, whose model ``exc`` says cannot be used."""
        return self.executor.refuse(case, exc)

    def case_folder(self, record: CaseRecord) -> Path:
        return self.results / record.artifacts
