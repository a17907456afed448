"""Where the simulator's case folders go: /dev/shm when it is a roomy tmpfs, else TMPDIR's."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from tests.helpers.caches import job

from harness.models.budget import DEFAULT_BYTES
from harness.vendors.rknn.toolkit.simulator import SimulatorPool
from harness.vendors.rknn.toolkit.simulator.pool import FOLDER_PREFIX
from harness.vendors.rknn.toolkit.simulator.scratch import ROOM_FOR, SHARED_MEMORY, scratch_folder


def roomy_shared_memory() -> bool:
    """A tmpfs at /dev/shm with room for the default size budget's models."""
    if not Path("/proc/self/mounts").exists():
        return False
    with open("/proc/self/mounts") as mounts:
        if not any(line.split()[1:3] == [str(SHARED_MEMORY), "tmpfs"] for line in mounts):
            return False
    free = os.statvfs(SHARED_MEMORY)
    return free.f_bavail * free.f_frsize >= ROOM_FOR * DEFAULT_BYTES


needs_tmpfs = pytest.mark.skipif(
    not roomy_shared_memory(), reason="no tmpfs at /dev/shm with room on this host"
)


@pytest.fixture
def no_tmpdir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() looks again


@needs_tmpfs
@pytest.mark.usefixtures("no_tmpdir")
def test_a_case_runs_in_a_folder_in_shared_memory_removed_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HIL_MAX_BYTES", raising=False)  # the default budget
    with SimulatorPool() as pool:
        observation = pool.run(job(3))
    assert observation.outputs is not None, observation.infra_error
    # the toolkit's log names where it wrote the compiled model: the case folder
    assert f"{SHARED_MEMORY}/{FOLDER_PREFIX}{os.getpid()}-" in observation.log
    assert not list(SHARED_MEMORY.glob(f"{FOLDER_PREFIX}{os.getpid()}-*"))


@needs_tmpfs
@pytest.mark.usefixtures("no_tmpdir")
def test_a_budget_shared_memory_has_no_room_for_keeps_case_folders_in_the_temporary_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HIL_MAX_BYTES", raising=False)  # the default budget has room
    assert scratch_folder() == SHARED_MEMORY
    free = os.statvfs(SHARED_MEMORY)
    monkeypatch.setenv("HIL_MAX_BYTES", str(free.f_bavail * free.f_frsize))  # room for one
    assert scratch_folder() == Path(tempfile.gettempdir())


def test_a_tmpdir_that_is_set_always_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    assert scratch_folder() == tmp_path
    with SimulatorPool() as pool:
        observation = pool.run(job(3))
    assert f"{tmp_path}/{FOLDER_PREFIX}{os.getpid()}-" in observation.log


@needs_tmpfs
def test_a_case_folder_in_shared_memory_of_a_process_gone_is_removed_by_the_next_pool() -> None:
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    left = SHARED_MEMORY / f"{FOLDER_PREFIX}{int(ended.stdout)}-left"
    left.mkdir()
    (left / "toolkit.log").write_text("a case killed by SIGKILL")
    mine = SHARED_MEMORY / f"{FOLDER_PREFIX}{os.getpid()}-mine"  # this process is alive
    mine.mkdir()
    try:
        SimulatorPool().close()
        assert not left.exists()
        assert mine.is_dir()
    finally:
        for folder in (left, mine):
            if folder.exists():
                (folder / "toolkit.log").unlink(missing_ok=True)
                folder.rmdir()
