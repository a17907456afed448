"""Case folders keep what cannot be drawn again; a bundle draws the rest and still reproduces
its verdict on the simulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tests.helpers.declared import MODELS

from harness.cases.operators import operator_cases
from harness.pipeline import FIRST_DIFFERING, CaseExecutor, Stages, _summary
from harness.report.bundle import BundleError, make_bundle
from harness.targets.target import Target
from harness.vendors import Recipes
from harness.vendors.rknn.documents.operators import seed_catalogue
from harness.vendors.rknn.vendor import VENDOR

regenerate = Recipes(VENDOR)

CASES = {case.id: case for case in operator_cases(seed_catalogue(), MODELS).cases}
WRONG_FP16 = "rk3562/MaxPool/float16/pad_top=7"  # the NPU gets it wrong: 80 float32 outputs
WRONG_INT8 = "rk3562/MaxPool/int8/pad_top=7"  # the same, with calibration data to draw


@pytest.fixture(scope="module")
def simulator() -> Iterator[Target]:
    pytest.importorskip("rknn.api", reason="rknn-toolkit2 (the simulator) is not installed")
    from harness.vendors.rknn.toolkit.simulator import SimulatorPool

    with SimulatorPool(workers=1, timeout_s=300) as pool:
        yield pool


def _reproduce(bundle: Path) -> subprocess.CompletedProcess[str]:
    """The bundle's script as a vendor runs it, without npu-hil on the path."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, str(bundle / "reproduce.py"), "--log", str(bundle.parent / "log")],
        cwd=bundle.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_outputs_over_the_cap_are_summarised_and_the_bundle_still_reproduces(
    simulator: Target, tmp_path: Path
) -> None:
    executor = CaseExecutor(tmp_path, simulator, Stages(recipe=VENDOR.recipe, observed_cap=256))
    record = executor.execute(CASES[WRONG_FP16])
    assert record.verdict == "wrong-result"
    folder = tmp_path / record.artifacts
    assert not list(folder.rglob("*.npy"))  # 320 bytes of outputs, over the cap of 256
    [output] = json.loads((folder / "observed-summary.json").read_text())["outputs"]
    assert output["shape"] == [1, 4, 5, 4] and output["bytes"] == 320
    assert output["differing"] == record.metrics["mismatches"]  # float16: atol + rtol |ref|

    bundle = make_bundle(tmp_path, WRONG_FP16, regenerate=regenerate)
    reference = np.load(bundle / "reference" / "0_Y.npy")
    for element in output["first_differing"]:
        assert reference[tuple(element["index"])] == pytest.approx(element["reference"])
    assert (bundle / "observed-summary.json").is_file() and (bundle / "inputs").is_dir()
    run = _reproduce(bundle)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "result    recorded: mismatch" in run.stdout and "REPRODUCED: wrong-result" in run.stdout


def test_an_int8_bundle_draws_its_calibration_data_again(simulator: Target, tmp_path: Path) -> None:
    record = CaseExecutor(tmp_path, simulator, Stages(recipe=VENDOR.recipe)).execute(
        CASES[WRONG_INT8]
    )
    folder = tmp_path / record.artifacts
    assert [p.relative_to(folder).as_posix() for p in folder.rglob("*.npy")] == ["observed/0_Y.npy"]
    bundle = make_bundle(tmp_path, WRONG_INT8, regenerate=regenerate)
    assert len(list((bundle / "dataset").glob("*.npy"))) == 4  # the inputs and 3 more samples
    run = _reproduce(bundle)
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_model_that_does_not_come_out_the_same_is_not_bundled(
    simulator: Target, tmp_path: Path
) -> None:
    record = CaseExecutor(tmp_path, simulator, Stages(recipe=VENDOR.recipe)).execute(
        CASES[WRONG_FP16]
    )
    model = tmp_path / record.artifacts / "model.onnx"
    model.write_bytes(model.read_bytes() + b"\0")
    with pytest.raises(BundleError, match=r"is not the case's model\.onnx"):
        make_bundle(tmp_path, WRONG_FP16, regenerate=regenerate)


def _whole_array_summary(observed: np.ndarray, reference: np.ndarray, tol: float) -> tuple:
    """What the summary holds, computed over the whole array at once in float64."""
    values, expected = observed.astype(np.float64), reference.astype(np.float64)
    differs = ~(np.abs(values - expected) <= tol + tol * np.abs(expected))
    where = np.argwhere(differs)[:FIRST_DIFFERING]
    finite = values[np.isfinite(values)]
    return (
        int(differs.sum()),
        [[int(i) for i in index] for index in where],
        [float(values[tuple(index)]) for index in where],
        (float(finite.min()), float(finite.max()), float(finite.mean()), float(finite.std())),
    )


@pytest.mark.parametrize("wrong", [3, 40, 5000])
def test_a_summary_walked_in_chunks_is_the_summary_of_the_whole_array(wrong: int) -> None:
    rng = np.random.default_rng(wrong)
    reference = rng.uniform(-1, 1, size=(2, 3, 50, 70)).astype(np.float32)
    observed = reference.copy()
    flat = observed.reshape(-1)
    flat[rng.choice(flat.size, size=wrong, replace=False)] += 0.5
    flat[7], flat[20999] = np.nan, np.inf  # never within tolerance, left out of the statistics
    summary = _summary("Y", observed, reference, {"atol": 1e-3, "rtol": 1e-3}, chunk=997)
    differing, indices, values, stats = _whole_array_summary(observed, reference, 1e-3)
    assert summary["differing"] == differing >= wrong
    assert [element["index"] for element in summary["first_differing"]] == indices
    observed_there = [element["observed"] for element in summary["first_differing"]]
    np.testing.assert_array_equal(observed_there, values)  # NaN equal to NaN here
    assert (summary["nan"], summary["inf"]) == (1, 1)
    assert (summary["min"], summary["max"]) == stats[:2]
    assert summary["mean"] == pytest.approx(stats[2]) and summary["std"] == pytest.approx(stats[3])
