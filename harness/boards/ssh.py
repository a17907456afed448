"""The SSH transport, with paramiko: host keys verified, secrets kept out of every message.

The board's known_hosts file decides who the board is: an unknown host key is refused unless
the caller explicitly asks for trust on first use (then the key is appended to that file), and
a changed key is always refused. ``connect`` gives an ``SshTransport``
(``harness.boards.transport.Transport``); no paramiko type or exception leaves this module.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import logging
import os
import socket
import time

import paramiko

from harness.boards import BoardError
from harness.boards.inventory import Board
from harness.boards.settings import SshSettings
from harness.boards.transport import (
    MAX_OUTPUT,
    BoardConnectionError,
    Capabilities,
    CommandResult,
    shell_command,
)

log = logging.getLogger(__name__)

# What paramiko raises when the link fails; outside this module it is a BoardConnectionError.
_LINK_ERRORS = (OSError, paramiko.SSHException, EOFError)

# paramiko's Channel.sendall copies the rest of its buffer after every SSH packet (32 KiB), so
# its time grows with the square of the size (an 80 MiB batch went at 1.5 MiB/s on loopback);
# handing it pieces this big keeps each copy small (benchmarks/bench_ssh_upload.py).
SEND_PIECE = 256 * 1024


def send_all(channel: paramiko.Channel, data: bytes) -> None:
    """``channel.sendall(data)`` in time proportional to the size."""
    view = memoryview(data)
    for start in range(0, len(view), SEND_PIECE):
        channel.sendall(view[start : start + SEND_PIECE].tobytes())


class HostKeyError(BoardConnectionError):
    """The board's host key is unknown or differs from its known_hosts entry."""

    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=True)


def fingerprint(key: paramiko.PKey) -> str:
    """``ssh-ed25519 SHA256:...``, as ``ssh-keygen -l`` prints it."""
    digest = base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")
    return f"{key.get_name()} SHA256:{digest}"


class _UnknownHostKey(paramiko.MissingHostKeyPolicy):
    """Refuse an unknown host key, or with ``trust`` append it to the known_hosts file."""

    def __init__(self, board: Board, trust: bool) -> None:
        self.board = board
        self.settings = ssh_settings(board)
        self.trust = trust

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        known_hosts = self.settings.known_hosts
        if not self.trust:
            raise HostKeyError(
                f"board {self.board.name}: host key of {hostname} ({fingerprint(key)}) is not in "
                f"{known_hosts}; check the fingerprint on the board and add it "
                f"(ssh-keyscan -p {self.settings.port} {self.settings.host} >> {known_hosts}), "
                "or trust it on first use explicitly"
            )
        known_hosts.parent.mkdir(parents=True, exist_ok=True)
        with known_hosts.open("a", encoding="utf-8") as f:
            f.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        client.get_host_keys().add(hostname, key.get_name(), key)
        log.warning(
            "board %s: trusted new host key %s of %s on first use; saved to %s",
            self.board.name,
            fingerprint(key),
            hostname,
            known_hosts,
        )


def ssh_settings(board: Board) -> SshSettings:
    """The board's SSH settings; a board of another transport is a caller's mistake."""
    if not isinstance(board.transport, SshSettings):
        raise TypeError(f"board {board.name} is reached by {board.transport.kind}, not SSH")
    return board.transport


def _auth(board: Board) -> dict[str, object]:
    """paramiko connect() arguments for the board's one auth method."""
    settings = ssh_settings(board)
    if settings.key_file is not None:
        if not settings.key_file.is_file():
            raise BoardConnectionError(
                f"board {board.name}: auth.key_file {settings.key_file} does not exist "
                f"(board file {board.source})",
                permanent=True,
            )
        return {
            "key_filename": str(settings.key_file),
            "allow_agent": False,
            "look_for_keys": False,
        }
    if settings.agent:
        return {"allow_agent": True, "look_for_keys": False}
    assert settings.password_env is not None  # the schema requires one auth method
    password = os.environ.get(settings.password_env)
    if password is None:
        raise BoardConnectionError(
            f"board {board.name}: environment variable {settings.password_env} "
            f"(auth.password_env in {board.source}) is not set",
            permanent=True,
        )
    return {"password": password, "allow_agent": False, "look_for_keys": False}


def _auth_method(settings: SshSettings) -> str:
    if settings.key_file is not None:
        return f"key {settings.key_file}"
    return "the SSH agent" if settings.agent else f"the password in ${settings.password_env}"


