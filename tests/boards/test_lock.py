"""The on-board lock: busy, waiting, stale holders taken over, heartbeat, Ctrl-C release."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from tests.fakes.sshd import alive, onnx_model, runner_processes, wait_until
from tests.helpers import paths
from tests.helpers.children import default_signals

from harness.boards.inventory import Board
from harness.boards.lock import BoardBusy, BoardLock
from harness.boards.transport import open_transport
from harness.targets.job import Job
from harness.vendors.rknn.board import RknnBoardTarget
from harness.vendors.rknn.toolkit.convert import ConversionCache

ROOT = paths.ROOT


def relu(case_id: str) -> Job:
    x = np.ones((1, 3, 4, 4), np.float32)
    return Job(model=onnx_model(), inputs=[x], target_platform="rk3562", case_id=case_id)


def lock_dir(board: Board) -> Path:
    return Path(board.workdir) / ".hil-lock"


def test_a_second_harness_finds_the_board_busy_then_free(
    loopback_board: Board, board_cache: ConversionCache
) -> None:
    with RknnBoardTarget(loopback_board, cache=board_cache) as first:
        assert first.run(relu("first")).infra_error is None
        owner = json.loads((lock_dir(loopback_board) / "owner").read_text())
        assert owner["pid"] == os.getpid() and owner["host"] == socket.gethostname()
        with RknnBoardTarget(loopback_board, cache=board_cache, lock_wait_s=0) as second:
            refused = second.run(relu("second"))
    assert refused.infra_error is not None and "board loopback is in use" in refused.infra_error
    assert f'"pid": {os.getpid()}' in refused.infra_error  # who holds it, to go and ask
    assert not lock_dir(loopback_board).exists()
    with RknnBoardTarget(loopback_board, cache=board_cache, lock_wait_s=0) as third:
        assert third.run(relu("third")).infra_error is None


def test_a_waiting_harness_gets_the_board_when_it_is_released(
    loopback_board: Board, board_cache: ConversionCache
) -> None:
    first = RknnBoardTarget(loopback_board, cache=board_cache)
    assert first.run(relu("first")).infra_error is None
    releaser = threading.Timer(1.5, first.close)
    releaser.start()
    started = time.monotonic()
    with RknnBoardTarget(loopback_board, cache=board_cache, lock_wait_s=60) as second:
        assert second.run(relu("second")).infra_error is None
    releaser.join()
    assert time.monotonic() - started >= 1.5


def test_a_lock_whose_holder_is_gone_is_taken_over(loopback_board: Board) -> None:
    holder = open_transport(loopback_board)
    BoardLock(holder, loopback_board, "dead-holder").acquire()
    session_pid = int((lock_dir(loopback_board) / "session").read_text())
    assert alive(session_pid)
    holder.close()  # its SSH session ends, as when a harness is killed or loses its network
    assert wait_until(lambda: not alive(session_pid))
    client = open_transport(loopback_board)
    try:
        how = BoardLock(client, loopback_board, "new-holder").acquire()
        assert how == f"took over: the holder's SSH session (pid {session_pid}) is gone"
        assert (lock_dir(loopback_board) / "token").read_text() == "new-holder\n"
    finally:
        client.close()


def test_a_live_holder_with_a_stale_heartbeat_is_taken_over(loopback_board: Board) -> None:
    holder, contender = open_transport(loopback_board), open_transport(loopback_board)
    try:
        stuck = BoardLock(holder, loopback_board, "stuck", lease_s=60)
        assert stuck.acquire() == "acquired"
        other = BoardLock(contender, loopback_board, "other", lease_s=60)
        with pytest.raises(BoardBusy, match=r"held by \{.*\"host\""):
            other.acquire()
        beat = lock_dir(loopback_board) / "heartbeat"  # "boot-id uptime": beaten 2 min ago
        boot, up = beat.read_text().split()
        beat.write_text(f"{boot} {int(up) - 120}\n")
        assert other.acquire() == "took over: its heartbeat is older than the 60 s lease"
        stuck.release()  # not its lock any more: must leave the new holder's alone
        assert (lock_dir(loopback_board) / "token").read_text() == "other\n"
        assert not stuck.refresh()  # and the old holder learns that it lost the lock
        assert other.refresh()
    finally:
        holder.close()
        contender.close()


def test_the_heartbeat_keeps_a_short_lease_alive(
    loopback_board: Board, board_cache: ConversionCache
) -> None:
    with RknnBoardTarget(loopback_board, cache=board_cache, lease_s=2) as target:
        assert target.run(relu("holder")).infra_error is None
        beat = lock_dir(loopback_board) / "heartbeat"
        first_beat = beat.stat().st_mtime
        time.sleep(3.5)  # longer than the lease: only the heartbeat keeps the lock
        assert beat.stat().st_mtime > first_beat
        client = open_transport(loopback_board)
        try:
            with pytest.raises(BoardBusy):
                BoardLock(client, loopback_board, "contender", lease_s=2).acquire()
        finally:
            client.close()


def test_a_half_created_lock_is_left_alone_until_abandoned(loopback_board: Board) -> None:
    (lock_dir(loopback_board)).mkdir(parents=True)  # a contender between mkdir and its token
    client = open_transport(loopback_board)
    try:
        with pytest.raises(BoardBusy):
            BoardLock(client, loopback_board, "eager").acquire()
        old = time.time() - 120
        os.utime(lock_dir(loopback_board), (old, old))
        assert BoardLock(client, loopback_board, "eager").acquire() == (
            "took over: abandoned while being created"
        )
    finally:
        client.close()


CTRL_C_SCRIPT = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
import numpy as np
from tests.fakes.sshd import onnx_model
from harness.vendors.rknn.board import RknnBoardTarget
from harness.vendors.rknn.toolkit.convert import ConversionCache
from harness.boards.inventory import load_board
from harness.vendors.rknn.runtimes import RUNTIMES
from harness.targets.job import Job

board = load_board(Path(sys.argv[1]), RUNTIMES)
request = Job(model=onnx_model(), inputs=[np.ones((1, 3, 4, 4), np.float32)],
                     target_platform="rk3562", case_id="hangs")
with RknnBoardTarget(board, cache=ConversionCache(Path(sys.argv[2])), timeout_s=600,
                  on_case_started=lambda case: print("STARTED", case, flush=True)) as target:
    target.run(request, test_fault="hang")
"""


