"""Every entry point writes the same record of a case: ``hil probe`` and ``hil run`` against
the suites (real ``pytest suites/...`` processes, the real simulator), each entry point's
executor built by ``harness.vendors.stages.stages_for``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper
from tests.helpers import paths

from harness.cli import main
from harness.results.journal import read_records
from harness.results.records import CaseRecord

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("rknn") is None,
    reason="rknn-toolkit2 (the simulator) is not installed",
)
ROOT = paths.ROOT
EDGE = "rk3562/MaxPool/int8/strides_h=8"  # the suite's case at the edge, the probe's first step


def suite(tmp_path: Path, results: Path, *args: str) -> list[CaseRecord]:
    """The records of ``pytest suites/... ARGS`` into ``results``, as a user runs it."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    command += ["--results", str(results), "--hil-cache", str(tmp_path / "cache")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's plugin
    run = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env
    )
    assert run.returncode in (0, 1), run.stdout + run.stderr  # passed or failed, no error
    return read_records(results)


def shape(record: CaseRecord) -> dict[str, Any]:
    """What a record carries, apart from the values of one run: the fields it fills in, the
    SDK it names, and the keys of its source (the document it is judged against) and
    versions."""
    filled = sorted(key for key, value in record.to_json().items() if value not in ("", [], {}))
    return {
        "filled": filled,
        "sdk": record.sdk,
        "source": sorted(record.source),
        "versions": sorted(record.versions),
    }


def test_a_probe_step_is_recorded_as_the_suite_records_the_same_case(tmp_path: Path) -> None:
    (suited,) = suite(
        tmp_path,
        tmp_path / "suite",
        str(ROOT / "suites" / f"test_operators.py::test_documented_limit[{EDGE}]"),
        "--platform",
        "rk3562",
    )
    probe = ["probe", "-k", "MaxPool and strides_h and int8", "--steps", "1"]
    cache = ["--hil-cache", str(tmp_path / "cache")]
    assert main([*probe, "--results", str(tmp_path / "probe"), *cache]) == 0
    (probed,) = read_records(tmp_path / "probe")
    assert probed.id == suited.id == EDGE
    assert suited.sdk and "judged_against" in suited.source  # what the comparison is about
    assert shape(probed) == shape(suited)
    assert probed.source == suited.source and probed.tolerance == suited.tolerance


def test_hil_run_records_a_model_as_the_models_suite_records_it(tmp_path: Path) -> None:
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu")
    graph = helper.make_graph(
        [relu],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    folder = tmp_path / "models"
    folder.mkdir()
    onnx.save(model, folder / "relu.onnx")
    models = str(ROOT / "suites" / "test_models.py")
    (suited,) = suite(tmp_path, tmp_path / "suite", models, "--models", str(folder))
    cache = ["--hil-cache", str(tmp_path / "cache"), "--results", str(tmp_path / "run")]
    assert main(["run", str(folder / "relu.onnx"), "--platform", "rk3562", *cache]) == 0
    (ran,) = read_records(tmp_path / "run")
    assert (ran.id, suited.id) == ("rk3562/model/relu/float16", "rk3562/models/relu/float16")
    assert suited.sdk and "judged_against" in suited.source
    assert shape(ran) == shape(suited)
