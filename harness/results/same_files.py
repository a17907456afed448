"""Files written the same into many case folders of one run, kept once.

Every case folder of a run gets a recipe: ``reproduce.py`` (the same 21 KB everywhere),
``toolkit.json`` (the same for each platform and build setting) and an int8 case's dataset
list. Each copy would be a new inode, which ext4 takes 0.3 to 0.5 ms of kernel time to make on
the 2-core test host (a warm case's whole budget is a few milliseconds), so a file whose bytes
were already written in this run is a hard link to the first copy instead. The copies are
read-only: an edit in place would change every case's at once. A repro bundle holds real
copies; to try a change by hand, copy the file first.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

READ_ONLY = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH


class SameFiles:
    """Writes files, linking each to the first one written with the same bytes."""

    def __init__(self) -> None:
        self._first: dict[bytes, Path] = {}

    def write(self, path: Path, data: bytes) -> None:
        """``path`` with ``data``: a hard link to an earlier file of the same bytes, else a
        new read-only file (a file already at ``path`` is replaced, never written into)."""
        key = hashlib.sha256(data).digest()
        path.unlink(missing_ok=True)
        first = self._first.get(key)
        if first is not None:
            try:
                os.link(first, path)
                return
            except OSError:  # removed since (its case ran again), or no hard links here
                pass
        path.write_bytes(data)
        path.chmod(READ_ONLY)
        self._first[key] = path