def test_ctrl_c_releases_the_lock_and_leaves_nothing_on_the_board(
    loopback_board: Board, board_cache: ConversionCache
) -> None:
    harness = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_SCRIPT, str(loopback_board.source),
         str(board_cache.directory), str(ROOT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
    )  # fmt: skip
    try:
        assert harness.stdout is not None
        assert harness.stdout.readline() == "STARTED hangs\n", harness.stderr
        assert lock_dir(loopback_board).is_dir()
        assert len(runner_processes(loopback_board.workdir)) >= 1
        harness.send_signal(signal.SIGINT)
        _, stderr = harness.communicate(timeout=60)
    finally:
        if harness.poll() is None:
            harness.kill()
    assert "KeyboardInterrupt" in stderr
    assert not lock_dir(loopback_board).exists()
    assert not Path(loopback_board.workdir).exists()
    assert wait_until(lambda: runner_processes(loopback_board.workdir) == [])


def test_a_signalled_child_has_default_signal_handling_under_an_ignored_sigint() -> None:
    """What a background job of a non-interactive shell gives its children (SIGINT ignored)
    is undone by ``default_signals``: the child sees its Ctrl-C again."""
    show = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        inherited = subprocess.run([sys.executable, "-c", show], capture_output=True, text=True)
        restored = subprocess.run(
            [sys.executable, "-c", show],
            capture_output=True,
            text=True,
            preexec_fn=default_signals,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (inherited.stdout, restored.stdout) == ("False\n", "True\n")
