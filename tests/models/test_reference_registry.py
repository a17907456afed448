"""The host references are a registry: a third one, registered here (numpy's ``power`` for the
one operator Pow, opsets 15 to 19), is run, ranked by the deciding rule, judged against and
written into the case folder with no other change to the harness."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from tests.helpers.declared import MODELS
from tests.models.test_references import at_opset_13

from harness.cases.operators import operator_cases
from harness.documented.properties import RESULT
from harness.models import BuiltModel
from harness.models import reference as reference_module
from harness.models.reference import (
    HOST_REFERENCES,
    ORT,
    SPEC,
    Feeds,
    HostReference,
    NoReferenceError,
    host_references,
)
from harness.pipeline import CaseExecutor, Stages
from harness.results.records import CaseRecord
from harness.targets.job import Job
from harness.targets.observation import Observation
from harness.vendors.rknn.documents.operators import seed_catalogue

CASES = {
    case.id: case
    for case in operator_cases(seed_catalogue(), MODELS, ops=["Pow", "AveragePool"]).cases
}
SQUARE = CASES["rk3562/Pow/float16/values=2"]
POOL = CASES["rk3562/AveragePool/float16/ceil_mode=1"]
NUMPY = "numpy"


def numpy_pow(off: float = 0.0) -> Callable[[BuiltModel, Feeds], list[np.ndarray]]:
    """numpy's Pow of the model's one input by its exponent initializer, ``off`` added."""

    def run(built: BuiltModel, feeds: Feeds) -> list[np.ndarray]:
        model = onnx.load_from_string(built.onnx_bytes)
        (exponent,) = (numpy_helper.to_array(init) for init in model.graph.initializer)
        (x,) = feeds.values()
        return [np.power(x, exponent).astype(np.float32) + np.float32(off)]

    return run


def numpy_reference(decides: int | None, off: float = 0.0) -> HostReference:
    return HostReference(
        NUMPY,
        np.__version__,
        numpy_pow(off),
        {"numpy": np.__version__},
        decides,
        "reference-numpy",
        ops=frozenset({"Pow"}),
        opsets=(15, 19),
    )


def register(monkeypatch: pytest.MonkeyPatch, decides: int | None, off: float = 0.0) -> None:
    monkeypatch.setitem(HOST_REFERENCES, NUMPY, numpy_reference(decides, off))


class HostTarget:
    """Computes the square on the host, right: sees the result only."""

    observes = frozenset({RESULT})

    def run(self, job: Job) -> Observation:
        (x,) = job.inputs
        return Observation("host", outputs=[np.square(x)], observes=self.observes)


def execute(tmp_path: Path) -> tuple[CaseRecord, Path]:
    record = CaseExecutor(tmp_path, HostTarget(), Stages(observed_cap=None)).execute(SQUARE)
    return record, tmp_path / record.artifacts


def test_the_registry_runs_a_third_reference_where_it_can_compute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    register(monkeypatch, decides=None)
    square = host_references(MODELS.build(SQUARE.op, SQUARE.params, SQUARE.seed))
    assert list(square.outputs) == [SPEC, ORT, NUMPY] and square.used == SPEC
    np.testing.assert_allclose(square.outputs[NUMPY][0], square.outputs[SPEC][0], rtol=1e-6)
    pool = host_references(MODELS.build(POOL.op, POOL.params, POOL.seed))
    assert pool.unavailable == {NUMPY: "numpy computes no AveragePool"}
    at_opset_13(monkeypatch)
    old = host_references(MODELS.build(SQUARE.op, SQUARE.params, SQUARE.seed))
    assert old.unavailable == {NUMPY: "numpy follows opsets 15 to 19, not the model's 13"}


def test_a_registered_reference_is_not_run_past_its_budget() -> None:
    """Its cost on a model (here every Pow's output element, as a multiply-add) against its
    budget, in the registry like what it computes."""
    built = MODELS.build(SQUARE.op, SQUARE.params, SQUARE.seed)
    elements = int(np.prod(built.inputs[0].shape))

    def pow_work(model: onnx.ModelProto) -> tuple[int, str]:
        return elements, "Pow"

    for budget, runs in ((elements, True), (elements - 1, False)):
        costed = replace(numpy_reference(None), cost=pow_work, budget=budget)
        skipped = costed.unavailable(
            onnx.shape_inference.infer_shapes(onnx.load_from_string(built.onnx_bytes))
        )
        assert skipped == (None if runs else f"numpy skipped: Pow of {elements:.3g} multiply-adds")


def test_the_deciding_rule_ranks_a_registered_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    register(monkeypatch, decides=-1)  # before the spec's own
    built = MODELS.build(SQUARE.op, SQUARE.params, SQUARE.seed)
    assert host_references(built).used == NUMPY
    pool = host_references(MODELS.build(POOL.op, POOL.params, POOL.seed))
    assert pool.used == SPEC  # it cannot compute the pool: the next rank decides
    alone = {NUMPY: numpy_reference(decides=None)}  # cross-checking only: nothing decides
    monkeypatch.setattr(reference_module, "HOST_REFERENCES", alone)
    with pytest.raises(NoReferenceError, match="no host reference runs the model"):
        host_references(built)


@pytest.mark.parametrize("decides", [None, -1])
def test_a_wrong_registered_reference_is_judged_and_kept_in_the_case_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, decides: int | None
) -> None:
    register(monkeypatch, decides, off=1.0)
    record, folder = execute(tmp_path)
    used = NUMPY if decides is not None else SPEC
    assert record.reference["used"] == used and record.verdict == "reference-disagreement"
    agreement = record.reference["agreement"]
    assert set(agreement) == {SPEC, ORT, NUMPY} - {used}
    assert all(not other["agrees"] for other in agreement.values()) == (used == NUMPY)
    (result,) = [check for check in record.checks if check["prop"] == RESULT]
    assert f"differs from {used}: " in result["observed"]  # the one deciding, named
    (deciding,) = (folder / "reference").iterdir()
    (numpy_file,) = (folder / "reference-numpy").iterdir()
    assert deciding.name == numpy_file.name and (folder / "reference-ort").is_dir()
    np.testing.assert_array_equal(
        np.load(numpy_file), np.load(next((folder / "observed").iterdir())) + np.float32(1.0)
    )
    if used == NUMPY:
        np.testing.assert_array_equal(np.load(deciding), np.load(numpy_file))
