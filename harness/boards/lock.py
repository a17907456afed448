"""One harness at a time per board: a lock directory on the board itself.

``mkdir`` is atomic on every filesystem a board has, so ``<workdir>/.hil-lock`` is the lock.
It holds ``owner`` (JSON: harness host, pid, user, start time; shown to whoever finds the board
busy), ``session`` (a board-side pid that lives exactly as long as the holder's connection),
``heartbeat`` (rewritten while the holder runs) and ``token`` (written last: who holds it). A
lock is stale, and taken over, when the holder's session process is gone (it left /proc: the
holder died, was killed or lost the network) or its heartbeat is older than the lease (the
holder hangs). Of several contenders for a stale lock only the one that creates
``.hil-lock.takeover`` replaces it. All of it is one POSIX ``sh`` script (busybox is enough).

The transport says which process that is (``Capabilities.session``). Over SSH it is the
script's parent (it is run with ``exec``), the SSH session of the holder's connection. Where
commands hang off a process that outlives every client (adbd's shells), the lock opens a stream
of its own for as long as it is held, a ``cat`` reading its stdin, which ends when the
connection goes: its pid is the session. That stream stays open while the lock's commands run,
so a transport with neither a session process nor streams beside commands (a serial console's
one channel) is refused (``transport.Unsupported``): nothing on it would show the holder alive.

The heartbeat's age is measured by the board's uptime (``/proc/uptime``, with the boot id),
never by its wall clock: a clock stepped forward (NTP, an RTC set at boot) does not make a live
holder's heartbeat look old; a heartbeat of an earlier boot is stale.
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
from harness.boards.transport import Stream, Transport, require, shell_command
from harness.text import printable

log = logging.getLogger(__name__)

LOCK_DIR = ".hil-lock"
INCOMPLETE_S = 30  # a lock folder without a token this old was abandoned while being created

# $1 mode (acquire | refresh | release), $2 lock folder, $3 token, $4 owner JSON, $5 lease (s),
# $6 age (s) after which a half-created lock or takeover mutex counts as abandoned, $7 the
# session pid ("": the script's parent), $8 what that process is, for messages
_SCRIPT = r"""
mode=$1 lock=$2 token=$3 owner=$4 lease=$5 incomplete=$6 session_pid=${7:-$PPID} link=$8
now=$(date +%s)
read up _ < /proc/uptime; up=${up%.*}
boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)
mtime() { stat -c %Y "$1" 2>/dev/null || date -r "$1" +%s 2>/dev/null || echo 0; }
holder() { cat "$lock/token" 2>/dev/null; }
beat() { printf '%s %s\n' "$boot" "$up" > "$lock/heartbeat"; }
case $mode in
release)
    if [ "$(holder)" = "$token" ]; then rm -rf -- "$lock"; fi
    exit 0 ;;
refresh)
    [ "$(holder)" = "$token" ] && beat && exit 0
    echo "lost"; exit 1 ;;
esac
claim() {
    printf '%s\n' "$session_pid" > "$lock/session" && printf '%s\n' "$owner" > "$lock/owner" &&
        beat && printf '%s\n' "$token" > "$lock/token"
}
mkdir -p -- "$(dirname -- "$lock")" || exit 3
if mkdir -- "$lock" 2>/dev/null; then claim && echo acquired && exit 0; exit 3; fi
held=$(holder)
if [ "$held" = "$token" ]; then claim && echo reacquired && exit 0; exit 3; fi
session=$(cat "$lock/session" 2>/dev/null)
{ read beat_boot beat_up < "$lock/heartbeat"; } 2>/dev/null
case $beat_up in *[!0-9]*) beat_up= ;; esac
reason=
if [ -z "$held" ]; then
    [ $((now - $(mtime "$lock"))) -gt "$incomplete" ] && reason="abandoned while being created"
