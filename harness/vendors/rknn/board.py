"""Run cases on a board: the board's counterpart of the simulator pool, same job, same record.

``RknnBoardTarget(board).stream(jobs)`` converts each ONNX model on the host (cached; the
verbose build log gives placement, rewrites and native layouts), ships the batch to the board
runner in one tar and yields one ``Observation`` per job as the board finishes it
(``run_batch`` collects them), ``backend`` being the board's name. The board's runtime
(``runtimes``) chooses the runner: the Python one (``RunnerSession``) or ``hil_c_runner``
(``CRunnerSession``), whose queried tensor attributes join the build log's.
Trouble is contained: a dropped connection is re-established and the case in flight retried
once; a runner crash or hang costs that case (``infra_error``) and a new runner is started; a
board that stays unreachable is marked down and every later job gets an ``infra_error`` at
once, so the caller can fall back to the simulator.
"""

from __future__ import annotations

import atexit
import logging
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import numpy as np

from harness.boards import BoardError, trouble
from harness.boards.inventory import Board
from harness.boards.kernel_log import kernel_log
from harness.boards.transport import BoardConnectionError, open_transport
from harness.targets.job import Job
from harness.targets.observation import Observation
from harness.vendors.rknn.documents.conditions import condition_files, npu_devfreq
from harness.vendors.rknn.runners.runner_session import (
    ConnectionLost,
    RunnerFailed,
    RunnerJob,
    RunnerReply,
    RunnerSession,
    runner_module,
)
from harness.vendors.rknn.runtimes import StandIn, rknn_runtime
from harness.vendors.rknn.toolkit.buildlog import parse_build_log
from harness.vendors.rknn.toolkit.calls import toolkit_calls
from harness.vendors.rknn.toolkit.conversion_feed import ConversionFeed
from harness.vendors.rknn.toolkit.convert import CACHE, Conversion, ConversionCache
from harness.vendors.rknn.toolkit.sdk import interpreter

log = logging.getLogger(__name__)

_MAX_FRUITLESS_RESTARTS = 3  # runners dying before any case: the board is treated as down


