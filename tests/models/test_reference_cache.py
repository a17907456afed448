"""What a rerun derives again from unchanged inputs: host references from their disk cache, an
int8 case's model built once, and cases prepared while the simulator runs the one before."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tests.helpers.caches import entry_body
from tests.helpers.declared import MODELS

from harness import models, pipeline
from harness.cases.operators import operator_cases
from harness.diskcache import arrays_digest, entries, unpack
from harness.judge.verdict import BAD_INPUT
from harness.models import reference as reference_module
from harness.models.reference import SPEC, TEST_DATA, ReferenceCache, host_references
from harness.pipeline import CaseExecutor, Stages
from harness.results.journal import read_records
from harness.targets import job as job_module
from harness.targets.job import Job
from harness.vendors.rknn.documents.operators import seed_catalogue
from harness.vendors.rknn.toolkit.simulator import SimCache, SimulatorPool
from harness.vendors.rknn.toolkit.simulator import cache as simulator_cache

MAXPOOL = {"kernel": [3, 3], "strides": [1, 1]}


def not_again(built: models.BuiltModel) -> reference_module.References:
    raise AssertionError(f"{built.op}: references computed again")


def test_a_second_run_of_the_same_model_reads_its_references_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = MODELS.build("MaxPool", MAXPOOL, seed=7)
    cache = ReferenceCache(tmp_path)
    first = cache.references(built)
    assert len(entries(tmp_path)) == 1
    monkeypatch.setattr(reference_module, "host_references", not_again)
    again = cache.references(built)
    assert again.unavailable == first.unavailable and again.used == SPEC
    for name, arrays in first.outputs.items():
        for stored, computed in zip(again.outputs[name], arrays, strict=True):
            np.testing.assert_array_equal(stored, computed)


def test_references_carry_their_outputs_digests_computed_and_read_back(tmp_path: Path) -> None:
    built = MODELS.build("MaxPool", MAXPOOL, seed=7)
    cache = ReferenceCache(tmp_path)
    computed, read = cache.references(built), ReferenceCache(tmp_path).references(built)
    expected = {name: arrays_digest(outputs) for name, outputs in computed.outputs.items()}
    assert set(expected) == {SPEC, "onnxruntime"}
    assert computed.digests == read.digests == expected
    assert host_references(built).digests == {}  # no cache, nothing computed ahead


def test_other_inputs_or_another_reference_version_are_another_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = MODELS.build("MaxPool", MAXPOOL, seed=7)
    other_inputs = MODELS.build("MaxPool", MAXPOOL, seed=8)
    assert other_inputs.onnx_bytes == built.onnx_bytes  # the same model, other data
    cache = ReferenceCache(tmp_path)
    keys = {cache.key(built), cache.key(other_inputs)}
    spec = reference_module.HOST_REFERENCES[SPEC]  # what its outputs depend on, as registered
    other = dataclasses.replace(spec, depends={**spec.depends, "onnx": "0.0-other"})
    monkeypatch.setitem(reference_module.HOST_REFERENCES, SPEC, other)
    keys.add(ReferenceCache(tmp_path).key(built))
    assert len(keys) == 3


def test_a_damaged_entry_is_computed_again_and_replaced(tmp_path: Path) -> None:
    built = MODELS.build("MaxPool", MAXPOOL, seed=7)
    cache = ReferenceCache(tmp_path)
    expected = cache.references(built).outputs[SPEC][0]
    [entry] = entries(tmp_path)
    entry.path.write_bytes(b"not an entry")
    np.testing.assert_array_equal(cache.references(built).outputs[SPEC][0], expected)
    [again] = entries(tmp_path)
    np.testing.assert_array_equal(
        ReferenceCache(tmp_path).references(built).outputs[SPEC][0], expected
    )
    np.testing.assert_array_equal(unpack(entry_body(again.path))[1][0], expected)


def test_outputs_the_model_came_with_are_never_stored_but_always_there(tmp_path: Path) -> None:
    built = MODELS.build("MaxPool", MAXPOOL, seed=7)
    built.expected = [host_references(built).outputs[SPEC][0] + 1]  # as a node test ships
    cache = ReferenceCache(tmp_path)
    assert TEST_DATA in cache.references(built).outputs
    built.expected = None  # the same model and inputs, without test data
    assert TEST_DATA not in cache.references(built).outputs


def test_an_int8_case_builds_its_model_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [case] = [
        c
        for c in operator_cases(seed_catalogue(), MODELS, ops=["MaxPool"]).cases
        if c.dtype == "int8"
    ][:1]
    assembled: list[str] = []
    assemble = models.assemble

    def counting(op: str, graph: models.builder.Graph) -> object:
        assembled.append(op)
        return assemble(op, graph)

    monkeypatch.setattr(models, "assemble", counting)
    built = MODELS.build(case.op, case.params, case.seed)
    job = pipeline.job_for(case, built)
    assert assembled == ["MaxPool"]
    assert job.dataset is not None and len(job.dataset) == 1 + pipeline.CALIBRATION_EXTRA_SAMPLES
    # the further samples are the inputs a model built from the next seeds would have
    for k, sample in enumerate(job.dataset[1:], start=1):
        np.testing.assert_array_equal(
            sample[0], MODELS.build(case.op, case.params, case.seed + k).inputs[0]
        )


def test_a_case_s_inputs_are_hashed_once_for_the_reference_and_simulator_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host references' key and the simulator's name the inputs by one digest, which
    ``job_for`` hands on; a job made without it computes it and keys the same."""
    [case] = [
        c
        for c in operator_cases(seed_catalogue(), MODELS, ops=["MaxPool"]).cases
        if c.dtype == "int8"
    ][:1]
    hashed: list[int] = []

    def counting(arrays: list[np.ndarray]) -> str:
        hashed.append(len(arrays))
        return arrays_digest(arrays)

    for module in (models.builder, job_module, simulator_cache):
        monkeypatch.setattr(module, "arrays_digest", counting)
    built = MODELS.build(case.op, case.params, case.seed)
    job = pipeline.job_for(case, built)
    sim, ref = SimCache(tmp_path / "sim"), ReferenceCache(tmp_path / "ref")
    keys = ref.key(built), sim.key(job)
    assert hashed == [len(built.inputs)]  # the calibration's first sample is the inputs too
    assert job.inputs_digest == built.inputs_digest == arrays_digest(built.inputs)
    copied = [array.copy() for array in built.inputs]
    made = Job(job.model, copied, job.target_platform, quantize=True, dataset=job.dataset)
    assert made.inputs_digest is None and sim.key(made) == keys[1]
    assert made.inputs_digest == built.inputs_digest
    assert ref.key(dataclasses.replace(built, inputs=copied)) == keys[0]


