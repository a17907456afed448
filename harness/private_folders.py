"""Folders and files that decide what npu-hil runs, taken only when no other user can change them.

A folder in a shared place (``/tmp``) or one a team shares may have been made, or be writable,
by someone else: what it holds (a ``sitecustomize.py`` on a child's PYTHONPATH, a rewritten
cache entry) then runs or counts as the user's own. ``unsafe`` says in words why a path is not
the user's alone; ``private_folder`` makes one (mode 0700) or takes an existing one only when
``unsafe`` finds nothing.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

# Permission bits no other user may hold: write (a folder's or file's content replaced), and
# for a private folder read and search too.
OTHERS_WRITE = 0o022
OTHERS_ANY = 0o077


class UnsafePathError(OSError):
    """A folder or file another user made or may change, refused."""


def unsafe(path: Path, forbidden: int = OTHERS_WRITE, kind: int = stat.S_IFDIR) -> str | None:
    """Why ``path`` (not followed if a link) is not the user's alone, in words; None when it is
    a ``kind`` (folder, by default) owned by this user with none of the ``forbidden``
    permission bits. Raises OSError when it cannot be examined (missing, say)."""
    return _unsafe(os.lstat(path), forbidden, kind)


def _unsafe(found: os.stat_result, forbidden: int, kind: int) -> str | None:
    if stat.S_IFMT(found.st_mode) != kind:
        wanted = "folder" if kind == stat.S_IFDIR else "regular file"
        return f"is a {_kind(found.st_mode)}, not a {wanted}"
    if found.st_uid != os.getuid():
        return f"belongs to uid {found.st_uid}, not to this user (uid {os.getuid()})"
    mode = stat.S_IMODE(found.st_mode)
    if mode & forbidden:
        who = "others can change it" if mode & forbidden & OTHERS_WRITE else "others can read it"
        return f"has mode {mode:04o}: {who}"
    return None


def _kind(mode: int) -> str:
    kinds = {stat.S_IFLNK: "symbolic link", stat.S_IFDIR: "folder", stat.S_IFREG: "regular file"}
    return kinds.get(stat.S_IFMT(mode), "special file (FIFO, socket or device)")


def read_regular(path: Path, limit: int, forbidden: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` if they are at most ``limit``: opened without
    following a link and without waiting for a FIFO's writer, checked as opened (the name may
    have been replaced since a look at it); with ``forbidden``, ``unsafe``'s owner and
    permission checks too. UnsafePathError, saying why in words, for anything else."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        opened = os.fstat(fd)
        if forbidden is not None:
            why = _unsafe(opened, forbidden, stat.S_IFREG)
        elif not stat.S_ISREG(opened.st_mode):
            why = f"is a {_kind(opened.st_mode)}, not a regular file"
        else:
            why = None
        if why is None and opened.st_size > limit:
            why = f"holds more than {limit} bytes"
        if why is not None:
            raise UnsafePathError(why)
        data = b""
        while chunk := os.read(fd, limit + 1 - len(data)):
            data += chunk
            if len(data) > limit:  # grown since
                raise UnsafePathError(f"holds more than {limit} bytes")
        return data
    finally:
        os.close(fd)


def private_folder(path: Path) -> Path:
    """``path``, a folder only this user can use: made with mode 0700 when missing (its parent
    must exist), or an existing one that ``unsafe`` finds nothing against (no group or other
    permission). UnsafePathError naming the folder and why otherwise: its content is never
    trusted."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    why = unsafe(path, OTHERS_ANY)
    if why is not None:
        raise UnsafePathError(f"{path} {why}; it is not used")
    return path
