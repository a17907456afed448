"""The on-disk caches (simulator results, host references, conversions): keys, whole entries,
size caps.

Each keeps one folder per entry, ``<directory>/<key[:2]>/<key>/``, keyed by ``content_key``
over everything that decides the entry. An entry is written in a staging folder and renamed
into place (``write_entry``), so a reader sees it whole or not at all; one damaged later is a
miss and is removed (``read_entry``). A hit touches the folder, so its modification time is
the entry's last use. Pruning removes the least recently used entries until the cache fits
its cap, but never one used in the last ``RECENT_S`` seconds: a run (another pytest-xdist
worker, say) may be reading it. An entry is renamed away before it is deleted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")
RECENT_S = 600.0
DEFAULT_CAP = 2 * 1024**3
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


@dataclass(frozen=True)
class Entry:
    path: Path
    used: float  # last use, seconds since the epoch
    size: int  # bytes


@dataclass(frozen=True)
class Usage:
    directory: Path
    entries: int
    size: int
    oldest: float | None  # the least recent use
    newest: float | None


def parse_size(text: str) -> int:
    """Bytes of ``2G``, ``500M``, ``1.5G``, ``4096`` (binary units); ValueError names the text."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if match is None:
        raise ValueError(f"not a size: {text!r} (e.g. 2G, 500M, 4096)")
    return int(float(match[1]) * _UNITS[match[2].upper()])


def cap_from_env(variable: str, default: int = DEFAULT_CAP) -> int:
    """The cap in ``variable`` (a size), else ``default``; a bad value names the variable."""
    text = os.environ.get(variable)
    if not text:
        return default
    try:
        return parse_size(text)
    except ValueError as exc:
        raise ValueError(f"{variable}: {exc}") from None


def content_key(
    header: dict[str, Any], model: bytes, array_groups: Sequence[Sequence[np.ndarray]]
) -> str:
    """sha256 (hex) of a JSON header, a model and groups of arrays (dtype, shape and bytes).

    Every chunk is length-prefixed so that boundaries count.
    """
    digest = hashlib.sha256()

    def add(chunk: bytes) -> None:
        digest.update(len(chunk).to_bytes(8, "little"))
        digest.update(chunk)

    add(json.dumps(header, sort_keys=True).encode())
    add(model)
    for arrays in array_groups:
        add(str(len(arrays)).encode())
        for array in map(np.ascontiguousarray, arrays):
            add(f"{array.dtype.str}{array.shape}".encode())
            add(array.tobytes())
    return digest.hexdigest()


def entry_path(directory: Path, key: str) -> Path:
    return Path(directory) / key[:2] / key


def read_entry(entry: Path, read: Callable[[Path], T]) -> T | None:
    """``read(entry)``, or None on a miss. Whatever ``read`` raises (an unreadable file, bad
    JSON, a bad array) makes a damaged entry a miss, removed so that the next run stores a
    good one."""
    if not entry.exists():
        return None
    try:
        value = read(entry)
    except Exception:  # whatever the damage, the entry can be produced again
        shutil.rmtree(entry, ignore_errors=True)
        return None
    touch(entry)  # its last use: the cap removes the least recently used first
    return value


def write_entry(entry: Path, write: Callable[[Path], None]) -> None:
    """Store an entry: ``write(folder)`` fills a staging folder, renamed into place. An entry
    already there stays (another process may have stored it meanwhile)."""
    if entry.exists():
        return
    entry.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{entry.name}-", dir=entry.parent))
    try:
        write(staging)
        os.rename(staging, entry)
    except OSError:
        if not entry.exists():  # losing the rename race to another process is fine
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def touch(entry: Path) -> None:
    """Mark ``entry`` used now (a vanished entry is not an error: it was pruned)."""
    with contextlib.suppress(OSError):
        os.utime(entry)


def entries(directory: Path) -> list[Entry]:
    """Every whole entry under ``directory`` (staging and removed ones left out)."""
    found = []
    for shard in _folders(directory):
        for entry in _folders(shard):
            try:
                used = entry.stat().st_mtime
                size = sum(p.stat().st_size for p in entry.rglob("*") if p.is_file())
            except OSError:  # removed meanwhile
                continue
            found.append(Entry(entry, used, size))
    return found


def usage(directory: Path) -> Usage:
    found = entries(directory)
    used = [entry.used for entry in found]
    return Usage(
        Path(directory),
        len(found),
        sum(entry.size for entry in found),
        min(used, default=None),
        max(used, default=None),
    )


def prune(directory: Path, cap: int, *, recent_s: float = RECENT_S) -> list[Entry]:
    """Remove least recently used entries until ``directory`` holds at most ``cap`` bytes
    (entries used in the last ``recent_s`` seconds stay); the removed entries."""
    found = sorted(entries(directory), key=lambda entry: entry.used)
    total = sum(entry.size for entry in found)
    keep_after = time.time() - recent_s
    removed = []
    for entry in found:
        if total <= cap or entry.used > keep_after:
            break
        doomed = entry.path.with_name(f".removing-{entry.path.name}-{os.getpid()}")
        try:
            os.rename(entry.path, doomed)
        except OSError:  # another process removed or replaced it
            continue
        shutil.rmtree(doomed, ignore_errors=True)
        total -= entry.size
        removed.append(entry)
    return removed


def _folders(directory: Path) -> list[Path]:
    try:
        children = list(Path(directory).iterdir())
    except OSError:
        return []
    return [child for child in children if child.is_dir() and not child.name.startswith(".")]
