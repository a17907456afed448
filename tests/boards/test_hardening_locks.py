"""The board lock and time (hardening, round 3): over adb a SIGKILLed holder is noticed as
soon as over SSH, and a board clock that steps forward does not make a live holder's lock
look stale."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.fakes.adbd import AdbServer
from tests.fakes.sshd import SshServer, alive, wait_until, write_sysroot
from tests.helpers import paths
from tests.helpers.boards import SERIAL, adb_board_file
from tests.helpers.children import default_signals

from harness.boards.inventory import Board, load_board
from harness.boards.lock import BoardBusy, BoardLock
from harness.boards.transport import open_transport
from harness.vendors.rknn.runtimes import RUNTIMES

ROOT = paths.ROOT
DAY_S = 86400


def lock_dir(board: Board) -> Path:
    return Path(board.workdir) / ".hil-lock"


@pytest.fixture
def jumping_clock_board(
    sshd_factory: Callable[..., SshServer], tmp_path: Path
) -> tuple[Board, Path]:
    """A loopback board whose ``date`` runs a day ahead once the returned flag file exists."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    flag = tmp_path / "clock-stepped"
    date = bin_dir / "date"
    date.write_text(
        "#!/bin/sh\n"
        f'if [ -e "{flag}" ] && [ "$1" = +%s ]; then\n'
        f"    echo $(( $(/bin/date +%s) + {DAY_S} ))\n"
        'else exec /bin/date "$@"; fi\n'
    )
    date.chmod(0o755)
    server = sshd_factory({"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    sysroot = write_sysroot(tmp_path / "sysroot")
    board = load_board(server.board_file(tmp_path / "boards", sysroot=str(sysroot)), RUNTIMES)
    return board, flag


def test_a_board_clock_stepping_forward_leaves_a_live_holders_lock_alone(
    jumping_clock_board: tuple[Board, Path],
) -> None:
    board, stepped = jumping_clock_board
    holder, contender = open_transport(board), open_transport(board)
    try:
        held = BoardLock(holder, board, "holder", lease_s=60)
        assert held.acquire() == "acquired"
        probe = holder.run("date +%s").stdout
        stepped.touch()  # NTP or an RTC sets the board's clock a day ahead
        assert int(holder.run("date +%s").stdout) >= int(probe) + DAY_S
        with pytest.raises(BoardBusy, match="board loopback is in use"):
            BoardLock(contender, board, "other", lease_s=60).acquire()
        assert held.refresh()  # still the holder's
    finally:
        holder.close()
        contender.close()


def test_a_heartbeat_from_before_the_board_restarted_is_stale(loopback_board: Board) -> None:
    holder, contender = open_transport(loopback_board), open_transport(loopback_board)
    try:
        assert BoardLock(holder, loopback_board, "old-boot").acquire() == "acquired"
        beat = lock_dir(loopback_board) / "heartbeat"
        _, up = beat.read_text().split()
        beat.write_text(f"00000000-another-boot {up}\n")
        how = BoardLock(contender, loopback_board, "new-boot").acquire()
        assert how == "took over: its heartbeat is from before the board restarted"
    finally:
        holder.close()
        contender.close()


@pytest.fixture
def adb_server(tmp_path: Path) -> Iterator[AdbServer]:
    sandbox = tmp_path / "device"
    sandbox.mkdir()
    server = AdbServer({SERIAL: sandbox})
    yield server
    server.stop()


HOLD = """
import sys, time
from pathlib import Path
from harness.boards.inventory import load_board
from harness.boards.lock import BoardLock
from harness.boards.transport import open_transport
from harness.vendors.rknn.runtimes import RUNTIMES
board = load_board(Path(sys.argv[1]), RUNTIMES)
print(BoardLock(open_transport(board), board, "killed").acquire(), flush=True)
time.sleep(600)
"""


def test_over_adb_a_sigkilled_holder_is_noticed_at_once(
    adb_server: AdbServer, tmp_path: Path
) -> None:
    sysroot = write_sysroot(tmp_path / "sysroot")
    board = load_board(adb_board_file(adb_server, tmp_path / "boards", sysroot), RUNTIMES)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(board.source)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=default_signals,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "acquired\n"
        session = int((lock_dir(board) / "session").read_text())
        assert alive(session)
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
        killed = time.monotonic()
        assert wait_until(lambda: not alive(session), 30)  # the adb connection's process
        client = open_transport(board)
        try:
            how = BoardLock(client, board, "next").acquire(wait_s=30)  # the lease is 120 s
        finally:
            client.close()
    finally:
        if holder.poll() is None:
            holder.kill()
    assert how == f"took over: the holder's adb connection (pid {session}) is gone"
    assert time.monotonic() - killed < 30
