"""Running one case end to end: model, reference, target, comparison, verdict, journal.

Data flows one way: a ``Case`` becomes a ``BuiltModel`` and reference outputs, the target
turns the job into an ``Observation``, the judge checks the case's expectations against
it, and the verdict plus everything needed to reproduce the case are written to the results
directory (layout in ``harness.results.journal``).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform as host_platform
import shutil
import time
import warnings
from collections import deque
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from harness import __version__
from harness.cases.case import Case
from harness.cases.controls import control_case
from harness.judge.checks import ControlSeen, Judge
from harness.judge.compare import Compare, Comparison, compare_references, tolerance_for
from harness.judge.observers import GENERIC_OBSERVERS, control_seen
from harness.judge.verdict import BAD_INPUT
from harness.modelfiles.prepare import ModelFileError, array_file
from harness.models import OPERATOR_SPECS, BuiltModel, build_model, draw_inputs
from harness.models.bounded_reference import references_within
from harness.models.budget import ELEMENTS_ENV
from harness.models.builder import OperatorSpec
from harness.models.reference import (
    HOST_REFERENCES,
    NoReferenceError,
    References,
    host_references,
)
from harness.results.case_records import case_record
from harness.results.journal import Journal
from harness.results.records import BOARD_LOG, CaseRecord, case_folder
from harness.results.same_files import SameFiles
from harness.targets.job import DrawnCalibration, Job
from harness.targets.observation import Observation
from harness.targets.target import PrefetchingTarget, Target, observe
from harness.targets.timing import JobTiming, TimingError, timing_record
from harness.text import redact

# int8 builds calibrate on the case's own inputs plus this many further seeded samples, so the
# quantization range covers the data that is compared.
CALIBRATION_EXTRA_SAMPLES = 3
# Bytes of observed outputs a case folder keeps as arrays; above it, observed-summary.json
# (each output's statistics and first differing elements) stands for them.
OBSERVED_CAP = 1 << 20
OBSERVED_SUMMARY = "observed-summary.json"
FIRST_DIFFERING = 16  # elements observed-summary.json lists per output
# Judges the properties every target can serve; a vendor's judge adds its own observers.
GENERIC_JUDGE = Judge(GENERIC_OBSERVERS)
# The files that reproduce a job with a vendor's own tools (name -> content), written into the
# case folder.
Recipe = Callable[[Job], Mapping[str, bytes]]


def host_versions() -> dict[str, str]:
    """Versions on the host side that shape every result."""
    versions = {"npu_hil": __version__, "python": host_platform.python_version()}
    for dist in ("numpy", "onnx", "onnxruntime"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    return versions


def calibration_dataset(
    case: Case, built: BuiltModel, specs: Mapping[str, OperatorSpec]
) -> Sequence[Sequence[np.ndarray]]:
    if built.calibration is not None:  # the model's source gives its own set
        return built.calibration
    return DrawnCalibration(
        built.inputs,
        lambda seed: draw_inputs(case.op, case.params, seed, specs),
        [case.seed + k for k in range(1, CALIBRATION_EXTRA_SAMPLES + 1)],
        {"drawn_like_inputs": case.op, "params": dict(case.params)},
    )


def job_for(
    case: Case, built: BuiltModel, specs: Mapping[str, OperatorSpec] = OPERATOR_SPECS
) -> Job:
    quantize = case.dtype == "int8"
    return Job(
        model=built.onnx_bytes,
        inputs=built.inputs if built.feeds is None else built.feeds,
        target_platform=case.platform,
        quantize=quantize,
        dataset=calibration_dataset(case, built, specs) if quantize else None,
        config=dict(built.build_config),
        case_id=case.id,
        inputs_digest=built.inputs_digest if built.feeds is None else None,
    )


def _no_recipe(job: Job) -> Mapping[str, bytes]:
    return {}


def _no_document(case: Case, sdk: str) -> dict[str, str]:
    return {}


def _unmarked(record: CaseRecord) -> CaseRecord:
    return record


def _no_timeout(case: Case) -> float | None:
    return None


@dataclass(frozen=True)
class Stages:
    """What an executor does with a case around running it on its target, one field per stage.

    Every entry point (the plugin, ``hil probe``, ``hil run``, ``hil reduce``, the benchmarks)
    builds its stages with ``harness.vendors.stages.stages_for``, so each writes the same
    record fields; the defaults are a vendor-less harness (the tests' own targets).

    ``models`` are the model declarations cases name in ``Case.op``; ``tolerances`` the
    catalogue's per-operator overrides (op -> dtype -> fields); ``judge`` holds the observers
    of every property the cases expect (``Vendor.judge``: the generic ones plus the vendor's);
    ``recipe`` gives the files that reproduce a job with the vendor's tools; ``judged_against``
    the record ``source`` fields naming the document a case's SDK is judged against;
    ``annotate`` marks a record before it is journaled (the known issues, say);
    ``timeout_for`` a case's own time limit (the slow tier's), None: the target's;
    ``perf`` asks the target to time every case too (``--perf``); ``references`` computes a
    model's host references (``ReferenceCache.references`` keeps them on disk), a user's model's
    in a child process stopped after ``reference_deadline_s`` (``--hil-timeout``; None: here,
    unbounded),
    ``comparisons`` compares observed outputs with them (``ComparisonCache.compare_references``
    likewise). The arrays policy: a case folder keeps its observed outputs unless its verdict
    is in ``drop_arrays_for`` (``verdict.ARRAYS_DROPPED_FOR``, the plugin's
    ``--keep-arrays``), up to ``observed_cap`` bytes (above it ``observed-summary.json``:
    statistics and the first differing elements; None: every array, inputs and references
    too).
    """

    models: Mapping[str, OperatorSpec] = field(default_factory=lambda: OPERATOR_SPECS)
    tolerances: Mapping[str, Mapping[str, Mapping[str, float]]] = field(default_factory=dict)
    judge: Judge = GENERIC_JUDGE
    recipe: Recipe = _no_recipe
    judged_against: Callable[[Case, str], dict[str, str]] = _no_document
    annotate: Callable[[CaseRecord], CaseRecord] = _unmarked
    timeout_for: Callable[[Case], float | None] = _no_timeout
    perf: JobTiming | None = None
    references: Callable[[BuiltModel], References] = host_references
    reference_deadline_s: float | None = None
    comparisons: Compare = compare_references
    drop_arrays_for: Collection[str] = ()
    observed_cap: int | None = OBSERVED_CAP
    vendor: str = ""  # the vendor's name, which every record carries ("": unknown)


class CaseExecutor:
    """Executes cases on one target with its ``stages`` and journals each record the moment
    it has a verdict; ``sdk`` is the vendor SDK release the target runs, which every record
    carries (part of its identity).

    A case folder gets the model and recipe when the case is prepared, the build log when it
    is judged, and its observed outputs once the verdict is known, as the stages' arrays policy
    says. Inputs, references and calibration data are drawn again from the record's recipe
    when a bundle needs them (``regenerate_arrays``); a user's case, or ``observed_cap`` None,
    keeps every array as it was. A full matrix's arrays are tens of gigabytes, mostly of cases
    with nothing to hand to the vendor.
    """

    def __init__(
        self, results_dir: Path, target: Target, stages: Stages | None = None, sdk: str = ""
    ) -> None:
        self.results_dir = results_dir
        self.target = target
        self.stages = stages or Stages()
        self.journal = Journal(results_dir)
        self.versions = host_versions()
        self.sdk = sdk
        self.same_files = SameFiles()  # recipe files the same in many case folders, kept once
        self._prepared: dict[str, _Prepared] = {}  # by prefetch, for a later execute_many
        # what each case run so far showed, for the cases it is the control of (by case id)
        self._controls: dict[str, ControlSeen] = {}

    def execute(self, case: Case) -> CaseRecord:
        [record] = self.execute_many([case])
        return record

    def execute_many(self, cases: Sequence[Case]) -> Iterator[CaseRecord]:
        """Run ``cases`` as one batch on the target; yield each journaled record, in order,
        as soon as its observation arrives (a streaming target runs the rest meanwhile).

        Cases are prepared (model, references, case folder) as the target takes them, so a
        target that pulls its jobs one by one (the simulator) runs a case while the next is
        prepared. A user's case whose preparation raised yields its refusal (``refuse``) at
        its turn; any other case's raises at its turn, which ends the stream (the cases after
        it were not run). A case whose folder cannot be written (OSError: a full disk, say)
        yields its infra-error record (``refuse``), whoever made the case. Warnings raised
        while a case is prepared, run or judged go into its record.
        """
        # in case order: each prepared case, or a case whose preparation raised (refused)
        queued: deque[_Prepared | tuple[Case, Exception]] = deque()
        pending: set[str] = set()  # the ids of the cases (and controls) queued so far
        failed: list[Exception] = []
        preparing = [0.0]  # seconds spent preparing since the last arrival

        def jobs() -> Iterator[Job]:
            for case in cases:
                control = self._control_to_run(case, pending)
                if control is not None:
                    pending.add(control.case.id)
                    queued.append(control)
                    yield control.job
                pending.add(case.id)
                clock = time.monotonic()
                try:
                    item = self._prepared.pop(case.id, None) or self._prepare(case)
                except Exception as exc:
                    if not case.from_user and not isinstance(exc, OSError):
                        failed.append(exc)
                        return
                    queued.append((case, exc))
                    continue
                finally:
                    preparing[0] += time.monotonic() - clock
                queued.append(item)
                yield item.job

        def refused() -> Iterator[CaseRecord]:
            """The refusals queued before the next prepared case."""
            while queued and isinstance(head := queued[0], tuple):
                queued.popleft()
                yield self.refuse(*head)

        observations = observe(self.target, jobs())
        waited_since = time.monotonic()  # the target works for a case from here to its arrival
        try:
            while True:
                with caught_warnings() as while_running:
                    observation = next(observations, None)
                yield from refused()
                if observation is None:
                    break
                item = queued.popleft()
                assert isinstance(item, _Prepared)  # refusals were yielded before it
                if item.control_only:
                    self._remember(item.case, observation)
                    continue
                item.warnings += while_running
                arrived = time.monotonic()
                item.target_s = max(0.0, arrived - waited_since - preparing[0])
                waited_since, preparing[0] = arrived, 0.0
                try:
                    record = self._finish(item, observation)
                except Exception as exc:
                    if not item.case.from_user:
                        raise
                    record = self._not_judged(item, exc, observation)
                yield record
        finally:
            observations.close()
            self.journal.sync()  # the batch's records, appended without syncing each
        if failed:
            raise failed[0]

    def _control_to_run(self, case: Case, pending: Collection[str]) -> _Prepared | None:
        """The control of ``case`` prepared to run first, when no case run or queued so far
        is that control (a selection that left it out, a shard that holds it elsewhere);
        None when it is not needed or cannot be prepared (the case is then judged without
        it, which its verdict says)."""
        control = case.control
        if control is None or control.id in self._controls or control.id in pending:
            return None
        try:
            return self._prepare(control_case(case), control_only=True)
        except Exception:
            return None

    def _remember(self, case: Case, observation: Observation) -> None:
        """Keep what ``case`` showed for the cases it is the control of."""
        self._controls[case.id] = control_seen(case, observation, self.stages.judge.rejected)

    def prefetch(self, cases: Sequence[Case]) -> None:
        """Prepare ``cases`` (the next batch) now and let a target that can start on them
        (a board converts their models) do so while it runs the current batch."""
        if not isinstance(self.target, PrefetchingTarget):
            return
        for case in cases:
            if case.id not in self._prepared:
                try:
                    self._prepared[case.id] = self._prepare(case)
                except Exception:  # it raises again at its turn in execute_many
                    continue
        ready = [self._prepared[case.id] for case in cases if case.id in self._prepared]
        self.target.prefetch([item.job for item in ready])

    def _prepare(self, case: Case, control_only: bool = False) -> _Prepared:
        """``case`` ready for the target, its case folder emptied and written; a
        ``control_only`` one (another case's control, only its observation read) writes no
        folder: the case itself may be another xdist worker's, running into that folder."""
        stages = self.stages
        started = datetime.now(timezone.utc)
        clock = time.monotonic()
        with caught_warnings() as found:
            built = build_model(case.op, case.params, case.seed, stages.models)
            references = self._references(case, built)
            job = job_for(case, built, stages.models)
            job.timeout_s = stages.timeout_for(case)
            job.perf = stages.perf
            folder = self.results_dir / case_folder(case.id, self.sdk)
            recipe = stages.recipe(job)
            arrays = [name for name in recipe if name.endswith(".npy")]
            if not control_only:
                _clear(folder)
                files = {n: recipe[n] for n in recipe if n not in arrays}
                _write_files(folder, built, files, self.same_files)
        prepare_s = time.monotonic() - clock
        return _Prepared(
            case,
            built,
            references,
            job,
            folder,
            recipe,
            arrays,
            started,
            prepare_s,
            found,
            control_only=control_only,
        )

    def _references(self, case: Case, built: BuiltModel) -> References:
        """The host references of ``case``'s model: a user's within the stages' deadline, in
        a child process (``bounded_reference``), the harness's own here."""
        deadline = self.stages.reference_deadline_s
        if not case.from_user or deadline is None:
            return self.stages.references(built)
        model = case.source.get("model", case.id)
        return references_within(self.stages.references, built, deadline, model)

    def _finish(self, item: _Prepared, observation: Observation) -> CaseRecord:
        with caught_warnings() as found:
            record = self._judged(item, observation)
        record = replace(record, warnings=list(dict.fromkeys([*item.warnings, *found])))
        return self._journaled(record)

    def _judged(self, item: _Prepared, observation: Observation) -> CaseRecord:
        clock = time.monotonic()
        case, built, references, folder = item.case, item.built, item.references, item.folder
        (folder / "build.log").write_text(redact(observation.log))
        if observation.board_log:
            (folder / BOARD_LOG).write_text(redact(observation.board_log))
        stages = self.stages
        tolerance = tolerance_for(case.dtype, stages.tolerances.get(case.op, {}).get(case.dtype))
        comparison: Comparison | None = None
        if observation.outputs is not None and not observation.infra_error:
            digests = dict(references.digests)
            if observation.outputs_digest is not None:
                digests["observed"] = observation.outputs_digest
            comparison = stages.comparisons(
                observation.outputs,
                references.outputs,
                references.used,
                tolerance,
                input_span(item.job, built.inputs),
                digests,
            )
        try:
            perf = _perf_field(item.job, observation)
        except TimingError as exc:  # the outputs may be fine; the run is not usable as timed
            perf = {"unavailable": f"{observation.backend}'s timing is not usable: {exc}"}
            observation = replace(observation, infra_error=perf["unavailable"])
        control = self._controls.get(case.control.id) if case.control else None
        verdict = stages.judge(case, observation, comparison, control)
        self._remember(case, observation)
        if verdict.verdict not in stages.drop_arrays_for:
            cap = None if case.from_user else stages.observed_cap
            _write_arrays(item, observation, cap, tolerance)
        return self._record(
            case,
            observation.backend,
            verdict.verdict,
            detail=verdict.detail + _decided_by(case),
            placement=observation.placement,
            rewrites=observation.rewrites,
            native=observation.tensors,
            metrics=comparison.metrics if comparison else {},
            tolerance=tolerance,
            versions={**self.versions, **observation.versions},
            artifacts=folder.relative_to(self.results_dir).as_posix(),
            started=item.started.isoformat(timespec="seconds"),
            duration_s=round(item.prepare_s + item.target_s + time.monotonic() - clock, 3),
            params=built.params,
            checks=list(verdict.checks),
            reference=_reference_field(references, comparison),
            perf=perf,
        )

    def _journaled(self, record: CaseRecord, sync: bool = False) -> CaseRecord:
        # Appended unsynced: execute_many syncs its batch's records once (``Journal.append``).
        # What leaves here (journal, pytest messages, JUnit properties) is the journal's
        # redacted record: it carries no secret.
        return self.journal.append(self.stages.annotate(record), sync=sync)

    def refuse(self, case: Case, exc: Exception) -> CaseRecord:
        """The journaled record of a case whose model, inputs or references could not be
        prepared (a user's case): bad input, or infrastructure when the case folder could not
        be written (any case)."""
        if isinstance(exc, ModelFileError):  # it names the file, input or option
            verdict, detail = BAD_INPUT, str(exc)
        elif isinstance(exc, OSError):
            verdict, detail = "infra-error", f"writing the case folder: {exc}"
        elif isinstance(exc, MemoryError):
            verdict = BAD_INPUT
            detail = f"the host ran out of memory preparing the model (size budget: {ELEMENTS_ENV})"
        elif isinstance(exc, NoReferenceError):
            verdict, detail = BAD_INPUT, str(exc)
        else:
            verdict, detail = BAD_INPUT, f"the model cannot be prepared: {_described(exc)}"
        with contextlib.suppress(OSError):  # what an earlier run left would pass for this one's
            _clear(self.results_dir / case_folder(case.id, self.sdk))
        # synced at once: it may be journaled outside a batch (``hil run``'s refused models)
        return self._journaled(self._bare_record(case, verdict, detail, "host"), sync=True)

    def _not_judged(self, item: _Prepared, exc: Exception, observation: Observation) -> CaseRecord:
        """The record of a user's case that ran but whose outputs the harness could not judge;
        its folder gets the arrays, to see what could not be judged, where it can be written."""
        with contextlib.suppress(OSError):
            _write_arrays(item, observation, None, {})
        detail = f"the harness could not judge the outputs: {_described(exc)}"
        record = self._bare_record(item.case, "infra-error", detail, "host")
        record.artifacts = item.folder.relative_to(self.results_dir).as_posix()
        return self._journaled(record)

    def _record(self, case: Case, backend: str, verdict: str, **fields: Any) -> CaseRecord:
        """A record of ``case`` in this run; its source names the document this run's SDK is
        judged against (``Vendor.judged_against``)."""
        source = {**case.source, **self.stages.judged_against(case, self.sdk)}
        return case_record(
            case,
            backend=backend,
            verdict=verdict,
            source=source,
            sdk=self.sdk,
            vendor=self.stages.vendor,
            **fields,
        )

    def _bare_record(self, case: Case, verdict: str, detail: str, backend: str) -> CaseRecord:
        return self._record(
            case,
            backend,
            verdict,
            detail=detail,
            versions=dict(self.versions),
            started=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )


@dataclass
class _Prepared:
    """A case ready for the target: its model, references, job and emptied case folder."""

    case: Case
    built: BuiltModel
    references: References
    job: Job
    folder: Path
    recipe: Mapping[str, bytes]  # its files (a vendor's may make each when it is read)
    recipe_arrays: list[str]  # the names of its .npy files (calibration), written with arrays
    started: datetime
    prepare_s: float  # building the model and references, writing the model and recipe
    warnings: list[str] = field(default_factory=list)  # raised for this case so far
    target_s: float = 0.0  # from when the target could start on it to its observation
    control_only: bool = False  # run only as another case's control: not judged or journaled


@contextmanager
def caught_warnings() -> Iterator[list[str]]:
    """The warnings raised inside the block, as "Category: message", kept from pytest, which
    would attribute them to whichever test started the case's batch."""
    found: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        yield found
    found += [f"{w.category.__name__}: {w.message}" for w in caught]


def _reference_field(references: References, comparison: Comparison | None) -> dict[str, Any]:
    """``CaseRecord.reference``: which host reference decided and how each one compared."""
    field: dict[str, Any] = {
        "used": references.used,
        "metrics": {},
        "agreement": {},
        "unavailable": references.unavailable,
    }
    if comparison is not None:
        field["metrics"][references.used] = comparison.metrics
        for name, other in comparison.others.items():
            field["metrics"][name] = other.observed.metrics
            field["agreement"][name] = {
                "agrees": other.agreement.passed,
                "metrics": other.agreement.metrics,
                "worst": other.worst,
            }
    return field


def _perf_field(job: Job, observation: Observation) -> dict[str, Any]:
    """``CaseRecord.perf``: the timing asked for, or why there is none."""
    if job.perf is None:
        return {}
    if observation.perf:
        return timing_record(observation.perf)
    if observation.backend == "simulator":
        return {"unavailable": "no timing on the simulator: it says nothing about NPU speed"}
    return {"unavailable": f"{observation.backend} gave no timing (the case did not run)"}


def _decided_by(case: Case) -> str:
    """For a case that cannot probe its limit alone, the limit that really decides it."""
    if not case.not_isolable:
        return ""
    return f" [decided by {case.deciding_limit}; not isolable: {case.not_isolable}]"


def _described(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


# Inputs of at most this many elements are judged against their calibration set's range.
SMALL_INPUTS = 4096


def input_span(job: Job, inputs: Sequence[np.ndarray]) -> float:
    """The input range an output's int8 error is counted in steps of: an int8 build
    quantizes with the range of its calibration samples, which a few input elements (two,
    0.005 apart) can fall far short of, so small inputs take their calibration set's range
    (drawn here; cheap at that size); large ones have their own range near it."""
    if job.quantize and job.dataset and sum(a.size for a in inputs) <= SMALL_INPUTS:
        return _span([array for sample in job.dataset for array in sample])
    return _span(inputs)


def _span(arrays: Sequence[np.ndarray]) -> float:
    """The range covered by all of ``arrays`` together (bool arrays as 0 and 1)."""
    sizable = [a for a in arrays if a.size]
    if not sizable:
        return 0.0
    top = max(float(a.max()) for a in sizable)
    return top - min(float(a.min()) for a in sizable)


def _save_arrays(folder: Path, names: Sequence[str], arrays: Sequence[np.ndarray]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for index, (name, array) in enumerate(zip(names, arrays, strict=False)):
        np.save(folder / array_file(index, name), np.asarray(array))


def _clear(folder: Path) -> None:
    """Remove what an earlier run of the case left, so a run that stops early (no outputs, no
    recipe) leaves no files in the folder (or in its repro bundle) that it did not write."""
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder)
    elif os.path.lexists(folder):
        folder.unlink()


def _write_files(
    folder: Path, built: BuiltModel, recipe: Mapping[str, bytes], same: SameFiles
) -> None:
    """What every case folder holds: the model and the recipe's files other than arrays,
    these linked to their first copy in the run where they are the same (``same_files``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(built.onnx_bytes)
    for name, data in recipe.items():
        path = folder / name
        if path.parent != folder:  # a file in a subfolder of the recipe's
            path.parent.mkdir(parents=True, exist_ok=True)
        same.write(path, data)


def _write_arrays(
    item: _Prepared, observation: Observation, cap: int | None, tolerance: Mapping[str, float]
) -> None:
    """``cap`` None: the arrays a bundle and its ``reproduce.py`` need: ``inputs/``,
    ``reference/`` (the outputs a comparison is decided against), each host reference's own
    folder (``HostReference.folder``: ``reference-ort/``, where it ran), ``observed/`` and the
    recipe's arrays (calibration data).
    Else ``observed/`` alone, up to ``cap`` bytes (``_write_observed``): the others are drawn
    again from the recipe (``regenerate_arrays``)."""
    built, references, folder = item.built, item.references, item.folder
    if cap is not None:
        if observation.outputs is not None:
            used = references.outputs[references.used]
            _write_observed(folder, built.output_names, observation.outputs, used, cap, tolerance)
        return
    _write_drawn(folder, built, references, item.recipe, item.recipe_arrays)
    if observation.outputs is not None:
        _save_arrays(folder / "observed", built.output_names, observation.outputs)


def _write_drawn(
    folder: Path,
    built: BuiltModel,
    references: References,
    recipe: Mapping[str, bytes],
    recipe_arrays: Sequence[str],
) -> None:
    """What a case's recipe draws: inputs, references and the recipe's arrays."""
    _save_arrays(folder / "inputs", built.input_names, built.inputs)
    _save_arrays(folder / "reference", built.output_names, references.outputs[references.used])
    for name, reference in HOST_REFERENCES.items():
        if reference.folder is not None and name in references.outputs:
            _save_arrays(folder / reference.folder, built.output_names, references.outputs[name])
    _write_recipe(folder, {name: recipe[name] for name in recipe_arrays})


def _write_observed(
    folder: Path,
    names: Sequence[str],
    outputs: Sequence[np.ndarray],
    reference: Sequence[np.ndarray],
    cap: int,
    tolerance: Mapping[str, float],
) -> None:
    """``observed/`` when the outputs take at most ``cap`` bytes; else ``observed-summary.json``:
    per output its shape, dtype, statistics and the first elements outside ``atol + rtol *
    |reference|`` (``tolerance``), with the reference's value there."""
    arrays = [np.asarray(output) for output in outputs]
    if sum(array.nbytes for array in arrays) <= cap:
        _save_arrays(folder / "observed", names, arrays)
        return
    summary = {
        "cap_bytes": cap,
        "why": f"the observed outputs take more than {cap} bytes: summarised, not kept",
        "outputs": [
            _summary(name, array, np.asarray(ref), tolerance)
            for name, array, ref in zip(names, arrays, reference, strict=False)
        ],
    }
    (folder / OBSERVED_SUMMARY).write_text(json.dumps(summary, indent=1) + "\n")


def _summary(
    name: str,
    observed: np.ndarray,
    reference: np.ndarray,
    tolerance: Mapping[str, float],
    chunk: int = 1 << 20,
) -> dict[str, Any]:
    # Outputs over the cap run to hundreds of MB: statistics accumulate in float64 without a
    # float64 copy, and the comparison walks ``chunk`` elements at a time, keeping only the
    # first differing indices (an argwhere over all of them took most of a warm run).
    # A warm run summarises every large output again: no pass over the outputs it can spare
    # (the NaN and infinity counts of all-finite outputs, a fresh float64 buffer per chunk).
    flat = observed.reshape(-1)
    finite = np.isfinite(flat)
    all_finite = bool(finite.all())
    nan = 0 if all_finite else int(np.count_nonzero(np.isnan(flat)))
    entry: dict[str, Any] = {
        "name": name,
        "shape": list(observed.shape),
        "dtype": str(observed.dtype),
        "bytes": int(observed.nbytes),
        "nan": nan,
        "inf": 0 if all_finite else int(flat.size - np.count_nonzero(finite)) - nan,
    }
    values = flat if all_finite else flat[finite]
    if values.size:
        entry.update(
            min=float(values.min()),
            max=float(values.max()),
            mean=float(values.mean(dtype=np.float64)),
            std=float(values.std(dtype=np.float64)),
        )
    if reference.shape != observed.shape:
        entry["reference_shape"] = list(reference.shape)  # nothing to compare element-wise
        return entry
    expected = reference.reshape(-1)
    atol, rtol = tolerance.get("atol", 0.0), tolerance.get("rtol", 0.0)
    differing, first = 0, list[dict[str, Any]]()
    buffers = [np.empty(min(chunk, flat.size), np.float64) for _ in range(4)]
    for start in range(0, flat.size, chunk):
        count = min(chunk, flat.size - start)
        got, want, gap, bound = (buffer[:count] for buffer in buffers)
        got[...] = flat[start : start + chunk]
        want[...] = expected[start : start + chunk]
        with np.errstate(invalid="ignore"):
            np.abs(np.subtract(got, want, out=gap), out=gap)
            np.multiply(np.abs(want, out=bound), rtol, out=bound)
            differs = ~(gap <= np.add(bound, atol, out=bound))  # atol + rtol * |want|
        differing += int(np.count_nonzero(differs))
        if len(first) == FIRST_DIFFERING:
            continue
        for at in np.flatnonzero(differs)[: FIRST_DIFFERING - len(first)]:
            index = np.unravel_index(start + int(at), observed.shape)
            first.append(
                {
                    "index": [int(i) for i in index],
                    "observed": float(got[at]),
                    "reference": float(want[at]),
                }
            )
    entry["differing"] = differing
    entry["first_differing"] = first
    return entry


def regenerate_arrays(
    record: CaseRecord,
    folder: Path,
    recipe: Recipe,
    specs: Mapping[str, OperatorSpec] = OPERATOR_SPECS,
    references: Callable[[BuiltModel], References] = host_references,
) -> None:
    """Write into ``folder`` (a copy of ``record``'s case folder, for a bundle) the inputs,
    references and recipe arrays (calibration data) its case folder did not keep, drawn again
    from the record's recipe: operator, parameters and seed, with the vendor's ``recipe``.
    Nothing when ``inputs/`` is there (a user's case, ``--keep-arrays all``). Raises
    ValueError when the model drawn again is not ``folder/model.onnx``."""
    if (folder / "inputs").is_dir():
        return
    where = f"case {record.id!r} (folder {record.artifacts})"
    if record.op not in specs:
        raise ValueError(f"{where}: kept no inputs, and {record.op!r} is no generated model")
    built = build_model(record.op, record.params, record.seed, specs)
    if built.onnx_bytes != (folder / "model.onnx").read_bytes():
        raise ValueError(
            f"{where}: the model drawn again from operator {record.op}, its parameters and "
            f"seed {record.seed} is not the case's model.onnx (another npu-hil version?)"
        )
    case = Case(
        *(record.id, record.platform, record.op, record.dtype, record.limit, record.value),
        documented=record.documented,
        params=record.params,
        seed=record.seed,
        source=record.source,
        layer_types=(),
    )
    files = recipe(job_for(case, built, specs))
    arrays = [name for name in files if name.endswith(".npy")]
    _write_drawn(folder, built, references(built), files, arrays)


def _write_recipe(folder: Path, files: Mapping[str, bytes]) -> None:
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