def _load_known_hosts(client: paramiko.SSHClient, board: Board) -> None:
    """The board's known_hosts into ``client``; a file paramiko cannot read is a
    ``HostKeyError`` naming it (never quoting its lines)."""
    known_hosts = ssh_settings(board).known_hosts
    try:
        client.load_host_keys(str(known_hosts))
    except paramiko.hostkeys.InvalidHostKey:
        why = "a line is not a valid host key entry"
    except UnicodeDecodeError as exc:
        why = f"not UTF-8 text (byte {exc.start})"
    except OSError as exc:
        why = f"cannot be read: {exc.strerror}"
    else:
        return
    raise HostKeyError(
        f"board {board.name}: known_hosts file {known_hosts} (known_hosts in {board.source}): {why}"
    )


# errno -> what it means for reaching a board, in words
_ERRNO_CAUSES = {
    errno.ECONNREFUSED: "connection refused (nothing listens on that port)",
    errno.EHOSTUNREACH: "host unreachable (no route to it)",
    errno.ENETUNREACH: "network unreachable",
    errno.ECONNRESET: "the connection was reset by the board",
    errno.ETIMEDOUT: "no answer (timed out)",
}


def _cause(exc: BaseException, timeout: float) -> str:
    """Why a connection failed, in words, without paramiko's own types and texts."""
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError) and exc.errors:
        exc = next(iter(exc.errors.values()))  # one address tried per board
    if isinstance(exc, socket.gaierror):
        return "the host name does not resolve"
    if isinstance(exc, TimeoutError | socket.timeout):
        return f"no answer within {timeout:g} s"
    if isinstance(exc, OSError) and exc.errno in _ERRNO_CAUSES:
        return _ERRNO_CAUSES[exc.errno]
    if isinstance(exc, EOFError):
        return "the board closed the connection"
    if isinstance(exc, paramiko.SSHException) and "banner" in str(exc):
        return f"no SSH server answered (no SSH banner within {timeout:g} s)"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def connect(
    board: Board, *, trust_on_first_use: bool = False, timeout: float = 10.0
) -> SshTransport:
    """An authenticated connection to ``board`` whose host key matched its known_hosts."""
    settings = ssh_settings(board)
    client = paramiko.SSHClient()
    if settings.known_hosts.is_file():
        _load_known_hosts(client, board)
    elif not trust_on_first_use:
        raise HostKeyError(
            f"board {board.name}: known_hosts file {settings.known_hosts} does not exist "
            f"(known_hosts in {board.source})"
        )
    client.set_missing_host_key_policy(_UnknownHostKey(board, trust_on_first_use))
    where = f"board {board.name} ({board.address})"
    try:
        client.connect(
            settings.host,
            port=settings.port,
            username=settings.user,
            timeout=timeout,
            banner_timeout=timeout,
            auth_timeout=timeout,
            **_auth(board),  # type: ignore[arg-type]
        )
    except paramiko.BadHostKeyException as exc:
        client.close()
        raise HostKeyError(
            f"{where}: host key CHANGED: {settings.known_hosts} has "
            f"{fingerprint(exc.expected_key)}, the server presented {fingerprint(exc.key)}. "
            "If the board was reinstalled, remove its old entry; otherwise someone may be "
            "intercepting the connection"
        ) from None
    except paramiko.AuthenticationException:
        client.close()
        raise BoardConnectionError(
            f"{where}: authentication as {settings.user} with {_auth_method(settings)} failed",
            permanent=True,
        ) from None
    except BoardConnectionError:  # from _auth or the host key policy
        client.close()
        raise
    except _LINK_ERRORS as exc:
        client.close()
        raise BoardConnectionError(f"{where}: cannot connect: {_cause(exc, timeout)}") from None
    transport = client.get_transport()
    assert transport is not None  # connect() succeeded
    transport.set_keepalive(15)
    return SshTransport(client)


