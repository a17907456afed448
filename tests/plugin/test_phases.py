"""The plugin's phases as a real ``pytest suites/...`` process goes through them: the run
configuration generates each catalogue's cases once per collection, and ``--collect-only``
builds no run metadata and contacts no board."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import boards, paths

ROOT = paths.ROOT
# pytest in this process with operator_cases, the run metadata, the history entry, the
# baseline and the board checks counted, before the plugin (the pytest11 entry point) imports
# them
COUNTED = """
import json, sys
import pytest
from harness.cases import operators
from harness.plugin import boards, configure, run_policy

calls = {name: 0 for name in ("operator_cases", "metadata", "history", "baseline", "boards")}

def counted(name, call):
    def wrapper(*args, **kwargs):
        calls[name] += 1
        return call(*args, **kwargs)
    return wrapper

configure.operator_cases = counted("operator_cases", operators.operator_cases)
configure.RunConfig.metadata = counted("metadata", configure.RunConfig.metadata)
run_policy.history_entry = counted("history", run_policy.history_entry)
run_policy.RunPolicy._baseline = counted("baseline", run_policy.RunPolicy._baseline)
boards.choose_boards = counted("boards", boards.choose_boards)
status = pytest.main(sys.argv[1:])
print("CALLS " + json.dumps(calls))
sys.exit(status)
"""


def counted(tmp_path: Path, *args: str) -> tuple[int, dict[str, int]]:
    command = [sys.executable, "-c", COUNTED, str(ROOT / "suites" / "test_operators.py")]
    # no case list cache: each generation of the cases counts
    command += ["-p", "no:cacheprovider", "-q", "--platform", "rk3588", "--hil-db", "off"]
    command += ["--hil-case-cache", "off"]
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
    assert calls == {"operator_cases": 1, "metadata": 1, "history": 1, "baseline": 1, "boards": 1}
    run_json = json.loads((tmp_path / "results" / "run.json").read_text())
    assert run_json["platform"] == "rk3588" and run_json["unprobed"]


def test_collect_only_builds_no_run_metadata_and_contacts_no_board(tmp_path: Path) -> None:
    # a board of the platform that a run would check first (nothing listens on its port)
    board_files = tmp_path / "boards"
    boards.write(board_files, boards.board_doc(host="127.0.0.1", port=9))
    status, calls = counted(
        tmp_path,
        "--collect-only",
        "-k",
        "Min and int8",
        "--backend",
        "board",
        "--boards",
        str(board_files),
    )
    assert status == 0
    assert calls == {"operator_cases": 1, "metadata": 0, "history": 0, "baseline": 0, "boards": 0}
    assert not (tmp_path / "results" / "run.json").exists()
