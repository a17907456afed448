"""The adb transport: a board reached through an adb server (``adb start-server`` on the host,
or one a farm shares), by its device serial.

adbutils (PyPI; a pure-Python client of the adb server protocol, maintained) finds the server,
selects the device and pushes files over the sync service. Commands run through the shell v2
service, framed here: adbutils' own shell helpers send no stdin, and a runner session talks to
its process through stdin for as long as it lives. A shell v2 packet is one byte of id
(0 stdin, 1 stdout, 2 stderr, 3 exit, 4 close stdin), a little-endian uint32 length and the
data; the exit packet's one byte is the exit status. ``connect`` gives an ``AdbTransport``
(``harness.boards.transport.Transport``); no adbutils type or exception leaves this module.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time

import adbutils

from harness.boards.inventory import Board
from harness.boards.settings import AdbSettings
from harness.boards.transport import (
    MAX_OUTPUT,
    BoardConnectionError,
    Capabilities,
    CommandResult,
)

_STDIN, _STDOUT, _STDERR, _EXIT, _CLOSE_STDIN = range(5)
_HEADER = struct.Struct("<BI")
_PIECE = 256 * 1024  # stdin packets: adbd takes up to this much per packet
_LINK_ERRORS = (OSError, adbutils.AdbError, EOFError)
# What adbutils raises on a reply that is not the protocol: a length that is not hex
# (ValueError), a short STAT reply (struct.error), another reply id than the one expected
# (AssertionError), a time stamp out of range (OverflowError). The server may be broken or not
# an adb server at all; the board is then unreachable, as with a link that fails.
_REPLY_ERRORS = (ValueError, struct.error, AssertionError, OverflowError)
# A board may be broken or hostile: a packet larger than adbd ever sends ends the stream, and
# stdout not yet read holds the reader back (a runner's frames are read as they come).
_MAX_PACKET = 1 << 20
_MAX_PENDING = 16 << 20
# The shell socket stays in timeout mode: a socket's blocking mode is its file's, shared by the
# reader thread, so a send that switched it to timeout mode and back left the reader's blocking
# recv() an EAGAIN (BlockingIOError) it took for the end of the stream, losing the output. The
# reader wakes this often when idle; a send sets its own timeout and restores this one.
_IDLE_S = 1.0


def adb_settings(board: Board) -> AdbSettings:
    """The board's adb settings; a board of another transport is a caller's mistake."""
    if not isinstance(board.transport, AdbSettings):
        raise TypeError(f"board {board.name} is reached by {board.transport.kind}, not adb")
    return board.transport


def connect(
    board: Board, *, trust_on_first_use: bool = False, timeout: float = 10.0
) -> AdbTransport:
    """The board's device through its adb server, once the server lists it as a ``device``.

    ``trust_on_first_use`` has no meaning here: adb authenticates the host to the device (its
    RSA key, accepted on the device), the adb server runs on a host the user trusts.
    """
    settings = adb_settings(board)
    where = f"board {board.name} ({board.address})"
    client = adbutils.AdbClient(settings.server_host, settings.server_port, timeout)
    try:
        states = {info.serial: info.state for info in client.list()}
    except _LINK_ERRORS as exc:
        raise BoardConnectionError(f"{where}: cannot reach the adb server: {exc}") from None
    except _REPLY_ERRORS as exc:
        raise _bad_reply(where, "listing its devices", exc) from None
    state = states.get(settings.serial)
    if state != "device":
        listed = ", ".join(f"{serial} ({s})" for serial, s in sorted(states.items())) or "none"
        raise BoardConnectionError(
            f"{where}: the adb server does not list {settings.serial} as a device "
            f"({'state ' + state if state else 'not listed'}; devices: {listed})"
        )
    return AdbTransport(client.device(settings.serial), where, timeout)


def _bad_reply(where: str, doing: str, exc: Exception) -> BoardConnectionError:
    # The exception's text quotes the server's bytes at most through repr (escaped).
    detail = f": {exc}" if str(exc) else ""
    return BoardConnectionError(
        f"{where}: the adb server's reply while {doing} is not the adb protocol "
        f"({type(exc).__name__}{detail})"
    )


class AdbTransport:
    """A ``Transport`` over one device of an adb server; ``connect`` makes it. Every command
    and stream is a shell connection of its own; their shells hang off adbd, which outlives
    every client (no session process); files go by the sync service."""

    capabilities = Capabilities("adb connection", streams=True, concurrent=True, file_copy=True)

    def __init__(self, device: adbutils.AdbDevice, where: str, timeout: float) -> None:
        self._device = device
        self._where = where
        self._timeout = timeout
        self._streams: list[AdbStream] = []

    def _shell(self, command: str, timeout: float) -> socket.socket:
        """A shell v2 connection running ``command`` (already quoted), without a terminal."""
        try:
            connection = self._device.open_transport(timeout=timeout)
            connection.send_command(f"shell,v2,raw:{command}")
            connection.check_okay()
        except _LINK_ERRORS as exc:
            raise BoardConnectionError(f"{self._where}: cannot start a shell: {exc}") from None
        except _REPLY_ERRORS as exc:
            raise _bad_reply(self._where, "starting a shell", exc) from None
        return connection.conn

    def run(self, command: str, *, timeout: float = 30.0, stdin: bytes = b"") -> CommandResult:
        """Run ``command`` (already quoted) and collect its output within ``timeout``."""
        stream = self.open_stream(command, timeout=timeout)
        deadline = time.monotonic() + timeout
        try:
            stream.send(stdin, timeout)
            stream.close_stdin()
            out = bytearray()
            while chunk := stream.recv(65536, max(0.0, deadline - time.monotonic())):
                out += chunk
                if len(out) > MAX_OUTPUT:
                    raise BoardConnectionError(
                        f"remote command wrote more than {MAX_OUTPUT} bytes to stdout; "
                        "stopped reading it"
                    )
            status = stream.wait(max(0.0, deadline - time.monotonic()))
            if status is None:
                raise TimeoutError
        except TimeoutError:
            raise BoardConnectionError(
                f"remote command did not finish within {timeout:g} s"
            ) from None
        finally:
            stream.close()
        return CommandResult(status, bytes(out), stream.recv_stderr())

    def open_stream(self, command: str, *, timeout: float = 10.0) -> AdbStream:
        """Start ``command`` (already quoted) on its own shell v2 connection."""
        stream = AdbStream(self._shell(command, timeout))
        self._streams = [s for s in self._streams if not s.closed] + [stream]
        return stream

    def put(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """Write ``data`` to the file ``path`` on the board (adb push: the sync service)."""
        try:
            self._device.sync.push(data, path, mode=mode)
        except _LINK_ERRORS as exc:
            raise BoardConnectionError(f"{self._where}: cannot push {path}: {exc}") from None
        except _REPLY_ERRORS as exc:
            raise _bad_reply(self._where, f"pushing {path}", exc) from None

    def close(self) -> None:
        """Close every stream: the device's shells see their connection go."""
        for stream in self._streams:
            stream.close()
        self._streams = []


