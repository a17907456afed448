"""Host side of the board runner protocol: one connection, one lock, one runner process.

``open()`` opens a transport to the board (``harness.boards.transport``), refuses it when it
lacks a capability the session needs (``NEEDS``: a serial console's one channel cannot carry
the runner's stream and the heartbeat at once), takes the board's lock (a heartbeat thread
keeps it fresh), probes the board, clears what earlier sessions left in the work directory,
uploads the runner and starts it as ONE stream. ``run()`` ships a batch as one tar and yields
results as they come. A board may be broken or hostile, so what it sends is capped: a frame's
JSON header (``MAX_HEADER``, the runner's own cap), every byte sent for one case
(``MAX_CASE_BYTES``), frames out of turn, and each case's time: the host's deadline runs from
the case's start and no frame extends it. The host enforces that deadline on top of the
runner's own, and tells a lost connection (``ConnectionLost``: reconnect and retry) from a
runner that crashed or hung (``RunnerFailed``: the case in flight is lost, a new runner is
needed). ``close()`` leaves nothing behind: the runner is told to exit (killed if it does not),
the session folder removed, the lock released.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import json
import logging
import math
import secrets
import tarfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, NoReturn

import numpy as np

from harness.boards import BoardError, trouble
from harness.boards.discovery import read_facts
from harness.boards.inventory import Board
from harness.boards.lock import BoardBusy, BoardLock
from harness.boards.transport import (
    BoardConnectionError,
    Stream,
    Transport,
    open_transport,
    require,
    shell_command,
)
from harness.text import printable
from harness.vendors.rknn import BOARD_FILES
from harness.vendors.rknn.documents.conditions import PIN, RESTORE

log = logging.getLogger(__name__)

RUNNER_PATH = BOARD_FILES / "hil_board_runner.py"
RUNNER_NAME = "hil_board_runner.py"
STOP_GRACE_S = 5.0
HEARTBEAT_ANSWER_S = 5.0  # a lock heartbeat unanswered this long: the board may hang
CONNECTED_S = 10.0  # for the command that tells a hung runner from a dead connection
_STDERR_TAIL = 4000
# What the board may send for one case (frames, or the C runner's tar members): outputs of a
# few hundred MiB are far beyond the NPU models the harness runs.
MAX_CASE_BYTES = 256 * 2**20
_SHOWN = 2000  # characters of board text (an error, a version) kept in a result

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
class RunnerJob:
    """One case for the runner: files for its folder and how to run it."""

    id: str  # protocol id and folder name, e.g. "c0"; never the caller's case id
    files: dict[str, bytes]  # relative path -> content; holds model.rknn and the inputs
    inputs: list[str]  # .npy file names in model input order
    data_format: str
    timeout_s: float
    core_mask: str
    test_fault: str | None = None
    perf: dict[str, Any] | None = None  # JobTiming.to_json(): time the case too
    conditions: dict[str, str] = field(default_factory=dict)  # name -> file read around timing

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
            "perf": self.perf,
            "conditions": self.conditions,
        }


@dataclass
class RunnerReply:
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
    perf: dict[str, Any] = field(default_factory=dict)  # the timed runs (Observation.perf)


class _Eof(Exception):
    pass


class RunnerSession:
    """One runner on one board; ``open()`` before ``run()``, always ``close()``.

    This is the Python runner's session; ``c_session.CRunnerSession`` replaces the runtime's
    parts (``_install``, ``run``, ``_stop_runner``) for boards with only the C API.
    """

    # What it asks of the transport (``Capabilities``): the runner's stream stays open while
    # the lock's heartbeat, the check that the link still works and a hung runner's kill run
    # beside it, and the runner file is copied to the board.
    NEEDS: tuple[str, ...] = ("streams", "concurrent", "file_copy")

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
        max_case_bytes: int = MAX_CASE_BYTES,
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
        self.max_case_bytes = max_case_bytes
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
        self._window = 0.0  # seconds the board has for the step under way (``_expect``)
        self._deadline = 0.0
        self._allowance = 0  # bytes it may still send for it
        self._stderr = bytearray()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._beat_asked: float | None = None  # when the heartbeat unanswered so far was sent
        self._beat_missed = False  # that it went unanswered was said
        # The NPU clock pinned for this session (``pin_npu``): {"npu_freq", "how"} or
        # {"refused": why}; None: not asked. ``_restore``: RESTORE's arguments.
        self.pinned: dict[str, str] | None = None
        self._restore: list[str] = []

    # -- start -------------------------------------------------------------------------------

    def open(self) -> None:
        """Connect, lock, probe, check the versions, prepare the work directory and start the
        runner; ``BoardIncompatible`` when the board's versions are known not to work."""
        try:
            self.transport = open_transport(
                self.board, trust_on_first_use=self.trust_on_first_use, timeout=self.connect_timeout
            )
            require(self.transport, self.NEEDS, self.board, "a runner session")
            self.lock = BoardLock(self.transport, self.board, self.token, self.lease_s)
            self.lock.acquire(self.lock_wait_s)
            self._heartbeat = threading.Thread(target=self._beat, name="board-lock", daemon=True)
            self._heartbeat.start()
            self.facts = read_facts(self.board, self.transport)
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
            log.warning("board %s: %s", self.board.name, printable(warning))
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
        self._expect(self.start_timeout + self.host_grace_s)
        header, _ = self._frame("while the runner started")
        if header.get("type") != "hello":
            raise BoardError(
                f"board {self.board.name}: runner did not start: "
                f"{_shown(header.get('message', header))}"
            )
        self.hello = {key: v if isinstance(v, int) else _shown(v) for key, v in header.items()}
        self.pids = [header["pid"]] if isinstance(header.get("pid"), int) else []

    def _beat(self) -> None:
        """Refresh the lock's heartbeat every quarter lease until the session closes."""
        while not self._stop.wait(self.lease_s / 4):
            if self._beat_asked is None:
                self._beat_asked = time.monotonic()
            try:
                assert self.lock is not None
                if not self.lock.refresh():
                    self._beat_asked = None  # it answered: someone else holds the lock
                    self.lock_lost = True
                    log.error("board %s: lock %s was taken over", self.board.name, self.lock.path)
                    return
                self._beat_asked = None
            except BoardError as exc:  # the connection is gone: the main thread will notice
                log.debug("board %s: heartbeat failed: %s", self.board.name, exc)

    def _heard(self) -> None:
        """Say (once, on the main thread) that the board has not answered the heartbeat for
        ``HEARTBEAT_ANSWER_S``, and again when it answers: the first sign of a hung board,
        long before the case's deadline."""
        asked = self._beat_asked
        if asked is None and self._beat_missed:
            self._beat_missed = False
            trouble.say(f"board {self.board.name} answers the lock's heartbeat again")
        elif asked is not None and not self._beat_missed:
            silent = time.monotonic() - asked
            if silent >= HEARTBEAT_ANSWER_S:
                self._beat_missed = True
                case = " while a case runs on it" if self.in_flight else ""
                trouble.say(
                    f"board {self.board.name}: no answer to the lock's heartbeat for "
                    f"{silent:.0f} s{case}; waiting for it until this step's deadline, in "
                    f"{self._deadline - time.monotonic():.0f} s, then its {self._link} is "
                    "checked"
                )

    # -- batches -----------------------------------------------------------------------------

    def run(
        self, jobs: Sequence[RunnerJob], on_started: Callable[[str], None] | None = None
    ) -> Iterator[RunnerReply]:
        """Ship ``jobs`` in one tar and yield their results, in the order shipped: the runner
        runs them one after another, so a case started out of turn is a protocol failure.

        Ends early (``usable`` turns False) when the runner exits after a board-side timeout;
        raises ``ConnectionLost`` or ``RunnerFailed`` naming the case in flight.
        """
        if self.lock_lost:
            raise BoardBusy(f"board {self.board.name}: this session's lock was taken over")
        assert self._stream is not None and self.usable
        # The runner's per-case deadline fires first; this one catches a wedged runner or board.
        timeout = max(job.timeout_s for job in jobs) + self.host_grace_s
        waiting = [job.id for job in jobs]  # not started yet, in the order the runner takes them
        self.in_flight = None
        try:
            self._stream.send(batch_frame(jobs), timeout)
        except BoardConnectionError:
            self._lost("while sending the batch")
        self._expect(timeout)
        started = time.monotonic()
        while True:
            frame, payload = self._frame("during the batch")
            kind, case = frame.get("type"), str(frame.get("case"))
            if kind == "started" and self.in_flight is None and waiting and case == waiting[0]:
                waiting.pop(0)
                self.in_flight, started = case, time.monotonic()
                self._expect(timeout)
                if on_started is not None:
                    on_started(case)
            elif kind == "result" and self.in_flight is not None and case == self.in_flight:
                result = self._result(frame, payload)
                result.timings["case_s"] = time.monotonic() - started
                self.in_flight = None
                self._expect(timeout)
                yield result
                if result.status == "timeout":  # the runner exits after reporting it
                    self.usable = False
                    return
            elif kind == "done" and self.in_flight is None and not waiting:
                return
            else:
                self.usable = False
                self._kill_runner()  # one that reported an error has exited already
                what = "error" if kind == "error" else "frame out of turn"
                shown = _shown(frame.get("message") if kind == "error" else frame)
                raise RunnerFailed(f"runner {what}: {shown}", self.in_flight)

    def _expect(self, timeout: float) -> None:
        """Give the board ``timeout`` seconds and ``max_case_bytes`` bytes, from now, for its
        next step (start-up, a case); no frame it sends meanwhile extends either."""
        self._window = timeout
        self._deadline = time.monotonic() + timeout
        self._allowance = self.max_case_bytes

    def _frame(self, doing: str) -> tuple[dict[str, Any], bytes]:
        """The next frame from the runner, within the step's deadline and bytes."""
        module = runner_module()
        try:
            header_size, payload_size = module.FRAME.unpack(self._read(module.FRAME.size))
            if header_size > module.MAX_HEADER:
                raise ValueError(f"a frame header of {header_size} bytes")
            header = json.loads(self._read(header_size))
            if not isinstance(header, dict):
                raise ValueError(f"a frame header that is no JSON object: {_shown(header)}")
            return header, self._read(payload_size)
        except _Eof:
            self._lost(doing)
        except TimeoutError:
            self._hung(doing)
        except (ValueError, UnicodeDecodeError) as exc:  # garbage on the protocol channel
            self._kill_runner()
            raise RunnerFailed(f"unreadable frame {doing}: {exc}", self.in_flight) from None

    def _result(self, frame: dict[str, Any], payload: bytes) -> RunnerReply:
        try:
            return _result(frame, payload)
        except (KeyError, TypeError, ValueError) as exc:
            self.usable = False
            self._kill_runner()
            message = f"malformed result frame: {type(exc).__name__}: {_shown(str(exc))}"
            raise RunnerFailed(message, self.in_flight) from None

    def _read(self, size: int) -> bytes:
        """``size`` bytes of the runner's output, within the step's deadline and allowance."""
        stream = self._stream
        assert stream is not None
        if size > self._allowance:
            self.usable = False
            self._kill_runner()
            raise RunnerFailed(
                f"board {self.board.name}: the runner sent more than {self.max_case_bytes} "
                f"bytes for one case ({size} more announced); runner killed",
                self.in_flight,
            )
        while len(self._buffer) < size:
            self._drain_stderr()
            self._heard()
            remaining = self._deadline - time.monotonic()
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
        self._allowance -= size
        return data

    def _read_or_end(self, size: int) -> bytes:
        """``size`` bytes as ``_read``; fewer (b"") at the end of the output."""
        try:
            return self._read(size)
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
            message = f"board {self.board.name}: {self._link} lost {doing}"
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

    def _hung(self, doing: str) -> NoReturn:
        """The step's deadline passed: a hung runner, or a silently dead link."""
        self.usable = False
        timeout = self._window
        trouble.say(
            f"board {self.board.name}: no answer for {timeout:g} s {doing}; checking whether its "
            f"{self._link} still works (up to {CONNECTED_S:g} s)"
        )
        if not self._connected():
            raise ConnectionLost(
                f"board {self.board.name}: no answer for {timeout:g} s {doing} and the "
                f"{self._link} is dead",
                self.in_flight,
            )
        self._kill_runner()
        raise RunnerFailed(
            f"board {self.board.name}: no end from the runner within {timeout:g} s {doing} "
            "(host-side timeout; the board-side one did not fire); runner killed",
            self.in_flight,
        )

    @property
    def _link(self) -> str:
        """The board's connection, in messages ("SSH connection")."""
        return "connection" if self.transport is None else self.transport.capabilities.link

    def _connected(self) -> bool:
        """True when a fresh command still runs over the transport."""
        if self.transport is None:
            return False
        try:
            return self.transport.run("true", timeout=CONNECTED_S).status == 0
        except BoardError:
            return False

    def _kill_runner(self) -> None:
        """SIGKILL the runner (it may be stopped or stuck in a driver call); close its stream."""
        if self.pids and self.transport is not None:
            pids = [str(pid) for pid in self.pids]
            try:
                self.transport.run(shell_command(["kill", "-9", *pids]), timeout=10)
            except BoardError as exc:
                log.warning(
                    "board %s: cannot kill runner %s: %s",
                    self.board.name,
                    pids,
                    printable(str(exc)),
                )
        if self._stream is not None:
            self._stream.close()

    # -- the NPU clock ------------------------------------------------------------------------

    def pin_npu(self, folder: str | None, want: str) -> None:
        """Pin the NPU's devfreq ``folder`` to ``want`` (Hz or "max") until ``close``; what
        happened is ``pinned`` (a board that does not allow it says why, and runs as it is)."""
        assert self.transport is not None
        if folder is None:
            self.pinned = {"refused": f"no NPU devfreq folder known for {self.board.platform}"}
            return
        argv = ["sh", "-c", PIN, "sh", folder, want]
        try:
            done = self.transport.run(shell_command(argv), timeout=30)
        except BoardError as exc:
            self.pinned = {"refused": str(exc)}
            return
        lines = done.stdout.decode(errors="replace").split("\n")
        saved, pinned = lines[0].split(), (lines[1].split() if len(lines) > 1 else [])
        if len(saved) == 3:  # from here on, close() puts the clock back even if pinning failed
            self._restore = [folder, *saved]
        if done.status != 0 or len(pinned) != 2:
            why = done.stderr.decode(errors="replace").strip() or f"exit status {done.status}"
            self.pinned = {"refused": why}
            return
        self.pinned = {"npu_freq": pinned[0], "how": pinned[1]}
        log.info("board %s: NPU pinned at %s Hz (%s)", self.board.name, *pinned)

    def _unpin(self) -> None:
        assert self.transport is not None
        if not self._restore:
            return
        try:
            done = self.transport.run(shell_command(["sh", "-c", RESTORE, "sh", *self._restore]))
            if done.status != 0:
                log.warning("board %s: NPU clock not restored", self.board.name)
        except BoardError as exc:
            log.warning(
                "board %s: NPU clock not restored: %s", self.board.name, printable(str(exc))
            )
        self._restore = []

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
            self._unpin()
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
            log.warning(
                "board %s: cleaning up %s failed: %s",
                self.board.name,
                self.dir,
                printable(str(exc)),
            )


