"""Names from outside that become paths (hardening, round 3): a repro bundle received from
someone else names its dataset; the script reads nothing outside the bundle's folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.bundles import template


@pytest.mark.parametrize(
    ("dataset", "listing"),
    [
        ("../../outside.txt", None),
        ("/etc/passwd", None),
        ("dataset.txt", "dataset/sample0_input0.npy ../../../etc/passwd\n"),
        ("dataset.txt", "/etc/hostname\n"),
    ],
)
def test_a_bundle_whose_dataset_lies_outside_it_cannot_run(
    tmp_path: Path, dataset: str, listing: str | None
) -> None:
    bundle = tmp_path / "bundle"
    (bundle / "inputs").mkdir(parents=True)
    (bundle / "reference").mkdir()
    (bundle / "reproduce.py").write_text(template(), encoding="utf-8")
    toolkit = {"target_platform": "rk3562", "do_quantization": True, "dataset": dataset}
    (bundle / "toolkit.json").write_text(json.dumps(toolkit))
    if listing is not None:
        (bundle / "dataset.txt").write_text(listing)
    case = {"id": "rk3562/Pow/int8/values=2", "op": "Pow", "dtype": "int8", "verdict": "confirmed"}
    (bundle / "case.json").write_text(json.dumps(case))
    run = subprocess.run(
        [sys.executable, str(bundle / "reproduce.py")], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "CANNOT RUN: the bundle is incomplete or damaged" in run.stdout
    assert "dataset names files outside the bundle" in run.stdout
