"""A repro bundle tried as the vendor would: unpacked into an empty folder and run by a fresh
virtual environment holding rknn-toolkit2 and what it imports (the SDK recipe of the tox
environment's release), npu-hil nowhere. Installing it takes minutes: the full checks (and CI)
run it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from tests.helpers.marks import needs_toolkit
from tests.helpers.user_models import five_node_model

from harness.cli import main
from harness.vendors.rknn.toolkit.calls import toolkit_version
from harness.vendors.rknn.toolkit.sdk import load_recipes

SETTINGS = {
    "mean_values": [[0.5, 0.5, 0.5, 0.5]],
    "std_values": [[0.5, 0.5, 0.5, 0.5]],
    "optimization_level": 2,
}
INSTALL_S = 1800  # pip from the index or its cache, on a loaded machine


@pytest.fixture(scope="module")
def vendor_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with only the toolkit (``--no-deps``, its pins cannot be met) and the
    packages its recipe names; neither npu-hil nor its own packages."""
    recipe = load_recipes().get(toolkit_version())
    venv = tmp_path_factory.mktemp("vendor") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    for packages in (["--no-deps", recipe.toolkit], list(recipe.packages)):
        done = subprocess.run([*pip, *packages], capture_output=True, text=True, timeout=INSTALL_S)
        assert done.returncode == 0, done.stderr[-2000:]
    alone = subprocess.run([str(python), "-c", "import harness"], capture_output=True, cwd=venv)
    assert alone.returncode != 0  # npu-hil is not there to lean on
    return python


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packed bundle of a user model's per-layer case, built with the user's settings:
    its dilated AveragePool's output is wrong (tests/modelfiles/test_user_models.py)."""
    here = tmp_path_factory.mktemp("user")
    onnx.save(five_node_model(), here / "five.onnx")
    (here / "settings.yaml").write_text(json.dumps(SETTINGS), encoding="utf-8")
    results = here / "results"
    argv = ["run", str(here / "five.onnx"), "--platform", "rk3562", "--layers"]
    argv += ["--toolkit-config", str(here / "settings.yaml"), "--results", str(results)]
    assert main([*argv, "--hil-cache", str(here / "cache")]) == 1
    [packed] = (results / "bundles").glob("rk3562_model_five_float16*.tar.gz")  # what a user sends
    return packed


def _unpacked(packed: Path, into: Path) -> Path:
    into.mkdir()
    with tarfile.open(packed) as tar:
        tar.extractall(into, filter="data")
    [folder] = into.iterdir()
    return folder


def _reproduce(python: Path, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    log = folder.parent / "reproduce.log"
    return subprocess.run(
        [str(python), "reproduce.py", "--log", str(log), *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "HOME": str(folder.parent)},  # nothing of this checkout
    )


@needs_toolkit
def test_the_bundle_reproduces_with_the_users_settings_and_names_the_wrong_layer(
    vendor_python: Path, bundle: Path, tmp_path: Path
) -> None:
    folder = _unpacked(bundle, tmp_path / "empty")
    run = _reproduce(vendor_python, folder)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"settings: {json.dumps(SETTINGS)}" in run.stdout
    assert "output 0 (pooled): MISMATCH: shape (1, 4, 10, 10), expected (1, 4, 8, 8)" in (
        run.stdout
    )
    assert "REPRODUCED: wrong-result" in run.stdout
    assert "mean_values/std_values" in (tmp_path / "empty" / "reproduce.log").read_text()


@needs_toolkit
def test_what_differs_from_the_record_is_exit_1(
    vendor_python: Path, bundle: Path, tmp_path: Path
) -> None:
    folder = _unpacked(bundle, tmp_path / "empty")
    # a record whose pooled output matched the reference: the rerun's mismatch differs
    np.save(folder / "observed" / "0_pooled.npy", np.load(folder / "reference" / "0_pooled.npy"))
    run = _reproduce(vendor_python, folder)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "NOT REPRODUCED: result differ from the record (wrong-result)" in run.stdout


@needs_toolkit
def test_no_board_and_a_damaged_bundle_are_exit_2(
    vendor_python: Path, bundle: Path, tmp_path: Path
) -> None:
    folder = _unpacked(bundle, tmp_path / "empty")
    run = _reproduce(vendor_python, folder, "--target", "rk3562", "--device-id", "nosuch")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "CANNOT RUN: no board: init_runtime found no rk3562 board nosuch" in run.stdout
    shutil.rmtree(folder / "inputs")
    run = _reproduce(vendor_python, folder)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "CANNOT RUN: the bundle is incomplete or damaged" in run.stdout
