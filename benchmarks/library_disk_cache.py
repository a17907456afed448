"""``harness.diskcache.DiskCache`` backed by python-diskcache, for ``bench_disk_cache.py``.

Loaded as a pytest plugin (``python -m pytest -p library_disk_cache ...``, with this folder
on ``PYTHONPATH``) or imported, it replaces ``DiskCache``'s storage with a
``diskcache.Cache`` in the cache's claimed folder: SQLite holds the keys, the last use
(eviction policy least-recently-used, updated on every hit as the hand-written cache touches
an entry) and the values under 32 KiB; larger values are files of its own. The simulator,
reference, comparison and case caches, which all build on ``DiskCache``, then store through
it. What is stored is what ``write_packed`` writes (the CRC line, then ``pack``'s bytes), and
a hit is checked against its CRC, so that both measure the same serialisation and only the
storage differs: one file a key, renamed into place, and pruning by listing the folder,
against SQLite and the library's culling on every write. The conversion cache's folder
entries, which python-diskcache cannot hold, are not touched. Not a test: a measuring aid.
"""

from __future__ import annotations

import sqlite3
import warnings
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import diskcache
import numpy as np

from harness.diskcache import (
    _FIRST_LINE,
    _FIRST_LINE_SIZE,
    CacheFolder,
    CacheWriteWarning,
    DamagedEntry,
    DiskCache,
    claim,
    pack,
    unpack,
)

T = TypeVar("T")
_FAILURES = (OSError, sqlite3.Error, diskcache.Timeout)


def _init(self: DiskCache, directory: Path, folder: CacheFolder, cap: int | None = None) -> None:
    self.directory = Path(directory)
    claim(self.directory)  # the same refusal of foreign folders
    self.cap = folder.cap() if cap is None else cap
    self._warned = False
    self._store = diskcache.Cache(  # type: ignore[attr-defined]
        str(self.directory), size_limit=self.cap, eviction_policy="least-recently-used"
    )


def _get_packed(self: DiskCache, key: str, read: Callable[[Any, list[np.ndarray]], T]) -> T | None:
    store: diskcache.Cache = self._store  # type: ignore[attr-defined]
    try:
        found = store.get(key, read=True)  # bytes under 32 KiB, else its file, open
    except _FAILURES:
        return None
    if found is None:
        return None
    try:
        if isinstance(found, bytes):
            blob = memoryview(bytearray(found))
        else:
            with found:  # read in place into memory not zeroed, as the hand-written one does
                buffer = np.empty(int(found.seek(0, 2)), np.uint8).data
                found.seek(0)
                blob = buffer[: found.readinto(buffer)]
        return read(*unpack(_checked(blob)))
    except Exception:  # whatever the damage, the entry can be produced again
        store.delete(key)
        return None


def _checked(blob: memoryview) -> memoryview:
    first, rest = bytes(blob[:_FIRST_LINE_SIZE]), blob[_FIRST_LINE_SIZE:]
    if not first.startswith(_FIRST_LINE) or first[len(_FIRST_LINE) : -1] != b"%08x" % zlib.crc32(
        rest
    ):
        raise DamagedEntry("does not match its checksum")
    return rest


def _put_packed(self: DiskCache, key: str, data: Any, arrays: Sequence[np.ndarray]) -> None:
    store: diskcache.Cache = self._store  # type: ignore[attr-defined]
    chunks = pack(data, arrays)
    checksum = 0
    for chunk in chunks:
        checksum = zlib.crc32(chunk, checksum)
    value = b"".join([b"%s%08x\n" % (_FIRST_LINE, checksum), *chunks])
    try:
        store.add(key, value)  # an entry already there stays, as with write_packed
    except _FAILURES as exc:
        if not self._warned:
            self._warned = True
            warnings.warn(CacheWriteWarning(f"{self.directory}: {exc}"), stacklevel=2)


def _keep_to_cap(self: DiskCache) -> None:
    self._store.cull()  # type: ignore[attr-defined]


LIBRARY: dict[str, Callable[..., Any]] = {
    "__init__": _init,
    "get_packed": _get_packed,
    "put_packed": _put_packed,
    "keep_to_cap": _keep_to_cap,
}
HAND_WRITTEN: dict[str, Callable[..., Any]] = {name: getattr(DiskCache, name) for name in LIBRARY}


def use(methods: dict[str, Callable[..., Any]]) -> None:
    """Make every ``DiskCache`` (and so every cache built on it) store with ``methods``:
    ``LIBRARY`` or ``HAND_WRITTEN``."""
    for name, method in methods.items():
        setattr(DiskCache, name, method)


use(LIBRARY)  # loading the plugin is choosing it