class AdbStream:
    """A ``Stream``: one shell v2 connection, its packets read by a thread of its own."""

    def __init__(self, connection: socket.socket) -> None:
        self._socket = connection
        self._socket.settimeout(_IDLE_S)
        self._changed = threading.Condition()
        self._stdout = bytearray()
        self._stderr = bytearray()
        self._status: int | None = None
        self._ended = False  # no more packets: the exit packet came, or the connection went
        self._closed = False
        self._reader = threading.Thread(target=self._read, name="adb-shell", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            while True:
                header = self._exactly(_HEADER.size)
                kind, size = _HEADER.unpack(header)
                if size > _MAX_PACKET:
                    return
                data = self._exactly(size)
                with self._changed:
                    if kind == _STDOUT:
                        self._changed.wait_for(
                            lambda: len(self._stdout) < _MAX_PENDING or self._closed
                        )
                        self._stdout += data
                    elif kind == _STDERR:
                        self._stderr += data[: max(0, MAX_OUTPUT - len(self._stderr))]
                    elif kind == _EXIT:
                        self._status = data[0] if data else 255
                        return
                    self._changed.notify_all()
        except (OSError, EOFError):
            pass
        finally:
            with self._changed:
                self._ended = True
                self._changed.notify_all()

    def _exactly(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            try:
                chunk = self._socket.recv(size - len(data))
            except TimeoutError:  # idle (the command is still running), or a send's timeout
                if self._closed:
                    raise EOFError from None
                continue
            if not chunk:
                raise EOFError
            data += chunk
        return bytes(data)

    def _packet(self, kind: int, data: bytes, timeout: float) -> None:
        try:
            self._socket.settimeout(timeout)
            self._socket.sendall(_HEADER.pack(kind, len(data)) + data)
        except OSError as exc:
            raise BoardConnectionError(f"cannot write to the remote command: {exc}") from None
        finally:
            self._socket.settimeout(_IDLE_S)

    def send(self, data: bytes, timeout: float) -> None:
        view = memoryview(data)
        for start in range(0, len(view), _PIECE):
            self._packet(_STDIN, view[start : start + _PIECE].tobytes(), timeout)

    def close_stdin(self) -> None:
        self._packet(_CLOSE_STDIN, b"", 10.0)

    def recv(self, size: int, timeout: float) -> bytes:
        with self._changed:
            if not self._changed.wait_for(lambda: self._stdout or self._ended, timeout):
                raise TimeoutError
            data = bytes(self._stdout[:size])
            del self._stdout[:size]
            self._changed.notify_all()  # the reader may be waiting for room
            return data

    def recv_stderr(self) -> bytes:
        with self._changed:
            data = bytes(self._stderr)
            self._stderr.clear()
            return data

    def wait(self, timeout: float) -> int | None:
        with self._changed:
            self._changed.wait_for(lambda: self._ended, timeout)
            if not self._ended:
                return None
            return self._status if self._status is not None else -1

    @property
    def closed(self) -> bool:
        return self._closed or self._ended

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)
        self._socket.close()
