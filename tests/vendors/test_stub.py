"""A vendor from another distribution, through the seam: a scratch package outside harness/.

The stub is what a new vendor needs at least: one module (``STUB``: its ``Vendor`` record, one
platform, one operator with one documented rule, no simulator, no board target), its operator
table as data (``TABLE``) and the distribution's metadata naming the record under the
``npu_hil.vendors`` entry-point group. A real ``pytest suites`` process finds it there,
collects its operator cases without an error from the suites of the vendors it is not, and
marks them not runnable on this host, with the reason, when it runs them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import paths

ROOT = paths.ROOT
STUB = '''\
"""A scratch NPU vendor: one platform, one operator, one rule, no simulator."""

from pathlib import Path

from harness.documented.operators import OperatorCatalogue, load_operators
from harness.vendors.base import Vendor

TABLE = Path(__file__).with_name("stub-operators.yaml")


def operators(platform: str) -> OperatorCatalogue:
    return load_operators(TABLE, ("npx1",))


VENDOR = Vendor(name="stub", platforms=("npx1",), documents=dict, operators=operators)
'''
TABLE = """\
sdk: stub-1.0
platform: npx1
source: {file: stub.txt, title: Stub NPU operators, document: Stub NPU Guide 1.0, pages: "1"}
operators:
  Hardmax:
    section: "2.1"
    inputs:
      - {name: input, types: [T1], shape: "[batch,channel,height,width]"}
    outputs:
      - {name: output, types: [T1], shape: "[batch,channel,height,width]"}
    dtypes:
      T1: {options: {float16: Tensor}, text: "T1:float16(Tensor)"}
    attributes:
      axis: {type: int, values: [1], text: "The axis for hardmax: 1"}
"""
METADATA = {
    "METADATA": "Metadata-Version: 2.1\nName: hil-stub-vendor\nVersion: 0.1\n",
    "entry_points.txt": "[npu_hil.vendors]\nstub = stubvendor:VENDOR\n",
}
NOT_RUNNABLE = "vendor stub has no simulator and no board of the platform is configured"


@pytest.fixture
def stub_site(tmp_path: Path) -> Path:
    """A folder holding the stub distribution, as pip would install it."""
    site = tmp_path / "site"
    (site / "hil_stub_vendor-0.1.dist-info").mkdir(parents=True)
    (site / "stubvendor.py").write_text(STUB)
    (site / "stub-operators.yaml").write_text(TABLE)
    for name, text in METADATA.items():
        (site / "hil_stub_vendor-0.1.dist-info" / name).write_text(text)
    return site


def _pytest(site: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = [str(site), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    command = [sys.executable, "-m", "pytest", "suites", "--vendor", "stub", "--platform", "NPX1"]
    command += ["-p"]
    command += ["no:cacheprovider", "--results", str(tmp_path / "results"), *args]
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_stub_counts_one_module_under_60_lines() -> None:
    assert len(STUB.splitlines()) < 60
    assert len(TABLE.splitlines()) < 20


def test_collecting_the_stubs_platform_collects_its_cases_and_no_other_vendors(
    stub_site: Path, tmp_path: Path
) -> None:
    done = _pytest(stub_site, tmp_path, "--collect-only", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    cases = [line for line in done.stdout.splitlines() if "[npx1/Hardmax/" in line]
    assert len(cases) == 9, done.stdout  # the typical cases and the axis values, two dtypes
    assert any("[npx1/Hardmax/float16/axis=2]" in line for line in cases)
    assert "error" not in done.stdout.lower(), done.stdout
    # another vendor's suite is collected as one skipped item, not as an error
    assert "suites/test_model_io.py::test_documented_io[vendor]" in done.stdout


def test_a_run_without_simulator_marks_the_cases_not_runnable_here(
    stub_site: Path, tmp_path: Path
) -> None:
    done = _pytest(stub_site, tmp_path, "-q", "-rs", "-k", "Hardmax or documented_io")
    assert done.returncode == 0, done.stdout + done.stderr
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    # -rs counts the cases skipped for one reason: the nine operator cases
    mine = [line for line in skipped if NOT_RUNNABLE in line]
    assert len(mine) == 1, done.stdout
    assert re.fullmatch(rf"SKIPPED \[9\] suites/test_operators.py:\d+: {NOT_RUNNABLE}: .*", mine[0])
    assert mine[0].endswith("not runnable on this host")
    other = "suite 'model-io' is vendor rknn's; this run's vendor is stub"
    assert f"SKIPPED [1] suites/test_model_io.py: {other}" in skipped, done.stdout
    assert "10 skipped" in done.stdout, done.stdout
    assert not (tmp_path / "results" / "journal.jsonl").exists()  # nothing ran, nothing judged
