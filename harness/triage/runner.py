"""Running prepared user models through the suites' executor, into one results directory."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import onnx

from harness.cases.case import Case
from harness.cases.model_check import ModelCheck
from harness.cases.user_models import WHOLE_NETWORK, model_case
from harness.modelfiles.prepare import PreparedModel
from harness.models.builder import OperatorSpec
from harness.pipeline import CaseExecutor, Stages
from harness.results.layer_tables import DOCUMENT_CHECK
from harness.results.records import CaseRecord
from harness.targets.target import Target


class ModelRunner:
    """Runs prepared models as cases of ``platform`` in ``dtype`` with the suites' executor:
    the same records, journal and case folders as the suites write."""

    def __init__(
        self,
        results: Path,
        target: Target,
        platform: str,
        dtype: str,
        stages: Stages,
        sdk: str,
        check: Callable[[onnx.ModelProto], ModelCheck] | None = None,
        cpu_allowed: Mapping[str, str] | None = None,
    ) -> None:
        """``stages`` and ``sdk``: as the suites' executor gets them
        (``harness.vendors.stages.stages_for``); ``check``: a model's layers against the
        platform's document (none: no document judges them); ``cpu_allowed``: the platform's
        CPU layers that are no fallback (``Vendor.cpu_allowed``)."""
        self.results = results
        self.platform = platform
        self.dtype = dtype
        self.check = check
        self.checks: dict[str, ModelCheck] = {}  # record id -> its model's document check
        self.cpu_allowed = dict(cpu_allowed or {})
        # the stages' declarations, and each model's as it is run; the executor reads it
        self._models: dict[str, OperatorSpec] = dict(stages.models)
        # and each model's tolerance, a whole network's (``user_models.WHOLE_NETWORK``)
        self._tolerances = dict(stages.tolerances)
        # every array, uncapped: triage compares observed and reference tensors layer by layer
        stages = replace(
            stages, models=self._models, tolerances=self._tolerances, observed_cap=None
        )
        self.executor = CaseExecutor(results, target, stages, sdk)

    def run(self, prepared: PreparedModel, kind: str = "model") -> CaseRecord:
        check = self.check(prepared.model) if self.check is not None else None
        case, specs = model_case(
            prepared, self.platform, self.dtype, kind, check=check, cpu_allowed=self.cpu_allowed
        )
        self._models.update(specs)
        self._tolerances[case.op] = WHOLE_NETWORK
        record = self.executor.execute(case)
        if check is None:
            return record
        self.checks[record.id] = check
        if record.artifacts:  # refused before it ran: no case folder
            text = json.dumps(check.to_json(), indent=2, ensure_ascii=False) + "\n"
            (self.case_folder(record) / DOCUMENT_CHECK).write_text(text, encoding="utf-8")
        return record

    def refuse(self, case: Case, exc: Exception) -> CaseRecord:
        """The bad-input record of ``case``, whose model ``exc`` says cannot be used."""
        return self.executor.refuse(case, exc)

    def case_folder(self, record: CaseRecord) -> Path:
        return self.results / record.artifacts
