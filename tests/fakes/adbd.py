"""A fake adb server on 127.0.0.1 for the adb transport's tests: the adb host protocol in front
of one or more "devices" that are folders of this machine.

It speaks what a client of a real adb server sends (adb's protocol.txt, SERVICES.TXT,
SYNC.TXT): a request is 4 hex digits of length and the text; the server answers ``OKAY`` or
``FAIL`` + a hex-length message. ``host:version``, ``host:devices``, ``host:transport:SERIAL``
(and ``host:tport:serial:SERIAL``, which adds an 8-byte transport id) select a device on the
connection, then ``shell,v2[,raw]:COMMAND`` runs COMMAND with ``sh -c`` in the device's sandbox
folder (its own session, like adbd's shells; killed with its process group when the client
goes) speaking shell v2 packets (id byte, little-endian uint32 length, data: 0 stdin, 1 stdout,
2 stderr, 3 exit status, 4 close stdin), and ``sync:`` serves STAT, SEND, RECV and QUIT.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
import struct
import subprocess
import threading
from pathlib import Path

from tests.fakes.sshd import free_port

VERSION = 40  # adb 1.0.40: clients select a device with host:transport:SERIAL
_PACKET = struct.Struct("<BI")
_STDIN, _STDOUT, _STDERR, _EXIT, _CLOSE_STDIN = range(5)


# The places of the protocol where ``AdbServer.tamper`` may answer in place of the server.
STAGES = ("host:version", "host:devices", "host:transport", "shell", "sync:STAT", "sync:SEND")


class AdbServer:
    """``devices``: serial -> sandbox folder (commands run there; a device whose folder is
    None is listed as ``offline``). ``requests`` records every request, for the tests.
    ``tamper``: stage (one of ``STAGES``) -> the bytes sent instead of the reply there (the
    connection then closes), for the tests of a broken or hostile server."""

    def __init__(self, devices: dict[str, Path | None]) -> None:
        self.devices = devices
        self.tamper: dict[str, bytes] = {}
        self.requests: list[str] = []
        self.port = free_port()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._processes: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._stopped = False
        threading.Thread(target=self._accept, name="fake-adb", daemon=True).start()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def stop(self) -> None:
        """Close the listener and kill every shell still running."""
        self._stopped = True
        with contextlib.suppress(OSError):  # wakes the accepting thread (close alone does not)
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for process in self._processes:
                _kill_group(process)

    # -- the smart-socket requests -----------------------------------------------------------

    def _serve(self, client: socket.socket) -> None:
        with client:
            device: Path | None = None
            try:
                while True:
                    request = _request(client)
                    self.requests.append(request)
                    stage = next((s for s in STAGES[:4] if request.startswith(s)), request)
                    if request.startswith("host:tport:"):
                        stage = "host:transport"
                    if stage in self.tamper:
                        client.sendall(self.tamper[stage])
                        return
                    if request == "host:version":
                        _okay(client, f"{VERSION:04x}")
                        return
                    if request == "host:devices":
                        listing = "".join(
                            f"{serial}\t{'device' if root else 'offline'}\n"
                            for serial, root in self.devices.items()
                        )
                        _okay(client, listing)
                        return
                    if request.startswith(("host:transport:", "host:tport:serial:")):
                        serial = request.rsplit(":", 1)[1]
                        device = self.devices.get(serial)
                        if device is None:
                            _fail(client, f"device '{serial}' not found")
                            return
                        client.sendall(b"OKAY")
                        if request.startswith("host:tport:"):
                            client.sendall(struct.pack("<Q", 1))
                        continue
                    if device is not None and request.startswith("shell,v2"):
                        client.sendall(b"OKAY")
                        self._shell(client, device, request.split(":", 1)[1])
                        return
                    if device is not None and request == "sync:":
                        client.sendall(b"OKAY")
                        _sync(client, device, self.tamper)
                        return
                    _fail(client, f"unknown request {request!r}")
                    return
            except (OSError, EOFError):
                return

    # -- shell v2 ----------------------------------------------------------------------------

    def _shell(self, client: socket.socket, root: Path, command: str) -> None:
        process = subprocess.Popen(
            ["sh", "-c", command],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # adbd's shells lead their own session
        )
        with self._lock:
            self._processes.add(process)
        sending = threading.Lock()

        def send(kind: int, data: bytes) -> None:
            with sending, contextlib.suppress(OSError):
                client.sendall(_PACKET.pack(kind, len(data)) + data)

        def pump(pipe: object, kind: int) -> None:
            assert hasattr(pipe, "read1")
            while data := pipe.read1(65536):
                send(kind, data)

        pumps = [
            threading.Thread(target=pump, args=(process.stdout, _STDOUT), daemon=True),
            threading.Thread(target=pump, args=(process.stderr, _STDERR), daemon=True),
        ]
        for thread in pumps:
            thread.start()
        feeder = threading.Thread(target=self._feed, args=(client, process), daemon=True)
        feeder.start()
        status = process.wait()
        for thread in pumps:
            thread.join()
        send(_EXIT, bytes([status & 0xFF]))
        with self._lock:
            self._processes.discard(process)

    def _feed(self, client: socket.socket, process: subprocess.Popen[bytes]) -> None:
        """The client's packets to the process's stdin; a client that goes kills the shell."""
        assert process.stdin is not None
        try:
            while True:
                kind, size = _PACKET.unpack(_exactly(client, _PACKET.size))
                data = _exactly(client, size)
                if kind == _STDIN:
                    process.stdin.write(data)
                    process.stdin.flush()
                elif kind == _CLOSE_STDIN:
                    process.stdin.close()
        except (OSError, EOFError, ValueError):
            if process.poll() is None:
                _kill_group(process)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


# -- sync ---------------------------------------------------------------------------------------


def _sync(client: socket.socket, root: Path, tamper: dict[str, bytes]) -> None:
    """The sync service until QUIT; paths are absolute (``root`` is only the shells' folder)."""
    while True:
        command = _exactly(client, 4).decode()
        (size,) = struct.unpack("<I", _exactly(client, 4))
        if command == "QUIT":
            return
        argument = _exactly(client, size).decode()
        if command == "STAT" and "sync:STAT" in tamper:
            client.sendall(tamper["sync:STAT"])
            return
        if command == "STAT":
            try:  # the device's paths are this machine's, as a loopback board's are
                info = Path(argument).stat()
                fields = (info.st_mode, info.st_size, int(info.st_mtime))
                client.sendall(b"STAT" + struct.pack("<III", *fields))
            except OSError:
                client.sendall(b"STAT" + struct.pack("<III", 0, 0, 0))
        elif command == "SEND":
            name, _, mode = argument.rpartition(",")
            data = bytearray()
            while True:
                kind = _exactly(client, 4)
                (length,) = struct.unpack("<I", _exactly(client, 4))
                if kind == b"DONE":
                    break
                data += _exactly(client, length)
            if "sync:SEND" in tamper:  # its status, once the file's data is in
                client.sendall(tamper["sync:SEND"])
                return
            try:
                Path(name).write_bytes(bytes(data))
                os.chmod(name, stat.S_IMODE(int(mode)))
                client.sendall(b"OKAY" + struct.pack("<I", 0))
            except OSError as exc:
                message = str(exc).encode()
                client.sendall(b"FAIL" + struct.pack("<I", len(message)) + message)
        elif command == "RECV":
            try:
                data = Path(argument).read_bytes()
            except OSError as exc:
                message = str(exc).encode()
                client.sendall(b"FAIL" + struct.pack("<I", len(message)) + message)
                continue
            for start in range(0, len(data), 65536):
                piece = data[start : start + 65536]
                client.sendall(b"DATA" + struct.pack("<I", len(piece)) + piece)
            client.sendall(b"DONE" + struct.pack("<I", 0))
        else:
            message = f"unknown sync command {command!r}".encode()
            client.sendall(b"FAIL" + struct.pack("<I", len(message)) + message)
            return


# -- framing ------------------------------------------------------------------------------------


def _exactly(client: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = client.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def _request(client: socket.socket) -> str:
    return _exactly(client, int(_exactly(client, 4), 16)).decode()


def _okay(client: socket.socket, payload: str) -> None:
    data = payload.encode()
    client.sendall(b"OKAY" + f"{len(data):04x}".encode() + data)


def _fail(client: socket.socket, message: str) -> None:
    data = message.encode()
    client.sendall(b"FAIL" + f"{len(data):04x}".encode() + data)
