"""The built wheel works on its own: installed (not editable) into a fresh virtual environment,
it runs a case on a loopback board with the board runner it ships as package data.

The virtual environment gets only the wheel; the heavy dependencies (numpy, onnx, the toolkit,
paramiko, ...) come from this interpreter's site-packages, added AFTER the environment's own by
a ``.pth`` file, so nothing is downloaded and the wheel's ``harness`` is the one imported.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import numpy as np
import pytest
from tests.fakes.sshd import onnx_model
from tests.helpers import paths

from harness.boards.inventory import Board
from harness.history.schema import HEAD
from harness.vendors.rknn.toolkit.convert import ConversionCache

ROOT = paths.ROOT
RUNNER = "harness/vendors/rknn/runners/board_files/hil_board_runner.py"
PURELIB = "import sysconfig; print(sysconfig.get_paths()['purelib'])"

# Run by the environment's interpreter: one case on the board, and what the board received
# while the session is still open (closing it removes the session folder).
CASE = """
import hashlib, json, sys
from pathlib import Path
import numpy as np
import harness
from harness.boards.inventory import load_board
from harness.targets.job import Job
from harness.vendors.rknn import BOARD_FILES
from harness.vendors.rknn.board import RknnBoardTarget
from harness.vendors.rknn.toolkit.convert import ConversionCache
from harness.vendors.rknn.runtimes import RUNTIMES

board = load_board(Path(sys.argv[1]), RUNTIMES)
x = np.load(sys.argv[3])
job = Job(Path(sys.argv[2]).read_bytes(), [x], board.platform, case_id="relu")
with RknnBoardTarget(board, cache=ConversionCache(Path(sys.argv[4]))) as target:
    observation = target.run(job)
    uploads = sorted(Path(board.workdir).glob("session-*/hil_board_runner.py"))
    uploaded = [hashlib.sha256(path.read_bytes()).hexdigest() for path in uploads]
runner = BOARD_FILES / "hil_board_runner.py"
print(json.dumps({
    "harness": harness.__file__,
    "runner": str(runner),
    "shipped": hashlib.sha256(runner.read_bytes()).hexdigest(),
    "uploaded": uploaded,
    "backend": observation.backend,
    "problem": observation.infra_error or observation.error,
    "output": None if observation.outputs is None else observation.outputs[0].tolist(),
}))
"""


def run(*argv: str | Path, cwd: Path) -> str:
    done = subprocess.run(
        [str(arg) for arg in argv], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from a copy of what it packages (the tree stays clean)."""
    source = tmp_path_factory.mktemp("source")
    shutil.copy(ROOT / "pyproject.toml", source)
    shutil.copy(ROOT / "README.md", source)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "harness", source / "harness", ignore=ignore)
    dist = tmp_path_factory.mktemp("dist")
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    run(*pip_wheel, "--no-index", "--quiet", "-w", dist, source, cwd=source)
    (built,) = dist.glob("npu_hil-*.whl")
    return built


@pytest.fixture(scope="module")
def environment(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(interpreter, site-packages) of a fresh virtual environment holding only the wheel."""
    root = tmp_path_factory.mktemp("venv")
    venv.create(root, with_pip=False)
    python = root / "bin" / "python"
    # The wheel goes in before this interpreter's packages are visible, so that pip sees no
    # npu-hil already installed there.
    install = [sys.executable, "-m", "pip", "--python", python, "install", "--no-deps"]
    run(*install, "--no-index", "--quiet", wheel, cwd=root)
    site = Path(run(python, "-c", PURELIB, cwd=root).strip())
    # A .pth file's folders go on sys.path after the site-packages holding it.
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (site / "zz-npu-hil-test-dependencies.pth").write_text("".join(f"{p}\n" for p in ours))
    return python, site


def test_the_wheel_ships_the_board_files(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert RUNNER in names
    assert "harness/vendors/rknn/data/sdk-recipes.yaml" in names  # hil sdk install reads it
    # The catalogue: the seeds' YAML and every version of the operator lists (hil docs).
    assert "harness/vendors/rknn/data/rknn2-2.5.0/rk3562-operators.yaml" in names
    assert "harness/documented/operators.schema.yaml" in names
    assert "harness/vendors/rknn/data/rknn2-2.5.0/model-io.yaml" in names
    # the host references read it at import; a user's model's allowed CPU layers
    assert "harness/models/wrong-references.yaml" in names
    assert "harness/vendors/rknn/data/cpu-placements.yaml" in names
    lists = ROOT / "harness/vendors/rknn/data/operator-list"
    shipped = sorted(p.relative_to(ROOT).as_posix() for p in lists.rglob("*.yaml"))
    assert len(shipped) > 20 and all(path in names for path in shipped)
    sources = sorted((ROOT / "harness/vendors/rknn/runners/board_files/c-runner").iterdir())
    assert sources and all(
        f"harness/vendors/rknn/runners/board_files/c-runner/{path.name}" in names
        for path in sources
    )


def test_an_installed_wheel_creates_a_history_store_with_its_own_migrations(
    environment: tuple[Path, Path], tmp_path: Path
) -> None:
    python, site = environment
    store = tmp_path / "history.sqlite"
    code = (
        "import sys\n"
        "from harness.history.store import MIGRATIONS, Store\n"
        "Store.open(sys.argv[1]).close()\n"
        "print(MIGRATIONS)\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [str(python), "-c", code, str(store)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(site)  # the wheel's own migrations
    with sqlite3.connect(store) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
        (revision,) = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    assert {"runs", "records"} <= tables
    assert revision == HEAD


def test_an_installed_wheel_runs_a_case_on_a_board_with_its_own_runner(
    environment: tuple[Path, Path],
    loopback_board: Board,
    board_cache: ConversionCache,
    tmp_path: Path,
) -> None:
    python, site = environment
    model, inputs = tmp_path / "relu.onnx", tmp_path / "x.npy"
    model.write_bytes(onnx_model("Relu"))
    x = np.linspace(-2, 2, 48, dtype=np.float32).reshape(1, 3, 4, 4)
    np.save(inputs, x)
    argv = [loopback_board.source, model, inputs, board_cache.directory]
    # -I: neither the working directory nor PYTHONPATH may put the source tree first.
    report = json.loads(run(python, "-I", "-c", CASE, *argv, cwd=tmp_path))

    assert Path(report["harness"]).is_relative_to(site), report["harness"]
    assert Path(report["runner"]).is_relative_to(site), report["runner"]
    source_runner = hashlib.sha256((ROOT / RUNNER).read_bytes()).hexdigest()
    assert report["uploaded"] == [report["shipped"]] == [source_runner]
    assert report["backend"] == loopback_board.name and report["problem"] is None
    np.testing.assert_allclose(report["output"], np.maximum(x, 0), atol=2e-3)
