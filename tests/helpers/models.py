"""Models and the models suite run as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from onnx import TensorProto, helper
from tests.helpers.paths import ROOT

MAX_ONE_INPUT = helper.make_model(  # the onnx node test test_max_one_input, rebuilt
    helper.make_graph(
        [helper.make_node("Max", ["x"], ["y"], name="max")],
        "case",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    ),
    opset_imports=[helper.make_opsetid("", 13)],
    ir_version=8,
).SerializeToString()


MODELS_SUITE = ROOT / "suites" / "test_models.py"


def run_models(
    tmp_path: Path, folder: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", str(MODELS_SUITE), "-p", "no:cacheprovider"]
    command += ["--models", str(folder), "--results", str(tmp_path / "results"), *args]
    run_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}  # this tree's plugin
    return subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=run_env
    )