elif [ -z "$session" ] || [ ! -d "/proc/$session" ]; then
    reason="the holder's $link (pid ${session:-unknown}) is gone"
elif [ -z "$beat_up" ]; then  # a heartbeat an older harness touched: by its time stamp
    [ $((now - $(mtime "$lock/heartbeat"))) -gt "$lease" ] &&
        reason="its heartbeat is older than the ${lease} s lease"
elif [ "$beat_boot" != "$boot" ]; then
    reason="its heartbeat is from before the board restarted"
elif [ $((up - beat_up)) -gt "$lease" ]; then
    reason="its heartbeat is older than the ${lease} s lease"
fi
if [ -z "$reason" ]; then echo busy; cat "$lock/owner" 2>/dev/null; exit 1; fi
mutex=$lock.takeover
if [ -d "$mutex" ] && [ $((now - $(mtime "$mutex"))) -gt "$incomplete" ]; then rmdir -- "$mutex"; fi
if ! mkdir -- "$mutex" 2>/dev/null; then
    echo busy; echo "another harness is taking over"; exit 1
fi
if [ "$(holder)" = "$held" ]; then rm -rf -- "$lock"; fi
if mkdir -- "$lock" 2>/dev/null && claim; then
    rmdir -- "$mutex"; echo "took over: $reason"; exit 0
fi
rmdir -- "$mutex"; echo busy; echo "another harness took it over first"; exit 1
"""
# A process that lives as long as the connection it was started over: it reads its stdin,
# which only the connection's end closes. It prints its pid first.
_ANCHOR = ["sh", "-c", "echo $$; exec cat > /dev/null"]
_ANCHOR_NEEDS = ("streams", "concurrent")  # the anchor's stream, open while the lock's commands run


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
        self._anchor: Stream | None = None  # without a session process: the anchor's stream
        self._session = ""  # its pid; "": the lock script's parent (the transport's session)

    def _run(self, mode: str, owner: str = "") -> tuple[int, str]:
        capabilities = self.transport.capabilities
        link = capabilities.session or capabilities.link
        argv = [
            "exec", "sh", "-c", _SCRIPT, "sh", mode, self.path, self.token, owner,
            str(int(self.lease_s)), str(INCOMPLETE_S), self._session, link,
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
        if self.transport.capabilities.session is None and self._anchor is None:
            require(self.transport, _ANCHOR_NEEDS, self.board, "its lock (no session process)")
            self._anchor, self._session = self._start_anchor()
        while True:
            status, text = self._run("acquire", owner)
            if status == 0:
                if text.startswith("took over"):
                    log.warning(
                        "board %s: %s: %s", self.board.name, self.path, printable(text)
                    )  # board text
                return text
            if status != 1:
                raise BoardError(f"board {self.board.name}: cannot create {self.path}: {text}")
            if time.monotonic() >= deadline:
                holder = text.removeprefix("busy").strip() or "unknown holder"
                raise BoardBusy(
                    f"board {self.board.name} is in use: lock {self.path} held by {holder}"
                )
            time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))

    def _start_anchor(self) -> tuple[Stream, str]:
        anchor = self.transport.open_stream(shell_command(_ANCHOR))
        line = b""
        deadline = time.monotonic() + 30
        try:
            while not line.endswith(b"\n") and not anchor.closed:
                line += anchor.recv(64, max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            pass  # no pid: refused below
        pid = line.decode(errors="replace").strip()
        if not pid.isdigit():
            anchor.close()
            raise BoardError(f"board {self.board.name}: no session process for the lock: {pid!r}")
        return anchor, pid

    def refresh(self) -> bool:
        """Touch the heartbeat; False when the lock is no longer ours (it was taken over)."""
        return self._run("refresh")[0] == 0

    def release(self) -> None:
        """Remove the lock if it is still ours."""
        try:
            self._run("release")
        finally:
            if self._anchor is not None:
                self._anchor.close()
                self._anchor = None
