"""A real ``pytest suites/...`` run on a few Pow cases, and known-issues files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from tests.helpers.paths import ROOT, SUITE

from harness.results.records import CaseRecord

POW_0 = "rk3562/Pow/float16/values=0"  # violation on 2.5.0
POW_2 = "rk3562/Pow/float16/values=2"  # confirmed on 2.5.0


def run_suite(
    tmp_path: Path, case_ids: list[str], *args: str, results: str = "results", **extra_env: str
) -> subprocess.CompletedProcess[str]:
    node_ids = [f"{SUITE}::test_documented_limit[{case_id}]" for case_id in case_ids]
    command = [sys.executable, "-m", "pytest", *node_ids, "-p", "no:cacheprovider", "-rA"]
    command += ["--backend", "sim", "--results", str(tmp_path / results), *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **extra_env}  # this checkout's plugin
    env.pop("CI", None)
    return subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env
    )


def known_file(tmp_path: Path, entries: list[dict[str, object]], name: str = "known.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"known_issues": entries}), encoding="utf-8")
    return path


POW_0_ENTRY = {
    "cases": ["rk3562/Pow/*/values=0"],
    "verdict": "violation",
    "reference": "RKNN-123",
    "note": "exponent 0 on the CPU",
    "versions": {"rknn_toolkit2": ["2.5.*"]},
}
STALE_ENTRY = {
    "cases": ["rk3562/NoSuchOp/*"],
    "verdict": "violation",
    "reference": "X-1",
    "note": "",
}


def _record(case_id: str, verdict: str, **versions: str) -> CaseRecord:
    return CaseRecord(
        id=case_id,
        platform="rk3562",
        op="Pow",
        dtype="float16",
        limit="Pow/Y/values",
        value="0",
        documented="supported",
        backend="simulator",
        verdict=verdict,
        versions=dict(versions),
    )
