"""The runner session for boards with only the C API: ``hil_c_runner`` driven by POSIX ``sh``.

Same connection, lock, probe, timeouts and fault classes as the Python runner's session
(``RunnerSession``); what differs is the runtime. ``open()`` keeps the board's copy of the
binary (``<workdir>/hil_c_runner``) and pushes the board file's ``c_runner`` when the board's sha256
differs or the copy is missing. Each batch then takes ONE stream: one tar in (every case folder and
the ``run.sh`` driver, ``harness.vendors.rknn.runners.c_batch``), one tar stream out, read as it
arrives, so the host knows the case in flight and its runner's pid. The board needs ``sh``, ``tar``
and the coreutils the lock and discovery use (busybox has them all); ``sha256sum`` is optional:
without it the binary is pushed on every session.
"""

from __future__ import annotations

import hashlib
import logging
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.boards import BoardError
from harness.boards.inventory import Board
from harness.boards.lock import BoardBusy
from harness.boards.transport import BoardConnectionError
from harness.targets.observation import Observation
from harness.text import printable
from harness.vendors.rknn.runners.c_batch import (
    CONDITIONS,
    BatchCase,
    StreamError,
    batch_files,
    conditions,
    conditions_file,
    read_stream,
)
from harness.vendors.rknn.runners.c_runner import (
    RUNNER_BINARY,
    CRunnerJob,
    core_mask_value,
    read_request,
)
from harness.vendors.rknn.runners.runner_session import (
    RunnerFailed,
    RunnerJob,
    RunnerReply,
    RunnerSession,
    batch_tar,
)

log = logging.getLogger(__name__)

# $3 the board's copy of the runner: its sha256, if the board has sha256sum.
_DIGEST = r"""
{ sha256sum < "$3"; } 2>/dev/null || true
"""
# $3 the board's copy of the runner; stdin: the binary. Replaced atomically, then its sha256.
_PUSH = r"""
cat > "$3.part" && chmod 755 "$3.part" && mv -f "$3.part" "$3" || exit 1
{ sha256sum < "$3"; } 2>/dev/null || true
"""
# $1 this session's folder, $2 the runner; stdin: the batch tar. Stdout: run.sh's stream.
_BATCH = r"""
cd "$1" && rm -rf batch && mkdir batch && tar -xf - -C batch && exec sh batch/run.sh "$2"
"""
_SHA256 = re.compile(r"\b[0-9a-f]{64}\b")


