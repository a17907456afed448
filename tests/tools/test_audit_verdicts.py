"""tools/audit_verdicts.py on a real results folder: a short simulator run of the operator
suite (its own pytest process, keeping every array), audited by the script in its own process
with rknn-toolkit2 alone; then the same folder without the kept inputs and calibration sets
(what a default run keeps), with records falsified, which the audit must call disagreeing."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.paths import ROOT, SUITE

SCRIPT = ROOT / "tools" / "audit_verdicts.py"
# The toolkit's behaviour on these is docs/report.md's (rknn-toolkit2 2.5.0, simulator).
CASES = {
    "rk3562/Pow/float16/values=2": "confirmed",
    "rk3562/Pow/float16/values=4": "limit-confirmed",  # Pow on the CPU
    "rk3562/MaxPool/float16/kernel_h=8": "limit-rewritten",  # tiled into two MaxPools
    "rk3562/MaxPool/float16/pad_top=7": "wrong-result",
    "rk3562/Pow/int8/values=2": "confirmed",  # an int8 case: its calibration set is drawn
}

needs_toolkit = pytest.mark.skipif(
    importlib.util.find_spec("rknn") is None, reason="rknn-toolkit2 is not installed"
)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results folder of a simulator run of CASES (nothing cached: a real toolkit run),
    every case folder keeping its inputs and calibration set."""
    folder = tmp_path_factory.mktemp("suite")
    node_ids = [f"{SUITE}::test_documented_limit[{case_id}]" for case_id in CASES]
    command = [sys.executable, "-m", "pytest", *node_ids, "-p", "no:cacheprovider"]
    command += ["--results", str(folder / "results"), "--hil-cache", "off", "--hil-db", "off"]
    command += ["--keep-arrays", "all"]
    run = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stdout + run.stderr  # the wrong result fails its test
    recorded = {record["id"]: record["verdict"] for record in journal(folder / "results")}
    assert recorded == CASES
    return folder / "results"


def journal(results: Path) -> list[dict[str, Any]]:
    lines = (results / "journal.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def audit(results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(SCRIPT), str(results), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def lines_of(run: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """The audit's line per case, by case id."""
    cases = {}
    for line in run.stdout.splitlines():
        for case_id in CASES:
            if f" {case_id} (" in line:
                cases[case_id] = line
    return cases


def layers(line: str) -> tuple[str, str]:
    """The recorded and the rerun layers an audit line names."""
    found = re.search(r"layers recorded \[(.*?)\] rerun \[(.*?)\]", line)
    assert found, line
    return found[1], found[2]


@needs_toolkit
def test_the_toolkit_rerun_agrees_with_every_verdict(results: Path) -> None:
    int8 = next(r for r in journal(results) if r["id"] == "rk3562/Pow/int8/values=2")
    assert list((results / int8["artifacts"] / "dataset").glob("*.npy"))  # read, not drawn
    run = audit(results, "--count", "10", "--seed", "3", "--platform", "rk3562")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1] == "5 agree, 0 disagree"
    lines = lines_of(run)
    assert set(lines) == set(CASES)
    for case_id, verdict in CASES.items():
        assert lines[case_id].startswith("agree "), lines[case_id]
        assert f"({verdict}; inputs kept" in lines[case_id]
    assert "inputs kept, calibration kept)" in lines["rk3562/Pow/int8/values=2"]
    assert layers(lines["rk3562/Pow/float16/values=4"]) == ("Conv@NPU, Pow@CPU",) * 2
    assert (
        layers(lines["rk3562/MaxPool/float16/kernel_h=8"])
        == ("Conv@NPU, MaxPool@NPU x2, Conv@NPU",) * 2
    )
    assert (
        "recorded ran, mismatch, rerun ran, mismatch" in lines["rk3562/MaxPool/float16/pad_top=7"]
    )


@needs_toolkit
def test_a_falsified_placement_or_result_is_a_disagreement(results: Path, tmp_path: Path) -> None:
    falsified = tmp_path / "results"
    shutil.copytree(results, falsified)
    for kept in [*falsified.glob("cases/*/inputs"), *falsified.glob("cases/*/dataset")]:
        shutil.rmtree(kept)  # the audit draws its own inputs and int8 calibration set
    records = {record["id"]: record for record in journal(results)}
    pow2 = records["rk3562/Pow/float16/values=2"]
    for layer in pow2["placement"]:
        if layer["op"] == "Pow":
            layer["target"] = "CPU"
    wrong = records["rk3562/MaxPool/float16/pad_top=7"]
    for check in wrong["checks"]:
        if check["prop"] == "result":
            check["status"] = "confirmed"
    int8 = records["rk3562/Pow/int8/values=2"]  # left as it is
    text = "".join(json.dumps(record) + "\n" for record in (pow2, wrong, int8))
    (falsified / "journal.jsonl").write_text(text)
    run = audit(falsified, "--count", "3")
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1] == "1 agree, 2 disagree"
    lines = lines_of(run)
    assert lines["rk3562/Pow/int8/values=2"].startswith("agree ")
    assert "inputs drawn, calibration drawn)" in lines["rk3562/Pow/int8/values=2"]
    assert layers(lines["rk3562/Pow/float16/values=2"]) == (
        "Conv@NPU, Pow@CPU",
        "Conv@NPU, Pow@NPU",
    )
    assert lines["rk3562/MaxPool/float16/pad_top=7"].startswith("DISAGREE ")
    assert "recorded ran, match, rerun ran, mismatch" in lines["rk3562/MaxPool/float16/pad_top=7"]


def test_without_records_to_draw_it_cannot_run(tmp_path: Path) -> None:
    missing = audit(tmp_path)
    assert missing.returncode == 2
    assert f"{tmp_path / 'journal.jsonl'}: cannot read the journal" in missing.stdout
    path = tmp_path / "journal.jsonl"
    path.write_text('{"id": "rk3562/Pow/float16/values=2"}\n{"id"')  # a run killed mid-line
    unfinished = audit(tmp_path)
    assert unfinished.returncode == 2
    assert "no record to draw among 1" in unfinished.stdout  # the unfinished line skipped
    path.write_text('{"id"\n{"id": "rk3562/Pow/float16/values=2"}\n')
    damaged = audit(tmp_path)
    assert damaged.returncode == 2
    assert f"{path}, line 1: not a journal record" in damaged.stdout


def test_the_script_uses_no_harness_code() -> None:
    tree = ast.parse(SCRIPT.read_text())
    imported = {
        name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for name in (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
        )
    }
    assert imported and "harness" not in imported and "tests" not in imported
