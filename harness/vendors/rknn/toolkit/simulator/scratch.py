"""Where the simulator's case folders go: memory when there is room, else the temporary folder.

A case folder gets 4 to 13 new files (the model, the calibration samples and their list, the
toolkit's log, its stage note and intermediate models) and is removed once the pool has read
the log. On ext4 each new file or folder costs 0.3 to 0.5 ms of kernel time on the 2-core test
host (tmpfs: microseconds), about a quarter of a small case's toolkit time, so the folders go
to ``/dev/shm`` when it is a tmpfs with room for ``ROOM_FOR`` models of the size budget
(``HIL_MAX_BYTES``). A TMPDIR that is set is the user's choice and always wins; so does a
small ``/dev/shm`` (a container's 64 MiB), where a large case would run out of space.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from harness.models.budget import size_budget

SHARED_MEMORY = Path("/dev/shm")
ROOM_FOR = 4  # the model, the toolkit's optimised copies of it and the compiled model


def scratch_folder() -> Path:
    """The folder to make this pool's case folders in (``/dev/shm`` or the temporary one)."""
    if "TMPDIR" not in os.environ and _roomy_tmpfs(SHARED_MEMORY):
        return SHARED_MEMORY
    return Path(tempfile.gettempdir())


def scratch_folders() -> list[Path]:
    """Every folder case folders may be in, for removing those of processes that are gone."""
    return list(dict.fromkeys([Path(tempfile.gettempdir()), SHARED_MEMORY]))


def _roomy_tmpfs(folder: Path) -> bool:
    try:
        with open("/proc/self/mounts") as mounts:
            tmpfs = any(
                fields[1] == str(folder) and fields[2] == "tmpfs"
                for fields in (line.split() for line in mounts)
                if len(fields) > 2
            )
        free = os.statvfs(folder)
    except OSError:  # not Linux, or no such folder
        return False
    room = free.f_bavail * free.f_frsize
    return tmpfs and os.access(folder, os.W_OK) and room >= ROOM_FOR * size_budget().bytes
