"""Comparisons of unchanged arrays read from their disk cache, and anything changed compared
afresh: the observed outputs, a reference, the tolerance or a damaged entry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from tests.helpers.caches import FLOAT16, arrays
from tests.helpers.declared import MODELS

from harness.cases.operators import operator_cases
from harness.diskcache import arrays_digest, entries
from harness.judge import comparison_cache
from harness.judge.compare import Comparison
from harness.judge.comparison_cache import ComparisonCache
from harness.models.reference import ReferenceCache
from harness.pipeline import CaseExecutor, Stages
from harness.vendors.rknn.documents.operators import seed_catalogue
from harness.vendors.rknn.toolkit.simulator import SimCache, SimulatorPool


def not_again(*args: object) -> Comparison:
    raise AssertionError("compared again")


def not_hashed(arrays: object) -> str:
    raise AssertionError("arrays hashed again")


def test_the_same_arrays_are_compared_once_and_read_back_equal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    observed, references = arrays()
    cache = ComparisonCache(tmp_path)
    first = cache.compare_references(observed, references, "onnx-reference", FLOAT16, 2.0)
    assert not first.passed and first.others["onnxruntime"].worst  # every field has content
    assert len(entries(tmp_path)) == 1
    monkeypatch.setattr(comparison_cache, "compare_references", not_again)
    again = ComparisonCache(tmp_path).compare_references(
        observed, references, "onnx-reference", FLOAT16, 2.0
    )
    assert again == first


@pytest.mark.parametrize("change", ["an observed element", "a reference", "tolerance", "span"])
def test_anything_compared_that_changed_is_compared_afresh(tmp_path: Path, change: str) -> None:
    observed, references = arrays()
    cache = ComparisonCache(tmp_path)
    cache.compare_references(observed, references, "onnx-reference", FLOAT16, 2.0)
    tolerance, span = dict(FLOAT16), 2.0
    changed: tuple[Sequence[np.ndarray], Mapping[str, Sequence[np.ndarray]]]
    if change == "an observed element":
        moved = observed[0].copy()
        moved[0, 0, 0] += 1.0
        changed = ([moved], references)
    elif change == "a reference":
        changed = (observed, {**references, "onnxruntime": references["onnx-reference"]})
    else:
        changed = (observed, references)
        tolerance["atol"] = 0.5 if change == "tolerance" else tolerance["atol"]
        span = 9.0 if change == "span" else span
    got = cache.compare_references(*changed, "onnx-reference", tolerance, span)
    fresh = comparison_cache.compare_references(*changed, "onnx-reference", tolerance, span)
    assert got == fresh
    assert len(entries(tmp_path)) == 2


def test_digests_a_cache_kept_stand_for_the_arrays_they_were_taken_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    observed, references = arrays()
    digests = {"observed": arrays_digest(observed)}
    digests |= {name: arrays_digest(outputs) for name, outputs in references.items()}
    cache = ComparisonCache(tmp_path)
    first = cache.compare_references(observed, references, "onnx-reference", FLOAT16, 2.0)
    monkeypatch.setattr(comparison_cache, "compare_references", not_again)
    monkeypatch.setattr(comparison_cache, "arrays_digest", not_hashed)
    again = cache.compare_references(observed, references, "onnx-reference", FLOAT16, 2.0, digests)
    assert again == first and len(entries(tmp_path)) == 1
    # a digest that names other arrays is another entry, whatever arrays come with it
    monkeypatch.undo()
    other = {**digests, "onnxruntime": arrays_digest(observed)}
    cache.compare_references(observed, references, "onnx-reference", FLOAT16, 2.0, other)
    assert len(entries(tmp_path)) == 2


def test_a_damaged_entry_is_compared_again_and_replaced(tmp_path: Path) -> None:
    observed, references = arrays()
    cache = ComparisonCache(tmp_path)
    first = cache.compare_references(observed, references, "onnx-reference", FLOAT16)
    [entry] = entries(tmp_path)
    entry.path.write_bytes(entry.path.read_bytes()[:-20])  # cut short
    assert cache.compare_references(observed, references, "onnx-reference", FLOAT16) == first
    [again] = entries(tmp_path)
    assert (
        ComparisonCache(tmp_path).compare_references(
            observed, references, "onnx-reference", FLOAT16
        )
        == first
    )
    assert again.path.stat().st_size > 100


def test_the_executor_judges_alike_with_the_comparison_cache_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = operator_cases(seed_catalogue(), MODELS, ops=["Pow"]).cases[:3]
    cache = ComparisonCache(tmp_path / "cmp")
    with SimulatorPool(workers=1) as pool:
        plain = list(CaseExecutor(tmp_path / "a", pool).execute_many(cases))
        compare = cache.compare_references
        cold = list(
            CaseExecutor(tmp_path / "b", pool, Stages(comparisons=compare)).execute_many(cases)
        )
        stored = len(entries(tmp_path / "cmp"))
        monkeypatch.setattr(comparison_cache, "compare_references", not_again)
        warm = list(
            CaseExecutor(tmp_path / "c", pool, Stages(comparisons=compare)).execute_many(cases)
        )
    assert stored == len(cases)
    fields = [(r.verdict, r.metrics, r.reference, r.detail) for r in plain]
    assert [(r.verdict, r.metrics, r.reference, r.detail) for r in cold] == fields
    assert [(r.verdict, r.metrics, r.reference, r.detail) for r in warm] == fields


def test_a_warm_run_on_the_caches_hashes_no_output_to_find_its_comparisons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The simulator and reference caches give their arrays' digests, computed when they
    stored them, and the comparison cache keys by those."""
    cases = operator_cases(seed_catalogue(), MODELS, ops=["Pow"]).cases[:3]
    compare = ComparisonCache(tmp_path / "cmp").compare_references
    stages = Stages(references=ReferenceCache(tmp_path / "ref").references, comparisons=compare)
    with SimulatorPool(workers=1, cache=SimCache(tmp_path / "sim")) as pool:
        cold = list(CaseExecutor(tmp_path / "a", pool, stages).execute_many(cases))
        monkeypatch.setattr(comparison_cache, "compare_references", not_again)
        monkeypatch.setattr(comparison_cache, "arrays_digest", not_hashed)
        warm = list(CaseExecutor(tmp_path / "b", pool, stages).execute_many(cases))
        assert pool.toolkit_runs == len(cases)  # the warm run ran nothing
    assert len(entries(tmp_path / "cmp")) == len(cases)
    fields = [(r.verdict, r.metrics, r.reference, r.detail) for r in cold]
    assert [(r.verdict, r.metrics, r.reference, r.detail) for r in warm] == fields