def batch_frame(jobs: Sequence[RunnerJob]) -> bytes:
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


def _result(frame: dict[str, Any], payload: bytes) -> RunnerReply:
    """A result frame with its outputs checked against their checksums; ValueError (or
    KeyError, TypeError) when the frame is not what the runner sends."""
    if frame["status"] not in ("ok", "runtime-error", "timeout"):
        raise ValueError(f"status {_shown(frame['status'])}")
    error = frame.get("error")
    timings = dict(frame.get("timings", {}))
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in timings.values()):
        raise ValueError(f"timings {_shown(timings)}")
    result = RunnerReply(
        id=frame["case"],
        status=frame["status"],
        error=None if error is None else _shown(error),
        runtime_version=_shown(frame.get("runtime_version", "")),
        core_mask=_shown(frame.get("core_mask", "")),
        timings={_shown(name): float(value) for name, value in timings.items()},
        perf=frame["perf"] if isinstance(frame.get("perf"), dict) else {},
    )
    if result.status != "ok":
        return result
    outputs, offset = [], 0
    for index, spec in enumerate(frame.get("outputs", [])):
        size = spec["size"]
        if not isinstance(size, int) or not 0 <= size <= len(payload) - offset:
            raise ValueError(f"output {index} of {_shown(size)} bytes past the payload's end")
        data = payload[offset : offset + size]
        offset += size
        digest = hashlib.sha256(data).hexdigest()
        if digest != spec["sha256"]:
            result.status = "corrupt"
            result.error = (
                f"output {index} corrupted in transit: sha256 {digest[:16]}... "
                f"!= {spec['sha256'][:16]}... sent by the board"
            )
            return result
        outputs.append(_array(data))
    result.outputs = outputs
    return result


def _array(data: bytes) -> np.ndarray:
    """An .npy file from the board, its header checked against its size before it is read."""
    stream = io.BytesIO(data)
    version = np.lib.format.read_magic(stream)
    if version != (1, 0):  # what np.save writes for an output's plain dtype
        raise ValueError(f".npy format version {version}")
    shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
    if dtype.hasobject or math.prod(shape) * dtype.itemsize != len(data) - stream.tell():
        raise ValueError(f".npy of {len(data)} bytes declares {dtype} {shape}")
    stream.seek(0)
    array: np.ndarray = np.load(stream, allow_pickle=False)
    return array


def _shown(value: object) -> str:
    """Board text (or a value it sent) as a string short enough for a message or record."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(text)} characters)"
