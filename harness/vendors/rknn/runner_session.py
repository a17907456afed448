"""Host side of the board runner protocol: one connection, one lock, one runner process.

``open()`` opens a transport to the board (``harness.boards.transport``), takes the board's
lock (a heartbeat thread keeps it fresh), probes the board, clears what earlier sessions left
in the work directory, uploads the runner and starts it as ONE stream. ``run()`` ships a batch
as one tar and yields results as they come. The host enforces its own case timeout on top of
the runner's, and tells a lost connection (``ConnectionLost``: reconnect and retry) from a
runner that crashed or hung (``RunnerFailed``: the case in flight is lost, a new runner is
needed). ``close()`` leaves nothing behind: the runner is told to exit (killed if it does
not), the session folder removed, the lock released.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import json
import logging
import secrets
import tarfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, NoReturn

import numpy as np

from harness.boards import BoardError
from harness.boards.discovery import probe
from harness.boards.inventory import Board
from harness.boards.lock import BoardBusy, BoardLock
from harness.boards.transport import (
    BoardConnectionError,
    Stream,
    Transport,
    open_transport,
    shell_command,
)
from harness.vendors.rknn import BOARD_FILES

log = logging.getLogger(__name__)

RUNNER_PATH = BOARD_FILES / "hil_board_runner.py"
RUNNER_NAME = "hil_board_runner.py"
STOP_GRACE_S = 5.0
_STDERR_TAIL = 4000

# $1 work directory, $2 this session's folder, then the runtime's own arguments; the runtime's
# shell lines follow (the Python runner's: store stdin as the runner).
_PREPARE = r"""
for old in "$1"/session-*; do [ "$old" = "$2" ] || rm -rf -- "$old"; done
mkdir -p -- "$2" || exit 1
"""


@functools.cache
def runner_module() -> ModuleType:
    """The board runner file loaded on the host: one definition of the frame format."""
    if not RUNNER_PATH.is_file():
        raise BoardError(f"board runner not found at {RUNNER_PATH}")
    spec = importlib.util.spec_from_file_location("hil_board_runner", RUNNER_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ConnectionLost(BoardConnectionError):
    """The connection to the board dropped; ``case`` was in flight (None between cases)."""

    def __init__(self, message: str, case: str | None) -> None:
        super().__init__(message)
        self.case = case


class BoardIncompatible(BoardError):
    """The board's runtime versions are known not to work with the host's toolkit."""


class RunnerFailed(BoardError):
    """The runner crashed, hung or broke the protocol; ``case`` was in flight."""

    def __init__(self, message: str, case: str | None) -> None:
        super().__init__(message)
        self.case = case


@dataclass
class CaseJob:
    """One case for the runner: files for its folder and how to run it."""

    id: str  # protocol id and folder name, e.g. "c0"; never the caller's case id
    files: dict[str, bytes]  # relative path -> content; holds model.rknn and the inputs
    inputs: list[str]  # .npy file names in model input order
    data_format: str
    timeout_s: float
    core_mask: str
    test_fault: str | None = None

    def header(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "dir": self.id,
            "model": "model.rknn",
            "inputs": self.inputs,
            "data_format": self.data_format,
            "timeout_s": self.timeout_s,
            "core_mask": self.core_mask,
            "test_fault": self.test_fault,
        }


@dataclass
class CaseResult:
    id: str
    # "ok", "runtime-error", "timeout" (board-side), "corrupt" (in transit) or "infra-error"
    status: str
    outputs: list[np.ndarray] | None = None
    error: str | None = None
    runtime_version: str = ""
    core_mask: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    tensors: list[dict[str, Any]] = field(default_factory=list)  # as the runtime reports them
    versions: dict[str, str] = field(default_factory=dict)
    log: str = ""  # what the runner printed for this case


class _Eof(Exception):
    pass


class RunnerSession:
    """One runner on one board; ``open()`` before ``run()``, always ``close()``.

    This is the Python runner's session; ``c_session.CRunnerSession`` replaces the runtime's
    parts (``_install``, ``run``, ``_stop_runner``) for boards with only the C API.
    """

    def __init__(
        self,
        board: Board,
        token: str,
        *,
        trust_on_first_use: bool = False,
        connect_timeout: float = 10.0,
        start_timeout: float = 120.0,
        host_grace_s: float = 10.0,
        lease_s: float = 120.0,
        lock_wait_s: float = 0.0,
        idle_timeout_s: float = 900.0,
        sdk: str | None = None,
    ) -> None:
        self.board = board
        self.token = token  # the lock owner's identity, the same across reconnects
        self.dir = f"{board.workdir}/session-{secrets.token_hex(6)}"
        self.trust_on_first_use = trust_on_first_use
        self.connect_timeout = connect_timeout
        self.start_timeout = start_timeout
        self.host_grace_s = host_grace_s
        self.lease_s = lease_s
        self.lock_wait_s = lock_wait_s
        self.idle_timeout_s = idle_timeout_s
        self.sdk = sdk  # the toolkit release that converts, for the version check
        self.version_warnings: list[str] = []
        self.transport: Transport | None = None
        self.lock: BoardLock | None = None
        self.facts: dict[str, Any] = {}
        self.hello: dict[str, Any] = {}
        self.lock_lost = False
        self.in_flight: str | None = None
        self.pids: list[int] = []  # board-side processes to kill when the runner hangs
        self.usable = False
        self._stream: Stream | None = None
        self._buffer = bytearray()
        self._stderr = bytearray()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    # -- start -------------------------------------------------------------------------------

    def open(self) -> None:
        """Connect, lock, probe, check the versions, prepare the work directory and start the
        runner; ``BoardIncompatible`` when the board's versions are known not to work."""
        try:
            self.transport = open_transport(
                self.board, trust_on_first_use=self.trust_on_first_use, timeout=self.connect_timeout
            )
            self.lock = BoardLock(self.transport, self.board, self.token, self.lease_s)
            self.lock.acquire(self.lock_wait_s)
            self._heartbeat = threading.Thread(target=self._beat, name="board-lock", daemon=True)
            self._heartbeat.start()
            self.facts = probe(self.board, self.transport)
            self._check_versions()
            self._install()
        except BaseException:
            self.close()
            raise
        self.usable = True

    def _check_versions(self) -> None:
        versions = self.board.runtime.check_versions(self.facts, self.sdk)
        if versions.errors:
            raise BoardIncompatible(f"board {self.board.name}: {'; '.join(versions.errors)}")
        for warning in versions.warnings:
            log.warning("board %s: %s", self.board.name, warning)
        self.version_warnings = versions.warnings

    def _install(self) -> None:
        """Upload the runner into the session folder and start it."""
        runner_module()  # checks that the runner file is there and loads
        self._prepare("")
        assert self.transport is not None
        self.transport.put(f"{self.dir}/{RUNNER_NAME}", RUNNER_PATH.read_bytes())
        self._start_runner()

    def _prepare(self, lines: str, *args: str, stdin: bytes = b"") -> str:
        """Clear older sessions' folders, create this one, then run ``lines``; their stdout."""
        assert self.transport is not None
        argv = ["sh", "-c", _PREPARE + lines, "sh", self.board.workdir, self.dir, *args]
        prepared = self.transport.run(shell_command(argv), stdin=stdin)
        if prepared.status != 0:
            raise BoardError(
                f"board {self.board.name}: cannot prepare {self.dir}: "
                f"{prepared.stderr.decode(errors='replace').strip()}"
            )
        return prepared.stdout.decode(errors="replace")

    def _exec(self, argv: Sequence[str], doing: str) -> Stream:
        """A new stream running ``argv`` on the board: the runner's one stream."""
        assert self.transport is not None
        try:
            return self.transport.open_stream(shell_command(argv), timeout=self.connect_timeout)
        except BoardConnectionError as exc:
            raise BoardConnectionError(f"board {self.board.name}: cannot {doing}: {exc}") from None

    def _start_runner(self) -> None:
        argv = [
            "exec", self.board.python, "-u", f"{self.dir}/{RUNNER_NAME}", "--workdir", self.dir,
            "--runtime", self.board.runtime.name, "--start-timeout", str(self.start_timeout),
            "--idle-timeout", str(self.idle_timeout_s),
        ]  # fmt: skip
        self._stream = self._exec(argv, "start runner")
        # The runner's own start-up deadline fires first; the host's catches a wedged board.
        header, _ = self._frame(self.start_timeout + self.host_grace_s, "while the runner started")
        if header.get("type") != "hello":
            raise BoardError(
                f"board {self.board.name}: runner did not start: {header.get('message', header)}"
            )
        self.hello = header
        self.pids = [header["pid"]] if isinstance(header.get("pid"), int) else []

    def _beat(self) -> None:
        """Refresh the lock's heartbeat every quarter lease until the session closes."""
        while not self._stop.wait(self.lease_s / 4):
            try:
                assert self.lock is not None
                if not self.lock.refresh():
                    self.lock_lost = True
                    log.error("board %s: lock %s was taken over", self.board.name, self.lock.path)
                    return
            except BoardError as exc:  # the connection is gone: the main thread will notice
                log.debug("board %s: heartbeat failed: %s", self.board.name, exc)

    # -- batches -----------------------------------------------------------------------------

    def run(
        self, jobs: Sequence[CaseJob], on_started: Callable[[str], None] | None = None
    ) -> Iterator[CaseResult]:
        """Ship ``jobs`` in one tar and yield their results in order of completion.

        Ends early (``usable`` turns False) when the runner exits after a board-side timeout;
        raises ``ConnectionLost`` or ``RunnerFailed`` naming the case in flight.
        """
        if self.lock_lost:
            raise BoardBusy(f"board {self.board.name}: this session's lock was taken over")
        assert self._stream is not None and self.usable
        # The runner's per-case deadline fires first; this one catches a wedged runner or board.
        timeout = max(job.timeout_s for job in jobs) + self.host_grace_s
        self.in_flight = None
        try:
            self._stream.send(batch_frame(jobs), timeout)
        except BoardConnectionError:
            self._lost("while sending the batch")
        started = time.monotonic()
        while True:
            frame, payload = self._frame(timeout, "during the batch")
            kind = frame.get("type")
            if kind == "started":
                self.in_flight, started = frame["case"], time.monotonic()
                if on_started is not None:
                    on_started(frame["case"])
            elif kind == "result":
                result = _result(frame, payload)
                result.timings["case_s"] = time.monotonic() - started
                self.in_flight = None
                yield result
                if result.status == "timeout":  # the runner exits after reporting it
                    self.usable = False
                    return
            elif kind == "done":
                return
            else:
                self.usable = False
                raise RunnerFailed(f"runner error: {frame.get('message', frame)}", self.in_flight)

    def _frame(self, timeout: float, doing: str) -> tuple[dict[str, Any], bytes]:
        """The next frame from the runner, within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        module = runner_module()
        try:
            header_size, payload_size = module.FRAME.unpack(self._read(module.FRAME.size, deadline))
            header = json.loads(self._read(header_size, deadline))
            return header, self._read(payload_size, deadline)
        except _Eof:
            self._lost(doing)
        except TimeoutError:
            self._hung(timeout, doing)
        except (ValueError, UnicodeDecodeError) as exc:  # garbage on the protocol channel
            self._kill_runner()
            raise RunnerFailed(f"unreadable frame {doing}: {exc}", self.in_flight) from None

    def _read(self, size: int, deadline: float) -> bytes:
        stream = self._stream
        assert stream is not None
        while len(self._buffer) < size:
            self._drain_stderr()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            try:
                chunk = stream.recv(max(65536, size - len(self._buffer)), min(remaining, 0.5))
            except TimeoutError:
                continue
            except BoardConnectionError:
                raise _Eof from None
            if not chunk:
                raise _Eof
            self._buffer += chunk
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def _read_or_end(self, size: int, timeout: float) -> bytes:
        """``size`` bytes within ``timeout`` seconds; fewer (b"") at the end of the output."""
        try:
            return self._read(size, time.monotonic() + timeout)
        except _Eof:
            return b""

    def _drain_stderr(self) -> None:
        assert self._stream is not None
        self._stderr += self._stream.recv_stderr()
        del self._stderr[:-_STDERR_TAIL]

    def _stderr_tail(self) -> str:
        return self._stderr.decode(errors="replace").strip()

    def _lost(self, doing: str) -> NoReturn:
        """The runner's stdout ended: a dead runner, or a dead connection."""
        self.usable = False
        stream = self._stream
        assert stream is not None
        stream.wait(2)
        self._drain_stderr()
        if not self._connected():
            message = f"board {self.board.name}: SSH connection lost {doing}"
            raise ConnectionLost(message, self.in_flight)
        if not stream.closed:
            self._kill_runner()
            message = f"board {self.board.name}: runner closed its output {doing}; runner killed"
            raise RunnerFailed(message, self.in_flight)
        status = stream.wait(0)
        assert status is not None  # a closed stream has ended
        tail = self._stderr_tail()
        raise RunnerFailed(
            f"board {self.board.name}: runner exited {doing} (exit status {status}"
            f"{'' if status >= 0 else ': killed by a signal'})"
            + (f"; its stderr ends:\n{tail[-1500:]}" if tail else ""),
            self.in_flight,
        )

    def _hung(self, timeout: float, doing: str) -> NoReturn:
        """No frame within the host-side timeout: a hung runner, or a silently dead link."""
        self.usable = False
        if not self._connected():
            raise ConnectionLost(
                f"board {self.board.name}: no answer for {timeout:g} s {doing} and the SSH "
                "connection is dead",
                self.in_flight,
            )
        self._kill_runner()
        raise RunnerFailed(
            f"board {self.board.name}: no answer from the runner for {timeout:g} s {doing} "
            "(host-side timeout; the board-side one did not fire); runner killed",
            self.in_flight,
        )

    def _connected(self) -> bool:
        """True when a fresh command still runs over the transport."""
        if self.transport is None:
            return False
        try:
            return self.transport.run("true", timeout=10).status == 0
        except BoardError:
            return False

    def _kill_runner(self) -> None:
        """SIGKILL the runner (it may be stopped or stuck in a driver call); close its stream."""
        if self.pids and self.transport is not None:
            pids = [str(pid) for pid in self.pids]
            try:
                self.transport.run(shell_command(["kill", "-9", *pids]), timeout=10)
            except BoardError as exc:
                log.warning("board %s: cannot kill runner %s: %s", self.board.name, pids, exc)
        if self._stream is not None:
            self._stream.close()

    # -- end ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the runner, remove the session folder, release the lock; never raises."""
        self.usable = False
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=15)
        if self._stream is not None and not self._stream.closed:
            self._stop_runner()
        if self.transport is not None:
            self._clean_board()
            self.transport.close()
            self.transport = None

    def _stop_runner(self) -> None:
        stream = self._stream
        assert stream is not None
        if self.in_flight is None:  # idle: ask it to exit; a busy one may never read the frame
            try:
                stream.send(runner_module().encode_frame({"type": "exit"}), STOP_GRACE_S)
                stream.close_stdin()
            except BoardConnectionError:
                pass
            if stream.wait(STOP_GRACE_S) is not None:
                stream.close()
                return
        self._kill_runner()

    def _clean_board(self) -> None:
        assert self.transport is not None
        try:
            self.transport.run(shell_command(["rm", "-rf", "--", self.dir]), timeout=60)
            if self.lock is not None:
                self.lock.release()
                # The work directory goes too when nothing else is in it.
                self.transport.run(f"rmdir -- {shell_command([self.board.workdir])} 2>/dev/null")
        except BoardError as exc:
            log.warning("board %s: cleaning up %s failed: %s", self.board.name, self.dir, exc)


