"""``suites/test_models.py`` on the ONNX backend node tests, run as a user runs it (pytest in a
subprocess, the real rknn-toolkit2 simulator): compiler crashes, lowering, what did not run."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from harness.results.journal import read_records
from harness.vendors.rknn.simulator.worker import FAULT_ENV

needs_toolkit = pytest.mark.skipif(
    importlib.util.find_spec("rknn") is None, reason="rknn-toolkit2 is not installed"
)
NODE_TESTS = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
ROOT = Path(__file__).resolve().parents[1]
MODELS_SUITE = ROOT / "suites" / "test_models.py"


def node_tests(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "models"
    for name in names:
        shutil.copytree(NODE_TESTS / name, folder / name)
    return folder


def run_models(
    tmp_path: Path, folder: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", str(MODELS_SUITE), "-p", "no:cacheprovider"]
    command += ["--models", str(folder), "--results", str(tmp_path / "results"), *args]
    run_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}  # this tree's plugin
    return subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=run_env
    )


@needs_toolkit
def test_a_compiler_crash_is_a_violation_with_a_bundle_that_reproduces_it_and_is_cached(
    tmp_path: Path,
) -> None:
    """rknn-toolkit2 2.5.0 segfaults in its OpEmit pass on the node test test_max_one_input."""
    folder = node_tests(tmp_path, "test_max_one_input")
    cache = ["--hil-cache", str(tmp_path / "cache")]
    run = run_models(tmp_path, folder, *cache)
    assert run.returncode == 1, run.stdout + run.stderr  # a failure, not an error
    [record] = read_records(tmp_path / "results")
    assert record.verdict == "violation"
    assert record.detail == (
        "placement: build aborted (SIGSEGV): compiler crash (SIGSEGV in rknn.build, compiler "
        "pass OpEmit); confirmed: the same crash again in a fresh worker process"
    )
    [bundle] = [p for p in (tmp_path / "results" / "bundles").iterdir() if p.is_dir()]
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    script = [sys.executable, str(bundle / "reproduce.py"), "--log", str(tmp_path / "r.log")]
    repro = subprocess.run(script, capture_output=True, text=True, timeout=300, env=env)
    assert repro.returncode == 0, repro.stdout + repro.stderr
    assert "outcome   recorded: build aborted (SIGSEGV)  now: build aborted (SIGSEGV)" in (
        repro.stdout
    )
    # Served from the cache: a worker that would now exit instead is never asked.
    again = run_models(tmp_path, folder, *cache, env={FAULT_ENV: f"exit:{record.id}"})
    assert again.returncode == 1, again.stdout + again.stderr
    assert read_records(tmp_path / "results")[-1].detail == record.detail
