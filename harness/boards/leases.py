"""What this host holds on labgrid coordinators: one mark file per reservation, and whether its
holder is still alive.

labgrid never frees an acquired place by itself. The guard process of a lease frees it when the
harness dies alone, but a job stopped as CI runners stop one (SIGKILL of the whole process
tree) takes the guard with it. So each lease leaves a mark in ``lease_dir()`` (per user:
``~/.cache/npu-hil/leases``, or ``$HIL_LEASE_DIR``) naming the host that wrote it, the
coordinator, the reservation token, the place and the processes holding it (pid and start
time, so that a recycled pid is not mistaken for the holder). A mark of this host whose holders
are all gone is a stale lease: the next lease from the same coordinator on this host, and ``hil
boards release-stale``, release it (``harness.boards.farm.release_stale``). A mark of another
host (a home folder shared over NFS by several CI hosts), or of no known host (an older
npu-hil's), is never judged by its pids, which name processes of that host: ``hil boards
release-stale`` reports it. A place this user acquired by hand leaves no mark and is never
touched.

A mark is read only if it is a regular file (not a link, a FIFO or a device, which would hang
the read) of at most ``MAX_MARK_BYTES``; anything else in the folder is left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.private_folders import read_regular

LEASE_DIR_ENV = "HIL_LEASE_DIR"
_TOKEN = re.compile(r"^\w{1,64}$")  # labgrid's reservation tokens; a mark's file name
MAX_MARK_BYTES = 64 * 1024  # a mark is a few hundred bytes


def this_host() -> str:
    """The name a mark records as its host."""
    return socket.gethostname()


def lease_dir() -> Path:
    """The folder of this host's and user's lease marks."""
    configured = os.environ.get(LEASE_DIR_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "npu-hil" / "leases"


def process_identity(pid: int) -> dict[str, int] | None:
    """``{"pid", "started"}`` of a live process (start time in clock ticks since boot, from
    /proc), None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: count from the last ")"
    return {"pid": pid, "started": int(stat.rsplit(")", 1)[1].split()[19])}


def alive(holder: dict[str, Any]) -> bool:
    """Whether the process a mark names still runs (the same one, not a recycled pid)."""
    pid, started = holder.get("pid"), holder.get("started")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    now = process_identity(pid)
    return now is not None and now["started"] == started


@dataclass(frozen=True)
class Mark:
    """One lease this host holds: its reservation on ``coordinator`` (None: labgrid's default)
    and the processes holding it."""

    coordinator: str | None
    token: str
    place: str | None
    holders: list[dict[str, Any]]
    host: str | None = field(default_factory=this_host)  # None: an older npu-hil's mark

    @property
    def path(self) -> Path:
        return lease_dir() / f"{self.token}.json"

    def write(self) -> None:
        """Written before the place is acquired, so that no acquired place goes unmarked."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.token}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(self.__dict__))
        os.replace(temporary, self.path)

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    @property
    def here(self) -> bool:
        """Written on this host: its holders' pids are this host's processes."""
        return self.host == this_host()

    @property
    def stale(self) -> bool:
        """A mark of this host none of whose holders is alive any more (one of another host
        is never stale here: its pids are not this host's)."""
        return self.here and not any(alive(holder) for holder in self.holders)


def marks() -> list[Mark]:
    """Every lease mark of this user; a file that is not a mark is left alone."""
    found = []
    for path in sorted(lease_dir().glob("*.json")):
        try:
            data = json.loads(read_regular(path, MAX_MARK_BYTES))
            mark = Mark(
                coordinator=data["coordinator"],
                token=data["token"],
                place=data["place"],
                holders=list(data["holders"]),
                host=data.get("host"),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        valid = (
            _TOKEN.match(str(mark.token))
            and path.name == f"{mark.token}.json"
            and (mark.coordinator is None or isinstance(mark.coordinator, str))
            and (mark.host is None or isinstance(mark.host, str))
            and all(isinstance(holder, dict) for holder in mark.holders)
        )
        if valid:
            found.append(mark)
    return found