def batch_frame(jobs: Sequence[CaseJob]) -> bytes:
    """The batch message: the cases, then all their files as ONE uncompressed tar."""
    header = {"type": "batch", "cases": [job.header() for job in jobs]}
    files = {f"{job.id}/{name}": data for job in jobs for name, data in job.files.items()}
    encoded: bytes = runner_module().encode_frame(header, batch_tar(files))
    return encoded


def batch_tar(files: Mapping[str, bytes]) -> bytes:
    """``files`` (relative path -> content) as one uncompressed tar."""
    buffer = io.BytesIO()
    now = int(time.time())
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, now
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _result(frame: dict[str, Any], payload: bytes) -> CaseResult:
    """A result frame with its outputs checked against their checksums."""
    result = CaseResult(
        id=frame["case"],
        status=frame["status"],
        error=frame.get("error"),
        runtime_version=frame.get("runtime_version", ""),
        core_mask=frame.get("core_mask", ""),
        timings=dict(frame.get("timings", {})),
    )
    if result.status != "ok":
        return result
    outputs, offset = [], 0
    for index, spec in enumerate(frame.get("outputs", [])):
        data = payload[offset : offset + spec["size"]]
        offset += spec["size"]
        digest = hashlib.sha256(data).hexdigest()
        if digest != spec["sha256"]:
            result.status = "corrupt"
            result.error = (
                f"output {index} corrupted in transit: sha256 {digest[:16]}... "
                f"!= {spec['sha256'][:16]}... sent by the board"
            )
            return result
        outputs.append(np.load(io.BytesIO(data), allow_pickle=False))
    result.outputs = outputs
    return result
