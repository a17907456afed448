"""What this host holds on labgrid coordinators: one mark file per reservation, and whether its
holder is still alive.

labgrid never frees an acquired place by itself. The guard process of a lease frees it when the
harness dies alone, but a job stopped as CI runners stop one (SIGKILL of the whole process
tree) takes the guard with it. So each lease leaves a mark in ``lease_dir()`` (per host and
user: ``~/.cache/npu-hil/leases``, or ``$HIL_LEASE_DIR``) naming the coordinator, the
reservation token, the place and the processes holding it (pid and start time, so that a
recycled pid is not mistaken for the holder). A mark whose holders are all gone is a stale
lease: the next lease from the same coordinator on this host, and ``hil boards release-stale``,
release it (``harness.boards.farm.release_stale``). A place this user acquired by hand leaves
no mark and is never touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LEASE_DIR_ENV = "HIL_LEASE_DIR"
_TOKEN = re.compile(r"^\w{1,64}$")  # labgrid's reservation tokens; a mark's file name


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
    def stale(self) -> bool:
        """No holder of the lease is alive any more."""
        return not any(alive(holder) for holder in self.holders)


def marks() -> list[Mark]:
    """Every lease mark of this host and user; a file that is not a mark is left alone."""
    found = []
    for path in sorted(lease_dir().glob("*.json")):
        try:
            data = json.loads(path.read_text())
            mark = Mark(
                coordinator=data["coordinator"],
                token=data["token"],
                place=data["place"],
                holders=list(data["holders"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue
        valid = (
            _TOKEN.match(str(mark.token))
            and path.name == f"{mark.token}.json"
            and (mark.coordinator is None or isinstance(mark.coordinator, str))
            and all(isinstance(holder, dict) for holder in mark.holders)
        )
        if valid:
            found.append(mark)
    return found