class CRunnerSession(RunnerSession):
    """``hil_c_runner`` on one board; ``open()`` before ``run()``, always ``close()``.

    ``binary`` is the runner built for the board, on the host (the board file's ``c_runner``).
    """

    # the runner is pushed through a command's stdin (``_PUSH``), so no file copy
    NEEDS = ("streams", "concurrent")

    def __init__(self, board: Board, token: str, binary: Path, **options: Any) -> None:
        super().__init__(board, token, **options)
        self.binary = binary
        self.runner = f"{board.workdir}/{RUNNER_BINARY}"

    def _install(self) -> None:
        """Create the session folder; push the runner unless the board has this very binary."""
        data = self.binary.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        found = _SHA256.findall(self._prepare(_DIGEST, self.runner))
        if found != [digest]:
            after = _SHA256.findall(self._prepare(_PUSH, self.runner, stdin=data))
            if after and after != [digest]:
                raise BoardError(
                    f"board {self.board.name}: {self.runner} has sha256 {after[0]} after the "
                    f"push, not {digest} ({self.binary})"
                )
            log.info("board %s: pushed %s to %s", self.board.name, self.binary, self.runner)
        self.hello = {
            "runtime": self.board.runtime.name,
            "runtime_version": f"{RUNNER_BINARY} {digest}",
        }

    def run(
        self, jobs: Sequence[RunnerJob], on_started: Callable[[str], None] | None = None
    ) -> Iterator[RunnerReply]:
        """Ship ``jobs`` in one tar over one stream and yield their results as they end.

        Raises ``ConnectionLost`` or ``RunnerFailed`` naming the case in flight.
        """
        if self.lock_lost:
            raise BoardBusy(f"board {self.board.name}: this session's lock was taken over")
        assert self.transport is not None and self.usable
        # The runner's own --timeout-ms fires first; this one catches a wedged runner or board.
        timeout = max(job.timeout_s for job in jobs) + self.host_grace_s
        by_id = {job.id: job for job in jobs}
        payload = batch_tar(batch_files([_batch_case(job) for job in jobs]))
        self.in_flight, self.pids = None, []
        self._buffer.clear()
        self._stderr.clear()
        self._stream = self._exec(["exec", "sh", "-c", _BATCH, "sh", self.dir, self.runner], "run")
        try:
            self._stream.send(payload, timeout)
            self._stream.close_stdin()
        except BoardConnectionError:
            self._lost("while sending the batch")
        self._expect(timeout)
        with tempfile.TemporaryDirectory(prefix="hil-c-batch-") as folder:
            # Only members of cases still pending are accepted (by_id shrinks as they end).
            events = read_stream(self._read_or_end, Path(folder), by_id, self.max_case_bytes)
            started = time.monotonic()
            while True:
                try:
                    event = next(events, None)
                except TimeoutError:
                    self._hung("during the batch")
                except StreamError as exc:
                    self._kill_runner()
                    raise RunnerFailed(f"unreadable batch stream: {exc}", self.in_flight) from None
                if event is None:
                    break
                if self.in_flight != (None if event.started else event.case):
                    self._kill_runner()
                    raise RunnerFailed(f"case {event.case} out of turn", self.in_flight)
                job = by_id[event.case]
                self._expect(timeout)  # the case's (or the next one's) time starts now
                if event.started:
                    self.in_flight, self.pids, started = job.id, list(event.pids), time.monotonic()
                    if on_started is not None:
                        on_started(job.id)
                    continue
                observation = read_request(CRunnerJob(Path(folder, job.id)), self.board.name)
                readings = conditions(Path(folder, job.id))
                if observation.perf and readings:
                    observation.perf["conditions_before"] = readings["before"]
                    observation.perf["conditions_after"] = readings["after"]
                del by_id[job.id]
                self.in_flight, self.pids = None, []
                yield _case_result(job, observation, time.monotonic() - started)
        if by_id:
            self._lost("during the batch")
        self._finish()

    def _finish(self) -> None:
        """The driver's end after its last case; its stream is closed either way."""
        assert self._stream is not None
        status = self._stream.wait(self.host_grace_s)
        if status is None:
            log.warning("board %s: batch driver still running after its stream", self.board.name)
        elif status != 0:
            self._drain_stderr()
            log.warning(
                "board %s: batch driver: %s", self.board.name, printable(self._stderr_tail())
            )
        self._stream.close()

    def _stop_runner(self) -> None:
        """A batch is in flight (an interrupted ``run``): end its driver and runner."""
        self._kill_runner()


def _batch_case(job: RunnerJob) -> BatchCase:
    mask = None if job.core_mask == "auto" else core_mask_value(job.core_mask)
    timeout_ms = max(1, round(job.timeout_s * 1000))
    request = CRunnerJob(Path(job.id))
    args = request.argv("", core_mask=mask, timeout_ms=timeout_ms, perf=job.perf)[1:]
    files = (
        {**job.files, CONDITIONS: conditions_file(job.conditions)} if job.conditions else job.files
    )
    return BatchCase(job.id, files, args)


def _case_result(job: RunnerJob, observation: Observation, seconds: float) -> RunnerReply:
    """One runner run (``read_request``) as the session's result for its job."""
    if observation.outputs is not None:
        status = "ok"
    elif observation.failed_stage is not None:
        status = "runtime-error"
    else:
        status = "infra-error"
    versions = observation.versions
    return RunnerReply(
        id=job.id,
        status=status,
        outputs=observation.outputs,
        error=observation.error or observation.infra_error,
        runtime_version=versions.get("rknn_api", ""),
        core_mask=job.core_mask,
        timings={**observation.timings, "case_s": seconds},
        tensors=observation.tensors,
        versions={
            f"board_{name}": value
            for name, value in versions.items()
            if name in ("hil_c_runner", "rknn_driver")
        },
        log=observation.log,
        perf=observation.perf,
    )
