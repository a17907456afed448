"""Size caps for the on-disk caches (conversions, simulator results).

Both keep one folder per entry, ``<directory>/<key[:2]>/<key>/``; a hit touches the folder,
so its modification time is the entry's last use. Pruning removes the least recently used
entries until the cache fits its cap, but never one used in the last ``RECENT_S`` seconds: a
run (another pytest-xdist worker, say) may be reading it. An entry is renamed away before it
is deleted, so a reader sees it whole or not at all (a miss, rebuilt).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from harness.models.budget import parse_size

RECENT_S = 600.0
DEFAULT_CAP = 2 * 1024**3


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


def cap_from_env(variable: str, default: int = DEFAULT_CAP) -> int:
    """The cap in ``variable`` (a size), else ``default``; a bad value names the variable."""
    text = os.environ.get(variable)
    if not text:
        return default
    try:
        return parse_size(text)
    except ValueError as exc:
        raise ValueError(f"{variable}: {exc}") from None


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
