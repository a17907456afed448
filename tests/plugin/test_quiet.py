"""Quiet by default: warnings counted per verdict class, each case's own warnings in its record,
an exact marker per dtype, and ``--collect-only`` leaving the results directory alone. Run as
a user runs them (pytest and tools/tox-job.sh in a subprocess, the real simulator)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tests.helpers import paths
from tests.helpers.marks import needs_toolkit

from harness.results.journal import read_records

ROOT = paths.ROOT
BIN = Path(sys.executable).parent  # pytest and hil of this environment


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider"]
    # caches of its own: a host reference served from a cache raises none of its warnings
    command += ["--results", str(tmp_path / "results"), "--hil-cache", str(tmp_path / "cache")]
    command += ["--hil-reference-cache", str(tmp_path / "references")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)


def save(path: Path, node: onnx.NodeProto, constants: list[onnx.TensorProto]) -> None:
    graph = helper.make_graph(
        [node],
        path.stem,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        constants,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)


@needs_toolkit
def test_a_warning_raised_in_one_case_lands_in_that_cases_record(tmp_path: Path) -> None:
    """Two models in one batch, prepared while pytest runs the first: the host reference of the
    second divides by zero (numpy's RuntimeWarning). The warning is the second case's."""
    folder = tmp_path / "models"
    folder.mkdir()
    save(folder / "a_pool.onnx", helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2]), [])
    zero = numpy_helper.from_array(np.zeros([1], np.float32), "zero")
    save(folder / "b_div.onnx", helper.make_node("Div", ["x", "zero"], ["y"]), [zero])
    result = run(tmp_path, str(ROOT / "suites" / "test_models.py"), "--models", str(folder))
    records = {r.id.split("/")[2]: r for r in read_records(tmp_path / "results")}
    assert records["a_pool"].warnings == [], result.stdout
    assert any(w.startswith("RuntimeWarning: divide by zero") for w in records["b_div"].warnings), (
        records["b_div"].warnings
    )
    assert "warnings summary" not in result.stdout  # pytest blames no test of the batch
    assert "cases raised" in result.stdout and "warnings while running" in result.stdout


@needs_toolkit
def test_doc_drift_is_one_summary_line_not_a_warning_per_case(tmp_path: Path) -> None:
    case = "rk3562/Expand/float16/[b,c,1,w]:h=8193"  # beyond the documented 8192, still on NPU
    suite = f"{ROOT / 'suites' / 'test_operators.py'}::test_documented_limit[{case}]"
    result = run(tmp_path, suite)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "DocDriftWarning" not in result.stdout.split("npu-hil warnings")[0]
    [line] = [line for line in result.stdout.splitlines() if line.startswith("doc-drift: ")]
    assert line.startswith("doc-drift: 1 cases pass with a warning")
    assert f"{tmp_path / 'results'}/report.md" in line


def test_dtype_marker_selects_exactly_that_dtype(tmp_path: Path) -> None:
    suite = str(ROOT / "suites" / "test_operators.py")
    marked = run(tmp_path, suite, "--collect-only", "-q", "-m", "float16", "-k", "Pow")
    keyword = run(tmp_path, suite, "--collect-only", "-q", "-k", "Pow and float16")
    by_marker = {line for line in marked.stdout.splitlines() if "::" in line}
    by_keyword = {line for line in keyword.stdout.splitlines() if "::" in line}
    assert by_marker and all("/float16/" in line for line in by_marker)
    assert (
        {line for line in by_keyword - by_marker}
        == {line for line in by_keyword if "/int8/" in line}
        != set()
    )  # -k also takes Pow/int8/exponent_dtype=float16


def test_collect_only_writes_no_report_and_reports_nothing_stale(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "run.json").write_text(json.dumps({"platform": "an earlier run"}))
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "HIL_RESULTS": str(results)}
    env["PYTHONPATH"] = str(ROOT)
    job = subprocess.run(
        ["bash", "tools/tox-job.sh", "suites", "--collect-only", "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert job.returncode == 0, job.stdout + job.stderr
    assert "stale" not in job.stdout and "no journal" not in job.stderr
    assert sorted(p.name for p in results.iterdir()) == ["run.json"]
    assert json.loads((results / "run.json").read_text()) == {"platform": "an earlier run"}
