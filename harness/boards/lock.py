"""One harness at a time per board: a lock directory on the board itself.

``mkdir`` is atomic on every filesystem a board has, so ``<workdir>/.hil-lock`` is the lock.
It holds ``owner`` (JSON: harness host, pid, user, start time; shown to whoever finds the board
busy), ``session`` (the board-side pid of the holder's SSH session), ``heartbeat`` (touched
while the holder runs) and ``token`` (written last: who holds it). A lock is stale, and taken
over, when the holder's SSH session is gone (its process left /proc: the holder died, was
killed or lost the network) or its heartbeat is older than the lease (the holder hangs). Of
several contenders for a stale lock only the one that creates ``.hil-lock.takeover`` replaces
it. All of it is one POSIX ``sh`` script (busybox is enough) run with ``exec``, so that the
script's parent is the SSH session it records.
"""

from __future__ import annotations

import getpass
import json
import logging
import os
import socket
import time
from datetime import datetime, timezone

from harness.boards import BoardError
from harness.boards.inventory import Board
from harness.boards.transport import Transport, shell_command

log = logging.getLogger(__name__)

LOCK_DIR = ".hil-lock"
INCOMPLETE_S = 30  # a lock folder without a token this old was abandoned while being created

# $1 mode (acquire | refresh | release), $2 lock folder, $3 token, $4 owner JSON, $5 lease (s),
# $6 age (s) after which a half-created lock or takeover mutex counts as abandoned
_SCRIPT = r"""
mode=$1 lock=$2 token=$3 owner=$4 lease=$5
now=$(date +%s)
mtime() { stat -c %Y "$1" 2>/dev/null || date -r "$1" +%s 2>/dev/null || echo 0; }
holder() { cat "$lock/token" 2>/dev/null; }
case $mode in
release)
    if [ "$(holder)" = "$token" ]; then rm -rf -- "$lock"; fi
    exit 0 ;;
refresh)
    [ "$(holder)" = "$token" ] && touch -- "$lock/heartbeat" && exit 0
    echo "lost"; exit 1 ;;
esac
claim() {
    printf '%s\n' "$PPID" > "$lock/session" && printf '%s\n' "$owner" > "$lock/owner" &&
        touch -- "$lock/heartbeat" && printf '%s\n' "$token" > "$lock/token"
}
mkdir -p -- "$(dirname -- "$lock")" || exit 3
if mkdir -- "$lock" 2>/dev/null; then claim && echo acquired && exit 0; exit 3; fi
held=$(holder)
if [ "$held" = "$token" ]; then claim && echo reacquired && exit 0; exit 3; fi
session=$(cat "$lock/session" 2>/dev/null)
reason=
if [ -z "$held" ]; then
    [ $((now - $(mtime "$lock"))) -gt "$6" ] && reason="abandoned while being created"
elif [ -z "$session" ] || [ ! -d "/proc/$session" ]; then
    reason="the holder's SSH session (pid ${session:-unknown}) is gone"
elif [ $((now - $(mtime "$lock/heartbeat"))) -gt "$lease" ]; then
    reason="its heartbeat is older than the ${lease} s lease"
fi
if [ -z "$reason" ]; then echo busy; cat "$lock/owner" 2>/dev/null; exit 1; fi
mutex=$lock.takeover
if [ -d "$mutex" ] && [ $((now - $(mtime "$mutex"))) -gt "$6" ]; then rmdir -- "$mutex"; fi
if ! mkdir -- "$mutex" 2>/dev/null; then
    echo busy; echo "another harness is taking over"; exit 1
fi
if [ "$(holder)" = "$held" ]; then rm -rf -- "$lock"; fi
if mkdir -- "$lock" 2>/dev/null && claim; then
    rmdir -- "$mutex"; echo "took over: $reason"; exit 0
fi
rmdir -- "$mutex"; echo busy; echo "another harness took it over first"; exit 1
"""


class BoardBusy(BoardError):
    """Another live harness holds the board's lock."""


class BoardLock:
    """The lock on one board, used over one transport (a new one after a reconnect)."""

    def __init__(
        self, transport: Transport, board: Board, token: str, lease_s: float = 120.0
    ) -> None:
        self.transport = transport
        self.board = board
        self.token = token
        self.lease_s = lease_s
        self.path = f"{board.workdir}/{LOCK_DIR}"

    def _run(self, mode: str, owner: str = "") -> tuple[int, str]:
        argv = [
            "exec", "sh", "-c", _SCRIPT, "sh", mode, self.path, self.token, owner,
            str(int(self.lease_s)), str(INCOMPLETE_S),
        ]  # fmt: skip
        result = self.transport.run(shell_command(argv), timeout=30)
        return result.status, (result.stdout + result.stderr).decode(errors="replace").strip()

    def acquire(self, wait_s: float = 0.0) -> str:
        """Take the lock, waiting up to ``wait_s`` for a live holder; says how it was taken."""
        owner = json.dumps(
            {
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "user": getpass.getuser(),
                "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            }
        )
        deadline = time.monotonic() + wait_s
        while True:
            status, text = self._run("acquire", owner)
            if status == 0:
                if text.startswith("took over"):
                    log.warning("board %s: %s: %s", self.board.name, self.path, text)
                return text
            if status != 1:
                raise BoardError(f"board {self.board.name}: cannot create {self.path}: {text}")
            if time.monotonic() >= deadline:
                holder = text.removeprefix("busy").strip() or "unknown holder"
                raise BoardBusy(
                    f"board {self.board.name} is in use: lock {self.path} held by {holder}"
                )
            time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))

    def refresh(self) -> bool:
        """Touch the heartbeat; False when the lock is no longer ours (it was taken over)."""
        return self._run("refresh")[0] == 0

    def release(self) -> None:
        """Remove the lock if it is still ours."""
        self._run("release")