class SshTransport:
    """A ``Transport`` over one authenticated SSH connection; ``connect`` makes it. Every
    command and stream is a channel of its own, run by the connection's session process (sshd's
    child), which ends with the connection; a file goes through ``cat``'s stdin, which SSH
    carries byte for byte."""

    capabilities = Capabilities(
        "SSH connection", streams=True, concurrent=True, file_copy=True, session="SSH session"
    )

    def __init__(self, client: paramiko.SSHClient) -> None:
        self._client = client

    def _open_channel(self, timeout: float) -> paramiko.Channel:
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise BoardConnectionError("the SSH connection is closed")
        try:
            return transport.open_session(timeout=timeout)
        except _LINK_ERRORS as exc:
            raise BoardConnectionError(f"cannot open an SSH channel: {exc}") from None

    def run(self, command: str, *, timeout: float = 30.0, stdin: bytes = b"") -> CommandResult:
        """Run ``command`` (already quoted) and collect its output within ``timeout`` and
        ``MAX_OUTPUT`` bytes per stream."""
        deadline = time.monotonic() + timeout
        out, err = bytearray(), bytearray()
        channel = self._open_channel(timeout)
        try:
            channel.exec_command(command)
            send_all(channel, stdin)
            channel.shutdown_write()
            chunk = None
            while chunk != b"":  # until end of stdout
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise BoardConnectionError(
                        f"remote command did not finish within {timeout:g} s"
                    )
                channel.settimeout(min(remaining, 1.0))
                try:
                    chunk = channel.recv(65536)
                except TimeoutError:
                    chunk = None
                out += chunk or b""
                while channel.recv_stderr_ready() and len(err) <= MAX_OUTPUT:
                    err += channel.recv_stderr(65536)
                _check_output(out, err)
            if not channel.status_event.wait(max(0.0, deadline - time.monotonic())):
                raise BoardConnectionError(f"remote command did not finish within {timeout:g} s")
            while channel.recv_stderr_ready() and len(err) <= MAX_OUTPUT:
                err += channel.recv_stderr(65536)
            _check_output(out, err)
            return CommandResult(channel.recv_exit_status(), bytes(out), bytes(err))
        except _LINK_ERRORS as exc:
            raise BoardConnectionError(f"remote command failed: {exc}") from None
        finally:
            channel.close()

    def open_stream(self, command: str, *, timeout: float = 10.0) -> SshStream:
        """Start ``command`` (already quoted) on its own channel."""
        channel = self._open_channel(timeout)
        try:
            channel.exec_command(command)
        except _LINK_ERRORS as exc:
            channel.close()
            raise BoardConnectionError(f"cannot start a remote command: {exc}") from None
        return SshStream(channel)

    def put(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """Write ``data`` to the file ``path`` on the board, through ``cat``."""
        script = 'cat > "$1" && chmod "$2" "$1"'
        result = self.run(shell_command(["sh", "-c", script, "sh", path, f"{mode:o}"]), stdin=data)
        if result.status != 0:
            why = result.stderr.decode(errors="replace").strip()
            raise BoardError(f"cannot write {path} on the board: {why}")

    def close(self) -> None:
        self._client.close()


def _check_output(out: bytearray, err: bytearray) -> None:
    """Stop reading a command whose output passed ``MAX_OUTPUT``: the channel is closed after."""
    for name, data in (("stdout", out), ("stderr", err)):
        if len(data) > MAX_OUTPUT:
            raise BoardConnectionError(
                f"remote command wrote more than {MAX_OUTPUT} bytes to {name}; stopped reading it",
                permanent=True,
            )


class SshStream:
    """A ``Stream``: one remote command on its own SSH channel."""

    def __init__(self, channel: paramiko.Channel) -> None:
        self._channel = channel

    def send(self, data: bytes, timeout: float) -> None:
        try:
            self._channel.settimeout(timeout)
            send_all(self._channel, data)
        except _LINK_ERRORS as exc:
            raise BoardConnectionError(f"cannot write to the remote command: {exc}") from None

    def close_stdin(self) -> None:
        try:
            self._channel.shutdown_write()
        except _LINK_ERRORS as exc:
            raise BoardConnectionError(f"cannot close the remote command's input: {exc}") from None

    def recv(self, size: int, timeout: float) -> bytes:
        self._channel.settimeout(timeout)
        try:
            return self._channel.recv(size)
        except TimeoutError:
            raise
        except _LINK_ERRORS as exc:
            raise BoardConnectionError(f"cannot read from the remote command: {exc}") from None

    def recv_stderr(self) -> bytes:
        data = bytearray()
        while self._channel.recv_stderr_ready() and len(data) < MAX_OUTPUT:  # a flood waits
            data += self._channel.recv_stderr(65536)
        return bytes(data)

    def wait(self, timeout: float) -> int | None:
        if not self._channel.status_event.wait(timeout):
            return None
        return self._channel.recv_exit_status()

    @property
    def closed(self) -> bool:
        return bool(self._channel.closed)

    def close(self) -> None:
        self._channel.close()
