"""How the harness talks to a board, whatever carries it: commands and long-lived processes.

``open_transport(board)`` gives a ``Transport``: ``run`` runs one shell command line to its end
(stdin in; exit status, stdout and stderr out; within a timeout and at most ``MAX_OUTPUT``
bytes of each, since a board may be broken or hostile), ``open_stream`` starts a
process the caller talks to for as long as it lives (a runner session's one channel), ``put``
writes a file. The lock, discovery and the runner sessions use only this module, and never ask
which transport they have: each transport declares its ``Capabilities`` (streams beside
commands, a session process, file copy, what its link is called), and a user that needs one
the transport lacks refuses it with ``Unsupported`` (``require``). ``TRANSPORTS`` is the
registry: the board file's transport (``harness.boards.settings``) names the module that
connects (SSH: ``harness.boards.ssh``, adb: ``harness.boards.adb``). Command lines are built
with ``shell_command`` so that every argument reaching the board's shell is quoted. Every
failure of the link is a ``BoardConnectionError``.
"""

from __future__ import annotations

import importlib
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from harness.boards import BoardError
from harness.boards.inventory import Board

# What one command may print on stdout (and again on stderr): the harness's commands print a
# few kilobytes; a probed file that is /dev/zero would otherwise fill the host's memory.
MAX_OUTPUT = 2**20


class BoardConnectionError(BoardError):
    """The board cannot be reached or refused us; ``permanent`` when retrying will not help."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


class Unsupported(BoardConnectionError):
    """The board's transport lacks a capability its user needs: permanent, as retrying the
    same transport cannot give it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=True)


@dataclass(frozen=True)
class Capabilities:
    """What a transport can do, as the lock and the runner sessions ask it."""

    link: str  # one connection, in messages: "SSH connection"
    # ``open_stream``: a process the caller talks to for as long as it lives
    streams: bool
    # commands (and other streams) run while a stream is open, each on a channel of its own; a
    # serial console has one channel, which a stream holds until it ends
    concurrent: bool
    # ``put`` copies a file by a transfer of its own rather than through a console's text
    file_copy: bool
    # The process a command runs under that ends exactly with the connection (the lock's
    # proof that its holder is alive), in messages: SSH's "SSH session". None: commands hang
    # off a process that outlives every connection (adbd).
    session: str | None = None


# capability -> what it is, in words, for a refusal
CAPABILITY_WORDS = {
    "streams": "a long-lived process on the board to talk to",
    "concurrent": "commands beside a stream that is open",
    "file_copy": "file copy",
}


def require(transport: Transport, needs: Sequence[str], board: Board, doing: str) -> None:
    """``Unsupported`` naming the board, its transport and what it lacks when ``transport``
    has not every capability in ``needs`` (names of ``Capabilities`` fields)."""
    lacking = [need for need in needs if not getattr(transport.capabilities, need)]
    if lacking:
        words = ", ".join(CAPABILITY_WORDS[need] for need in lacking)
        raise Unsupported(
            f"board {board.name}: {doing} needs what its transport ({board.transport.kind}, "
            f"{board.source}) cannot give: {words}"
        )


@dataclass
class CommandResult:
    status: int
    stdout: bytes
    stderr: bytes


def shell_command(argv: Sequence[str]) -> str:
    """One command line for the remote shell, every argument quoted."""
    return shlex.join(argv)


class Stream(Protocol):
    """A process on the board: its stdin to write, its stdout and stderr to read, its end."""

    def send(self, data: bytes, timeout: float) -> None:
        """Write all of ``data`` to stdin within ``timeout`` seconds."""

    def close_stdin(self) -> None:
        """End of input for the process."""

    def recv(self, size: int, timeout: float) -> bytes:
        """Up to ``size`` bytes of stdout, b"" at its end; TimeoutError if none within
        ``timeout`` seconds."""

    def recv_stderr(self) -> bytes:
        """What has arrived on stderr (at most about ``MAX_OUTPUT`` bytes), without waiting."""

    def wait(self, timeout: float) -> int | None:
        """The exit status (negative when killed by a signal) once the process has ended or
        the stream closed within ``timeout`` seconds; None while it runs."""

    @property
    def closed(self) -> bool:
        """True once either side closed the stream."""

    def close(self) -> None:
        """Close the stream; the process is not waited for."""


class Transport(Protocol):
    """An open link to one board."""

    @property
    def capabilities(self) -> Capabilities:
        """What it can do (the same for every link of its kind)."""

    def run(self, command: str, *, timeout: float = 30.0, stdin: bytes = b"") -> CommandResult:
        """Run ``command`` (already quoted) and collect its output within ``timeout``; more
        than ``MAX_OUTPUT`` bytes on stdout or stderr is a permanent BoardConnectionError."""

    def open_stream(self, command: str, *, timeout: float = 10.0) -> Stream:
        """Start ``command`` (already quoted) as a long-lived process (``streams``)."""

    def put(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """Write ``data`` to the file ``path`` on the board, created or replaced
        (``file_copy``)."""

    def close(self) -> None:
        """Close the link; its streams end with it."""


# Transport name (the board file's) -> the module whose ``connect(board, *, trust_on_first_use,
# timeout)`` opens it. Imported when a board is contacted: the modules build on this one, and
# their client libraries (paramiko, adbutils) load only when needed.
TRANSPORTS: dict[str, str] = {"ssh": "harness.boards.ssh", "adb": "harness.boards.adb"}


def open_transport(
    board: Board, *, trust_on_first_use: bool = False, timeout: float = 10.0
) -> Transport:
    """An open link to ``board``, its identity verified, by the board file's transport."""
    module = importlib.import_module(TRANSPORTS[board.transport.kind])
    transport: Transport = module.connect(
        board, trust_on_first_use=trust_on_first_use, timeout=timeout
    )
    return transport
