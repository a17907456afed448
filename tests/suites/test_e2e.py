"""The operator suite as a user runs it: pytest, the plugin, the simulator, the journal.

Each test starts a real ``pytest suites/...`` process (the plugin is loaded through its
pytest11 entry point) on a handful of cases; the expected verdicts are the behaviour of
rknn-toolkit2 2.5.0 measured on the simulator (docs/rknn.md).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from tests.helpers.paths import SUITE

from harness.report.bundle import BundleError, make_bundle
from harness.results.journal import read_records
from harness.vendors import Recipes, vendor_named

regenerate = Recipes(vendor_named("rknn"))

POW_4 = "rk3562/Pow/float16/values=4"
POW_2 = "rk3562/Pow/float16/values=2"
EXPAND_8193 = "rk3562/Expand/float16/[b,c,1,w]:h=8193"
MAXPOOL_8 = "rk3562/MaxPool/float16/kernel_h=8"
POW_INT8_EXPONENT = "rk3562/Pow/float16/exponent_dtype=int8"
POW_0 = "rk3562/Pow/float16/values=0"  # a violation, a known issue (the README's first run)
POW_DOUBLE = "rk3562/Pow/float16/exponent_dtype=double"  # doc drift

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("rknn") is None, reason="rknn-toolkit2 is not installed"
)


def run_suite(
    tmp_path: Path, case_ids: list[str], *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    node_ids = [f"{SUITE}::test_documented_limit[{case_id}]" for case_id in case_ids]
    command = [sys.executable, "-m", "pytest", *node_ids, "-p", "no:cacheprovider"]
    command += ["--results", str(tmp_path / "results"), "--hil-cache", "off", *args]
    return subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env
    )


def verdicts(tmp_path: Path) -> dict[str, str]:
    return {r.id: r.verdict for r in read_records(tmp_path / "results")}


def test_documented_vs_observed_end_to_end(tmp_path):
    junit = tmp_path / "junit.xml"
    run = run_suite(tmp_path, [POW_4, POW_2, EXPAND_8193, MAXPOOL_8], f"--junitxml={junit}")
    assert run.returncode == 0, run.stdout + run.stderr
    assert verdicts(tmp_path) == {
        POW_4: "limit-confirmed",  # exponent 4 is documented unsupported: Pow placed on CPU
        POW_2: "confirmed",
        EXPAND_8193: "doc-drift",  # h=8193 stays on the NPU and is correct
        MAXPOOL_8: "limit-rewritten",  # kernel 8 is split into two NPU MaxPools
    }
    records = {r.id: r for r in read_records(tmp_path / "results")}
    assert any("tiling_maxpool" in rewrite for rewrite in records[MAXPOOL_8].rewrites)
    assert {"op": "Pow", "target": "CPU"}.items() <= next(
        layer for layer in records[POW_4].placement if layer["op"] == "Pow"
    ).items()
    for record in records.values():
        assert record.backend == "simulator"
        assert record.versions["rknn_toolkit2"] == "2.5.0"
        folder = tmp_path / "results" / record.artifacts
        assert {"model.onnx", "build.log", "reproduce.py"} <= {p.name for p in folder.iterdir()}
        arrays = sorted(p.relative_to(folder).parts[0] for p in folder.rglob("*.npy"))
        if record.verdict == "doc-drift":  # a finding: its outputs are kept (under the cap)
            assert set(arrays) == {"observed"}  # the rest is drawn again for a bundle
        else:  # the document holds: model, log and recipe only (--keep-arrays findings)
            assert arrays == []
    assert "npu-hil verdicts" in run.stdout
    assert "DocDriftWarning" in run.stdout
    properties = {
        (case.get("name"), prop.get("name")): prop.get("value")
        for case in ET.parse(junit).iter("testcase")
        for prop in case.iter("property")
    }
    assert properties[(f"test_documented_limit[{POW_4}]", "verdict")] == "limit-confirmed"
    assert properties[(f"test_documented_limit[{POW_4}]", "backend")] == "simulator"
    # a passing case's verdict and cause where CI systems show a passed test's text
    texts = ci_texts(junit)
    assert texts[f"test_documented_limit[{MAXPOOL_8}]"].startswith("limit-rewritten: ")
    # each testcase's time is its own share of the batch the four ran in, not the wait of the
    # batch's first case (which started the simulator)
    for case in ET.parse(junit).iter("testcase"):
        own = float(properties[(case.get("name"), "duration_s")])
        assert 0 <= float(case.get("time", "")) - own < 0.5, (case.get("name"), own)
    assert texts[f"test_documented_limit[{EXPAND_8193}]"].startswith("doc-drift: ")


def ci_texts(junit: Path) -> dict[str, str]:
    """Per testcase what Jenkins and GitLab show of it: its system-out, or the message of its
    failure or skip."""
    texts = {}
    for case in ET.parse(junit).iter("testcase"):
        marks = [mark for mark in case if mark.tag in ("failure", "skipped")]
        texts[str(case.get("name"))] = case.findtext("system-out") or (
            marks[0].get("message", "") if marks else ""
        )
    return texts


def test_a_bound_that_cannot_be_probed_alone_names_the_limit_deciding_it(tmp_path):
    # ONNX wants a pad below the kernel: pad 7 ([0,7], inside) needs kernel 8 (outside).
    pad_7 = "rk3562/MaxPool/float16/pad_top=7"
    run = run_suite(tmp_path, [pad_7])
    assert run.returncode == 1, run.stdout + run.stderr  # the NPU gets it wrong
    (record,) = read_records(tmp_path / "results")
    assert record.verdict == "wrong-result"
    assert record.limit == "MaxPool/attr/pad/pad_top"
    assert record.deciding_limit == "MaxPool/attr/kernel_shape/kernel_h"
    assert record.detail.endswith(
        "[decided by MaxPool/attr/kernel_shape/kernel_h; not isolable: needs kernel_h=8]"
    )
    assert "decided by MaxPool/attr/kernel_shape/kernel_h" in run.stdout


def test_a_bundle_draws_again_the_arrays_keep_arrays_all_would_keep(tmp_path):
    assert run_suite(tmp_path, [POW_2]).returncode == 0
    with pytest.raises(BundleError, match="no inputs: the folder keeps what cannot be drawn"):
        make_bundle(tmp_path / "results", POW_2)  # nothing to draw them with
    drawn = make_bundle(tmp_path / "results", POW_2, regenerate=regenerate)
    drawn_files = _arrays(drawn)
    assert {path.split("/")[0] for path in drawn_files} == {"inputs", "reference", "reference-ort"}
    assert run_suite(tmp_path, [POW_2], "--keep-arrays", "all").returncode == 0
    (record,) = read_records(tmp_path / "results")
    kept = _arrays(tmp_path / "results" / record.artifacts)
    assert set(kept) == set(drawn_files) | {"observed/0_Y.npy"}
    assert all(kept[name] == drawn_files[name] for name in drawn_files)  # the same bytes


def _arrays(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.npy")}


def test_strict_docs_fails_on_drift(tmp_path):
    run = run_suite(tmp_path, [EXPAND_8193], "--strict-docs")
    assert run.returncode == 1
    assert "doc-drift" in run.stdout


def test_violation_fails_and_leaves_a_bundle(tmp_path):
    run = run_suite(tmp_path, [POW_INT8_EXPONENT, EXPAND_8193], "--keep-arrays", "failures")
    assert run.returncode == 1
    assert verdicts(tmp_path) == {POW_INT8_EXPONENT: "violation", EXPAND_8193: "doc-drift"}
    bundles = list((tmp_path / "results" / "bundles").glob("*.tar.gz"))
    assert len(bundles) == 1
    folders = {r.id: tmp_path / "results" / r.artifacts for r in read_records(tmp_path / "results")}
    assert not list(folders[POW_INT8_EXPONENT].glob("inputs/*.npy"))  # drawn again, not kept
    with tarfile.open(bundles[0]) as tar:  # ... into the bundle
        assert any("/inputs/" in name for name in tar.getnames())
    assert not list(folders[EXPAND_8193].rglob("*.npy"))  # --keep-arrays failures: not drift


def test_resume_skips_finished_cases(tmp_path):
    assert run_suite(tmp_path, [POW_4, POW_2]).returncode == 0
    run = run_suite(tmp_path, [POW_4, POW_2, EXPAND_8193], "--resume", "-rs")
    assert run.returncode == 0
    assert "2 skipped" in run.stdout
    lines = (tmp_path / "results" / "journal.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [POW_4, POW_2, EXPAND_8193]


def test_a_hanging_toolkit_is_an_error_not_a_failure(tmp_path):
    env = {**os.environ, "NPU_HIL_SIM_FAULT": f"hang:{POW_2}"}
    run = run_suite(tmp_path, [POW_2, POW_4], "--hil-timeout", "5", env=env)
    assert run.returncode == 1
    assert "1 passed, 1 error" in run.stdout
    assert verdicts(tmp_path) == {POW_2: "infra-error", POW_4: "limit-confirmed"}


def test_parallel_workers_keep_the_journal_whole(tmp_path):
    run = run_suite(tmp_path, [POW_4, POW_2, EXPAND_8193, MAXPOOL_8], "-n", "2")
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(verdicts(tmp_path)) == 4
    assert "npu-hil verdicts" in run.stdout


def test_ci_sees_every_verdict_and_two_workers_call_no_unselected_entry_stale(tmp_path):
    """The README's first run (Pow's float16 cases, the shipped known issues) on two xdist
    workers with --junitxml: the doc drift's verdict is in its testcase's system-out, a known
    violation's in its skipped message; the known-issue entries of the cases -m and -k left
    out are counted as not selected, not stale, though the workers, not the controller,
    deselected them."""
    junit = tmp_path / "junit.xml"
    command = [sys.executable, "-m", "pytest", str(SUITE.parent), "-m", "float16", "-k", "Pow"]
    command += ["-n", "2", "-p", "no:cacheprovider", "--results", str(tmp_path / "results")]
    command += ["--hil-cache", "off", "--known-issues", "vendor", f"--junitxml={junit}"]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    texts = ci_texts(junit)
    assert texts[f"test_documented_limit[{POW_DOUBLE}]"].startswith("doc-drift: ")
    assert texts[f"test_documented_limit[{POW_0}]"].startswith("violation (known issue")
    (line,) = [line for line in run.stdout.splitlines() if "known-issues: " in line]
    assert " 0 stale entries, " in line and " for cases not selected" in line, run.stdout