def test_the_simulator_takes_the_next_cases_only_while_it_runs_one(tmp_path: Path) -> None:
    cases = operator_cases(seed_catalogue(), MODELS, ops=["Pow"]).cases[:5]
    pulled: list[str] = []

    def jobs() -> Iterator[Job]:
        for case in cases:
            pulled.append(case.id)
            yield pipeline.job_for(case, MODELS.build(case.op, case.params, case.seed))

    with SimulatorPool(workers=1) as pool:
        stream = pool.stream(jobs())
        next(stream)
        # the first case ran while the second waited in the worker's pipe and the third was
        # prepared; the rest wait their turn
        assert pulled == [case.id for case in cases[:3]]
        assert len(list(stream)) == 4
    assert pulled == [case.id for case in cases]


def test_the_executor_uses_the_reference_cache_it_is_given(tmp_path: Path) -> None:
    cases = operator_cases(seed_catalogue(), MODELS, ops=["MaxPool"]).cases[:2]
    cache = ReferenceCache(tmp_path / "ref")
    with SimulatorPool(workers=1) as pool:
        first = list(
            CaseExecutor(tmp_path / "a", pool, Stages(references=cache.references)).execute_many(
                cases
            )
        )
        stored = len(entries(tmp_path / "ref"))
        again = list(
            CaseExecutor(tmp_path / "b", pool, Stages(references=cache.references)).execute_many(
                cases
            )
        )
    # the int8 and float16 cases of one model are fed the same data: one entry serves both
    assert [case.dtype for case in cases] == ["int8", "float16"]
    assert cases[0].seed == cases[1].seed and cases[0].params == cases[1].params
    assert stored == 1
    assert [r.verdict for r in again] == [r.verdict for r in first]
    assert [r.reference for r in again] == [r.reference for r in first]


def test_a_users_case_that_cannot_be_prepared_is_refused_at_its_turn_and_the_batch_goes_on(
    tmp_path: Path,
) -> None:
    good = operator_cases(seed_catalogue(), MODELS, ops=["Pow"]).cases[:2]
    broken = [
        dataclasses.replace(case, id=f"user/{i}", op="NoSuchModel", from_user=True)
        for i, case in enumerate(good)
    ]
    batch = [good[0], broken[0], good[1], broken[1]]  # a refusal after the last observation too
    with SimulatorPool(workers=1) as pool:
        records = list(CaseExecutor(tmp_path, pool).execute_many(batch))
    assert [r.id for r in records] == [case.id for case in batch]
    assert [r.verdict == BAD_INPUT for r in records] == [False, True, False, True]
    assert all(r.backend == "simulator" for r in (records[0], records[2]))
    assert [r.id for r in read_records(tmp_path)] == [case.id for case in batch]


def test_a_generated_case_that_cannot_be_prepared_raises_at_its_turn(tmp_path: Path) -> None:
    good = operator_cases(seed_catalogue(), MODELS, ops=["Pow"]).cases[:2]
    broken = dataclasses.replace(good[0], id="generated/broken", op="NoSuchModel")
    with SimulatorPool(workers=1) as pool:
        stream = CaseExecutor(tmp_path, pool).execute_many([good[0], broken, good[1]])
        assert next(stream).id == good[0].id
        with pytest.raises(ValueError, match="NoSuchModel"):
            next(stream)
    assert [r.id for r in read_records(tmp_path)] == [good[0].id]  # the rest was not run
