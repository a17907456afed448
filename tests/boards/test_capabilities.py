"""Transports declare what they can do; the lock and the runner sessions ask, never the name.

A transport with one channel (a serial console) is real here: a local ``sh`` driven through one
pipe pair, a command at a time, stderr on stdout as a console shows it. Discovery reads the
board over it; the board lock, which over such a link would need a stream of its own beside
its commands, and the runner sessions, whose runner's stream stays open while the lock's
heartbeat and the link's checks run, refuse it before touching the board. The module is the
console's connector too (``connect``), registered for the test as a transport of its own.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar, NoReturn

import pytest
import yaml
from tests.fakes.sshd import write_sysroot

from harness.boards import transport as transport_module
from harness.boards.discovery import read_facts
from harness.boards.inventory import Board, BoardFileError, load_board
from harness.boards.lock import BoardLock
from harness.boards.transport import (
    BoardConnectionError,
    Capabilities,
    CommandResult,
    Unsupported,
    open_transport,
)
from harness.vendors.rknn.runners.c_session import CRunnerSession
from harness.vendors.rknn.runners.runner_session import RunnerSession
from harness.vendors.rknn.runtimes import RUNTIMES

CONSOLES: list[ConsoleTransport] = []  # every console this module's ``connect`` opened


@dataclasses.dataclass(frozen=True)
class ConsoleSettings:
    """A board file's section for the console (the test builds it without a board file)."""

    device: str

    kind: ClassVar[str] = "console"
    where: ClassVar[str] = "console:{device}"
    secret_variables: ClassVar[tuple[str, ...]] = ()

    def files(self, *, new_known_hosts: bool = False) -> list[tuple[str, Path]]:
        return []


class ConsoleTransport:
    """One shell on one channel: commands only, one at a time; no stream, no file copy."""

    capabilities = Capabilities("serial console", streams=False, concurrent=False, file_copy=False)

    def __init__(self) -> None:
        self.shell = subprocess.Popen(
            ["sh"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )

    def run(self, command: str, *, timeout: float = 30.0, stdin: bytes = b"") -> CommandResult:
        """Type ``command`` (in a subshell, so an ``exec`` keeps the console's shell) and read
        the console up to the status line after it."""
        assert self.shell.stdin is not None and self.shell.stdout is not None
        if stdin:
            raise BoardConnectionError("a console types commands; it has no stdin to give them")
        marker = f"@@end-{secrets.token_hex(8)}".encode()
        typed = f"( {command}\n) < /dev/null 2>&1; printf '\\n%s %s\\n' {marker.decode()} $?\n"
        self.shell.stdin.write(typed.encode())
        self.shell.stdin.flush()
        seen = b""
        deadline = time.monotonic() + timeout
        while not seen.endswith(b"\n") or b"\n" + marker + b" " not in seen:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.shell.stdout], [], [], left)[0]:
                raise BoardConnectionError(f"remote command did not finish within {timeout:g} s")
            chunk = os.read(self.shell.stdout.fileno(), 65536)
            if not chunk:
                raise BoardConnectionError("the console closed")
            seen += chunk
        output, status = seen.rsplit(b"\n" + marker + b" ", 1)
        return CommandResult(int(status), output, b"")

    def open_stream(self, command: str, *, timeout: float = 10.0) -> NoReturn:
        raise BoardConnectionError("the console's one channel gives no stream")

    def put(self, path: str, data: bytes, mode: int = 0o644) -> NoReturn:
        raise BoardConnectionError("the console copies no file")

    def close(self) -> None:
        if self.shell.poll() is None:
            self.shell.kill()
        self.shell.wait()
        for pipe in (self.shell.stdin, self.shell.stdout):
            if pipe is not None:
                pipe.close()


def connect(
    board: Board, *, trust_on_first_use: bool = False, timeout: float = 10.0
) -> ConsoleTransport:
    """The console's connector, as ``transport.TRANSPORTS`` names it."""
    console = ConsoleTransport()
    CONSOLES.append(console)
    return console


@pytest.fixture
def console_board(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Board:
    """An RK3562 (fake sysroot) reached by the console, registered as transport "console"."""
    monkeypatch.setitem(transport_module.TRANSPORTS, ConsoleSettings.kind, __name__)
    monkeypatch.setattr(sys.modules[__name__], "CONSOLES", [])
    path = tmp_path / "boards" / "console.yaml"
    path.parent.mkdir()
    document = {
        "name": "console-board",
        "adb": {"serial": "placeholder"},  # replaced by the console's settings below
        "soc": "rk3562",
        "platform": "rk3562",
        "python": sys.executable,
        "workdir": str(tmp_path / "work"),
        "runtime": "simulator-stand-in",
        "sysroot": str(write_sysroot(tmp_path / "sysroot")),
    }
    path.write_text(yaml.safe_dump(document))
    board = load_board(path, RUNTIMES)
    return dataclasses.replace(board, transport=ConsoleSettings("/dev/ttyS0"))  # type: ignore[arg-type]


def test_discovery_reads_a_board_over_one_channel(console_board: Board) -> None:
    console = open_transport(console_board)
    try:
        facts = read_facts(console_board, console)
        assert facts["soc"] == "rk3562"
        assert console.run("echo out; echo err >&2; exit 3") == CommandResult(3, b"out\nerr\n", b"")
        assert console.run("exec true").status == 0  # the console's shell is still there
    finally:
        console.close()


def test_the_lock_refuses_a_transport_with_no_session_process_and_one_channel(
    console_board: Board,
) -> None:
    console = open_transport(console_board)
    try:
        with pytest.raises(Unsupported) as refused:
            BoardLock(console, console_board, "token").acquire()
    finally:
        console.close()
    assert str(refused.value) == (
        f"board console-board: its lock (no session process) needs what its transport (console, "
        f"{console_board.source}) cannot give: a long-lived process on the board to talk to, "
        "commands beside a stream that is open"
    )
    assert refused.value.permanent and not Path(console_board.workdir).exists()


@pytest.mark.parametrize(
    ("session", "lacking"),
    [
        (RunnerSession, "commands beside a stream that is open, file copy"),
        # the C runner is pushed through a command's stdin: no file copy asked
        (CRunnerSession, "commands beside a stream that is open"),
    ],
)
def test_a_runner_session_refuses_one_channel_before_touching_the_board(
    console_board: Board, session: type[RunnerSession], lacking: str
) -> None:
    options = {"binary": Path("hil_c_runner")} if session is CRunnerSession else {}
    opened = session(console_board, "token", **options)  # type: ignore[arg-type]
    with pytest.raises(Unsupported, match="a runner session needs what its transport") as refused:
        opened.open()
    assert str(refused.value).endswith(f"a long-lived process on the board to talk to, {lacking}")
    assert not Path(console_board.workdir).exists()  # no lock, no session folder
    (console,) = CONSOLES
    assert console.shell.poll() is not None and opened.transport is None  # closed


def test_a_labgrid_place_is_refused_for_a_transport_a_place_cannot_address(
    tmp_path: Path,
) -> None:
    path = tmp_path / "adb-farm.yaml"
    document = {
        "name": "adb-farm",
        "adb": {"serial": "0123"},
        "labgrid": {"place": "rk3562-a"},
        "soc": "rk3562",
        "platform": "rk3562",
        "workdir": "/data/hil",
        "runtime": "simulator-stand-in",
    }
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(BoardFileError, match="adb: a labgrid place is reached by ssh, not adb"):
        load_board(path, RUNTIMES)
