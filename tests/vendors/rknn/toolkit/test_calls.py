"""The folder on every toolkit process's PYTHONPATH is this user's alone: one that another user
made first in the shared temporary folder, or that others may change, is never imported from."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import harness
from harness.vendors.rknn.toolkit.calls import harness_env, harness_only_folder

# What another user would leave in the folder: it runs at the start of every Python process
# that has the folder on its path.
SITECUSTOMIZE = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\n"


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This process's temporary folder, for a fresh ``harness_only_folder``."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    harness_only_folder.cache_clear()
    yield tmp_path
    harness_only_folder.cache_clear()


def imports_harness_only(folder: Path, marker: Path) -> None:
    """A child with ``harness_env`` started in ``folder`` imports this harness and runs
    nothing else from there."""
    child = subprocess.run(
        [sys.executable, "-c", "import harness; print(harness.__file__)"],
        env=harness_env(),
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(child.stdout.strip()).resolve() == Path(harness.__file__).resolve()
    assert not marker.exists()


def test_the_folder_is_made_private(temp: Path) -> None:
    folder = Path(harness_only_folder())
    assert folder.parent == temp
    assert folder.stat().st_uid == os.getuid()
    assert folder.stat().st_mode & 0o777 == 0o700
    imports_harness_only(folder, temp / "ran")


def test_a_folder_others_can_change_is_replaced_by_a_fresh_private_one(temp: Path) -> None:
    taken = Path(harness_only_folder())
    harness_only_folder.cache_clear()
    marker = temp / "ran"
    (taken / "sitecustomize.py").write_text(SITECUSTOMIZE.format(marker=str(marker)))
    taken.chmod(0o777)  # as another user's folder made first would be (or one loosened since)
    with pytest.warns(UserWarning, match=rf"{taken} has mode 0777: others can change it"):
        folder = Path(harness_only_folder())
    assert folder != taken
    assert folder.stat().st_mode & 0o777 == 0o700
    assert sorted(p.name for p in folder.iterdir()) == ["harness"]
    imports_harness_only(folder, marker)


@pytest.mark.skipif(os.getuid() != 0, reason="making another user's folder takes root")
def test_another_users_folder_is_never_used(temp: Path) -> None:
    taken = Path(harness_only_folder())
    harness_only_folder.cache_clear()
    os.chown(taken, 65534, 65534)  # mode 0700 still: its owner alone can change it
    with pytest.warns(UserWarning, match=rf"{taken} belongs to uid 65534"):
        folder = Path(harness_only_folder())
    assert folder != taken
    assert folder.stat().st_uid == os.getuid()
