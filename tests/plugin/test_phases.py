"""The plugin's phases as a real ``pytest suites/...`` process goes through them: the run
configuration generates each catalogue's cases once per collection, and ``--collect-only``
builds no run metadata."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import paths

ROOT = paths.ROOT
# pytest in this process with operator_cases and the run metadata counted, before the plugin
# (the pytest11 entry point) imports them
COUNTED = """
import json, sys
import pytest
from harness.cases import operators
from harness.plugin import configure

calls = {"operator_cases": 0, "metadata": 0}
generate, metadata = operators.operator_cases, configure.RunConfig.metadata

def counted_cases(*args, **kwargs):
    calls["operator_cases"] += 1
    return generate(*args, **kwargs)

def counted_metadata(*args, **kwargs):
    calls["metadata"] += 1
    return metadata(*args, **kwargs)

configure.operator_cases = counted_cases
configure.RunConfig.metadata = counted_metadata
status = pytest.main(sys.argv[1:])
print("CALLS " + json.dumps(calls))
sys.exit(status)
"""


def counted(tmp_path: Path, *args: str) -> tuple[int, dict[str, int]]:
    command = [sys.executable, "-c", COUNTED, str(ROOT / "suites" / "test_operators.py")]
    command += ["-p", "no:cacheprovider", "-q", "--platform", "rk3588", "--hil-db", "off"]
    command += ["--results", str(tmp_path / "results"), *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's plugin
    run = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("CALLS ")]
    assert lines, run.stdout + run.stderr
    return run.returncode, json.loads(lines[-1].removeprefix("CALLS "))


def test_a_run_generates_the_operator_cases_once_for_its_metadata_and_collection(
    tmp_path: Path,
) -> None:
    # every case deselected: the run writes its run.json and collects, and runs nothing
    status, calls = counted(tmp_path, "-k", "no_such_case")
    assert status == 5  # no test ran
    assert calls == {"operator_cases": 1, "metadata": 1}
    run_json = json.loads((tmp_path / "results" / "run.json").read_text())
    assert run_json["platform"] == "rk3588" and run_json["unprobed"]


def test_collect_only_builds_no_run_metadata(tmp_path: Path) -> None:
    status, calls = counted(tmp_path, "--collect-only", "-k", "Min and int8")
    assert status == 0
    assert calls == {"operator_cases": 1, "metadata": 0}
    assert not (tmp_path / "results" / "run.json").exists()