@dataclass
class _Outcome:
    """What became of one shipped case."""

    result: RunnerReply | None = None
    infra_error: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class RknnBoardTarget:
    """Runs Jobs on one board; use as a context manager (or call ``close``).

    ``timeout_s`` bounds each case on the board (and, plus ``host_grace_s``, on the host);
    ``reconnect_s`` is how long a lost board is retried before it is marked down;
    ``lock_wait_s`` how long to wait for another harness holding the board.
    ``on_case_started(case_id)`` is called as each case begins on the board.
    """

    def __init__(
        self,
        board: Board,
        *,
        cache: ConversionCache | None = None,
        timeout_s: float = 60.0,
        host_grace_s: float = 10.0,
        reconnect_s: float = 30.0,
        lock_wait_s: float = 60.0,
        lease_s: float = 120.0,
        trust_on_first_use: bool = False,
        on_case_started: Callable[[str], None] | None = None,
    ) -> None:
        self.runtime = rknn_runtime(board)
        self.runtime.ready(board)
        self.board = board
        self.cache = cache or ConversionCache(CACHE.directory())
        self.timeout_s = timeout_s
        self.host_grace_s = host_grace_s
        self.reconnect_s = reconnect_s
        self.lock_wait_s = lock_wait_s
        self.lease_s = lease_s
        self.trust_on_first_use = trust_on_first_use
        self.on_case_started = on_case_started
        self.down: str | None = None  # why the board was given up on
        self._token = secrets.token_hex(8)  # this target's lock identity, kept across reconnects
        self._session: RunnerSession | None = None
        self._feed = ConversionFeed(self.cache)
        self._case_ids: dict[str, str] = {}
        self._started_at: dict[str, float] = {}  # job id -> when it began on the board
        atexit.register(self.close)

    @property
    def name(self) -> str:
        return self.board.name

    @property
    def observes(self) -> frozenset[str]:
        return self.runtime.observes

    def run(self, job: Job, *, test_fault: str | None = None) -> Observation:
        faults = {job.case_id: test_fault} if test_fault else None
        return self.run_batch([job], test_faults=faults)[0]

    def run_batch(
        self, jobs: Sequence[Job], *, test_faults: Mapping[str, str] | None = None
    ) -> list[Observation]:
        """One Observation per job, in order (``stream`` collected)."""
        return list(self.stream(jobs, test_faults=test_faults))

    def stream(
        self, jobs: Iterable[Job], *, test_faults: Mapping[str, str] | None = None
    ) -> Iterator[Observation]:
        """One Observation per job, in order, each as soon as the board has run it.

        The batch is converted (on the target's conversion thread, which may have converted
        it already: ``prefetch``) while the board session opens, then shipped as one tar.

        ``test_faults`` (TEST ONLY, simulator-stand-in boards): case id -> "hang", "wedge",
        "corrupt-output", "slow" or "noisy", which the stand-in runtime acts out on the board
        (besides those its board file lists).
        """
        batch = list(jobs)  # converted and shipped as one batch
        listed = self.runtime.faults  # the stand-in board file's own (TEST ONLY)
        faults = {r.case_id: listed[r.case_id] for r in batch if r.case_id in listed}
        faults.update(test_faults or {})
        self._check(batch, faults)
        converting = self._feed.convert(batch)
        self._connect_while_converting()
        conversions = converting.result()
        case_jobs: list[RunnerJob] = []
        self._case_ids = {}
        self._started_at = {}
        for index, (job, conversion) in enumerate(zip(batch, conversions, strict=True)):
            if conversion.rknn_path is not None:
                job_id = f"c{index}"
                self._case_ids[job_id] = job.case_id
                fault = faults.get(job.case_id)
                limit = job.timeout_s or self.timeout_s
                case_jobs.append(case_job(job_id, job, conversion, self.board, limit, fault))
        settled = self._execute(case_jobs)
        done: dict[str, _Outcome] = {}
        unsettled = len(case_jobs)
        for index, conversion in enumerate(conversions):
            job_id = f"c{index}"
            while job_id in self._case_ids and job_id not in done:
                settled_id, outcome = next(settled, (job_id, _Outcome()))
                done[settled_id] = outcome
                unsettled -= 1
                if not unsettled:  # let the shipping loop end as it would: the session stays
                    done.update(settled)
            observation = self._observation(conversion, done.pop(job_id, None))
            if observation.infra_error and job_id in self._started_at:  # lost on the board
                observation.board_log = self.kernel_log(time.monotonic() - self._started_at[job_id])
            yield observation

    def prefetch(self, jobs: Sequence[Job]) -> None:
        """Convert ``jobs`` (the next batch) in the background, while the board runs."""
        self._feed.prefetch(jobs)

    def _check(self, jobs: Sequence[Job], faults: dict[str, str]) -> None:
        for job in jobs:
            if job.target_platform != self.board.platform:
                raise ValueError(
                    f"case {job.case_id!r} targets {job.target_platform}, but board "
                    f"{self.board.name} is platform {self.board.platform} ({self.board.source})"
                )
        if not faults:
            return
        if not self.runtime.test_faults:
            raise ValueError(f"test faults need a {StandIn.name} board, not {self.board.name}")
        unknown = set(faults) - {job.case_id for job in jobs}
        bad = {value for value in faults.values() if value not in runner_module().TEST_FAULTS}
        if unknown or bad:
            raise ValueError(f"test faults: unknown cases {sorted(unknown)} or kinds {sorted(bad)}")

    # -- shipping, with reconnects and restarts ----------------------------------------------

    def _execute(self, jobs: list[RunnerJob]) -> Iterator[tuple[str, _Outcome]]:
        """Each job's id and outcome as it settles (a result, or an infra error for good)."""
        outcomes = {job.id: _Outcome() for job in jobs}
        pending = list(jobs)
        retried: set[str] = set()
        fruitless = 0
        while pending:
            session = self._session_or_down()
            if session is None:
                for job in pending:
                    outcomes[job.id].infra_error = f"board {self.name} is down: {self.down}"
                    yield job.id, outcomes[job.id]
                return
            self._pin(session, pending)
            try:
                for result in session.run(pending, self._started):
                    if result.perf and session.pinned is not None:
                        result.perf["pinned"] = session.pinned
                    outcomes[result.id].result = result
                    outcomes[result.id].versions = self._versions(session, result)
                    fruitless = 0
                    yield result.id, outcomes[result.id]
            except ConnectionLost as exc:
                self._drop()
                case = exc.case or pending[0].id
                if case in retried:
                    outcomes[case].infra_error = f"{exc} (the case was already retried once)"
                    yield case, outcomes[case]
                else:
                    retried.add(case)
                    outcomes[case].notes.append(f"retried once after: {exc}")
                    trouble.say(
                        f"{exc}; reconnecting to retry case {self._case_ids.get(case)} once "
                        f"(for up to {self.reconnect_s:g} s)"
                    )
            except RunnerFailed as exc:
                self._drop()
                fruitless += 1
                if exc.case is not None:
                    outcomes[exc.case].infra_error = str(exc)
                    fruitless = 0
                    yield exc.case, outcomes[exc.case]
                elif fruitless >= _MAX_FRUITLESS_RESTARTS:
                    self.down = f"runner failed {fruitless} times without running a case: {exc}"
            except BoardError as exc:  # e.g. the lock was taken over
                self._drop()
                self.down = str(exc)
            except GeneratorExit:  # the caller stopped reading mid-batch: the runner is busy
                self._drop()
                raise
            else:
                if not session.usable:  # the runner exited after a board-side timeout
                    self._drop()
            pending = [job for job in pending if not _settled(outcomes[job.id])]

    def _pin(self, session: RunnerSession, jobs: list[RunnerJob]) -> None:
        """Pin the NPU clock for the session when a job's timing asks (``--perf-pin-npu``)."""
        want = next((job.perf["pin_npu"] for job in jobs if job.perf and job.perf["pin_npu"]), "")
        if want and session.pinned is None:
            session.pin_npu(npu_devfreq(self.board.platform, self.board.sysroot), want)

    def _started(self, job_id: str) -> None:
        self._started_at[job_id] = time.monotonic()
        if self.on_case_started is not None:
            self.on_case_started(self._case_ids[job_id])

    def _connect_while_converting(self) -> None:
        """One attempt to open the session while the host converts (on a cold start both the
        converter and the runner import the toolkit). A board out of reach is left to
        ``_execute``, which retries it only when the batch has something to run."""
        if self._session is None and self.down is None:
            unreachable = self._open_once()
            if unreachable is not None:
                log.warning("%s; tried again when a case needs it", unreachable)

    def _session_or_down(self) -> RunnerSession | None:
        """The open session, or a new one; None (and ``down`` set) when the board is lost."""
        if self.down is not None:
            return None
        if self._session is not None and self._session.usable:
            return self._session
        self._drop()
        deadline = time.monotonic() + self.reconnect_s
        pause = 0.5
        attempt = 1
        while (unreachable := self._open_once()) is not None:
            if time.monotonic() + pause > deadline:
                self.down = f"{unreachable} ({attempt} attempts in {self.reconnect_s:g} s)"
                trouble.say(f"{self.down}: the board is given up on")
                return None
            trouble.say(
                f"{unreachable}; attempt {attempt} failed, next in {pause:g} s (gives up "
                f"{self.reconnect_s:g} s after the first)"
            )
            time.sleep(pause)
            pause = min(pause * 2, 5.0)
            attempt += 1
        return self._session

    def _open_once(self) -> BoardConnectionError | None:
        """Open a new session: None when it is open or the board is given up on (``down``:
        busy, refused), else the connection error worth retrying."""
        session = self.runtime.session(
            self.board,
            self._token,
            trust_on_first_use=self.trust_on_first_use,
            host_grace_s=self.host_grace_s,
            lease_s=self.lease_s,
            lock_wait_s=self.lock_wait_s,
            sdk=self.cache.toolkit,
        )
        try:
            session.open()
        except BoardConnectionError as exc:
            if not exc.permanent:
                return exc
            self.down = str(exc)
        except BoardError as exc:
            self.down = str(exc)
        else:
            self._session = session
        return None

    def kernel_log(self, since_s: float) -> str:
        """The board's kernel log of the last ``since_s`` seconds, or why there is none."""
        if self.down is not None:  # it does not answer: no time to lose on it
            return f"# board kernel log not read: board {self.name} does not answer ({self.down})\n"
        try:
            transport = open_transport(
                self.board, trust_on_first_use=self.trust_on_first_use, timeout=10
            )
            try:
                return kernel_log(transport, since_s)
            finally:
                transport.close()
        except BoardError as exc:
            return f"# board kernel log not read: {exc}\n"

    def _drop(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def _versions(self, session: RunnerSession, result: RunnerReply) -> dict[str, str]:
        """The board's runtime library, driver and runner next to the host toolkit's version,
        with ``version_warnings`` when the versions are a combination that usually works but
        is not what the vendor requires (``compatibility``)."""
        facts = session.facts
        versions = {
            "board": self.name,
            "board_soc": str(facts.get("soc", "unknown")),
            "board_npu_driver": str(facts.get("npu_driver", "unknown")),
            "board_runtime_library": str(facts.get("runtime_library", "unknown")),
            "board_rknn_server": str(facts.get("rknn_server", "unknown")),
            "board_rknn_toolkit_lite2": str(facts.get("rknn_toolkit_lite2", "unknown")),
            "board_python": str(facts.get("python", "unknown")),
            "board_runtime": str(session.hello.get("runtime_version", "unknown")),
            "board_sdk": result.runtime_version or "unknown",
            "core_mask": result.core_mask,
        }
        if session.version_warnings:
            versions["version_warnings"] = "; ".join(session.version_warnings)
        return versions

    # -- observations ------------------------------------------------------------------------

    def _observation(self, conversion: Conversion, outcome: _Outcome | None) -> Observation:
        parsed = parse_build_log(conversion.log)
        observation = Observation(
            backend=self.name,
            placement=parsed.layers,
            rewrites=parsed.rewrites,
            tensors=parsed.tensors,
            versions={"rknn_toolkit2": self.cache.toolkit},
            log=conversion.log,
            observes=self.observes,
        )
        if not conversion.cached:
            observation.timings["convert_s"] = conversion.build_s
        if conversion.infra_error is not None:
            observation.infra_error = f"host conversion failed: {conversion.infra_error}"
        elif conversion.error is not None:
            observation.failed_stage, observation.error = "build", conversion.error
            observation.aborted = conversion.aborted
        if outcome is None:
            return observation
        observation.versions.update(outcome.versions)
        observation.log += "".join(f"\n[board {self.name}] {note}" for note in outcome.notes)
        result = outcome.result
        if outcome.infra_error is not None or result is None:
            observation.infra_error = outcome.infra_error or "no result from the board"
            return observation
        observation.timings.update({f"board_{k}": v for k, v in result.timings.items()})
        observation.perf = result.perf
        observation.tensors += result.tensors
        observation.versions.update(result.versions)
        if result.log:
            observation.log += f"\n[board {self.name}] runner output:\n{result.log}"
        if result.status == "ok":
            assert result.outputs is not None
            observation.outputs = [
                np.ascontiguousarray(o, dtype=np.float32) for o in result.outputs
            ]
        elif result.status == "runtime-error":
            observation.failed_stage, observation.error = "runtime", result.error
        else:  # "timeout" on the board, "corrupt" in transit, or the C runner's "infra-error"
            observation.infra_error = f"board {self.name}: {result.error}"
        return observation

    def close(self) -> None:
        """Stop the runner and clean the board, and the conversion thread; safe to repeat."""
        self._drop()
        self._feed.close()
        atexit.unregister(self.close)

    def __enter__(self) -> RknnBoardTarget:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def case_job(
    job_id: str,
    job: Job,
    conversion: Conversion,
    board: Board,
    timeout_s: float,
    test_fault: str | None = None,
) -> RunnerJob:
    """What the runner needs for one converted job: .rknn, inputs and how to run them."""
    assert conversion.rknn_path is not None
    runtime = rknn_runtime(board)
    data_format = toolkit_calls(job)["inference"]["data_format"]
    files, inputs = runtime.case_files(job, conversion.rknn_path.read_bytes(), data_format)
    perf = job.perf
    return RunnerJob(
        id=job_id,
        files=files,
        inputs=inputs,
        data_format=data_format,
        timeout_s=timeout_s,
        core_mask=runtime.core_mask,
        test_fault=test_fault,
        perf=perf.to_json() if perf else None,
        conditions=condition_files(board.platform, board.sysroot) if perf else {},
    )


BoardBackend = RknnBoardTarget  # its name before it said it is a target, kept for repro bundles


def _settled(outcome: _Outcome) -> bool:
    return outcome.result is not None or outcome.infra_error is not None


def board_target(
    board: Board, rknn_cache: Path | None, timeout_s: float, sdk: str | None = None
) -> RknnBoardTarget:
    """The board's target; ``sdk``: the rknn-toolkit2 release that converts (default: this
    interpreter's), an environment of ``hil sdk install``."""
    environment = interpreter(sdk)
    cache = ConversionCache(
        rknn_cache or CACHE.directory(),
        python=environment.python,
        environment=environment.packages,
    )
    return RknnBoardTarget(board, cache=cache, timeout_s=timeout_s)
