"""The parent side of the simulator: a pool of reusable worker processes.

Each worker imports rknn-toolkit2 once (seconds) and then serves jobs (tens of
milliseconds each). A worker that exceeds ``timeout_s`` costs only the case it was running:
that case gets an Observation with ``infra_error`` and a fresh worker is started for the next
one. A worker that dies while running a case (a signal, an uncaught C++ exception's abort, an
exit) runs it once more in a fresh worker: dying the same way again inside a toolkit call is
the toolkit's crash, a failed stage (``Observation.aborted`` says how), cached like any other
result; anything else (killed from outside, SIGKILL as the out-of-memory killer sends, a
different death) is infrastructure trouble, and a rerun that completes gives the result.

A worker serves its jobs in a forked child (``worker.py``): a case that takes that child down
costs a fork, not a fresh worker's import. Cases that crash the compiler come in runs (one
operator's documented values), each run twice; a fresh worker per death would import the
toolkit twice per such case.

Per job the pool makes a working folder (in memory when there is room: ``scratch``), the
worker writes the toolkit's log there, and the pool parses it into placement, rewrites and
native layouts, so even a case that hung or crashed keeps the log it got to. A cache hit comes
with its log parsed (``SimCache``).

No case folder outlives its process for long: SIGTERM kills the running workers and removes
their folders before the process ends, and a folder's name carries its process id, so a pool
removes the folders of processes that are gone (SIGKILL cannot be caught).
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from multiprocessing.connection import Connection, wait
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from harness.targets.job import Job
from harness.targets.observation import Observation
from harness.vendors.rknn.documents.properties import SIMULATOR_OBSERVES
from harness.vendors.rknn.toolkit.calls import LOG_FILE
from harness.vendors.rknn.toolkit.crash import Death, after_two_deaths
from harness.vendors.rknn.toolkit.process import ToolkitProcess
from harness.vendors.rknn.toolkit.simulator import messages
from harness.vendors.rknn.toolkit.simulator.cache import SimCache, with_parsed_log
from harness.vendors.rknn.toolkit.simulator.messages import JOB_FILE, InFolder, Pickled
from harness.vendors.rknn.toolkit.simulator.scratch import scratch_folder, scratch_folders

START_TIMEOUT_S = 120.0  # importing the toolkit takes 1.5-2.5 s; allow for a loaded machine
FOLDER_PREFIX = "npu-hil-sim-"  # then the owning process id, "-" and mkdtemp's random part
# Cases a worker holds: the one it runs and the next, waiting in its request pipe, so that it
# starts the next as it replies instead of waiting for the parent to judge the last one.
DEPTH = 2


# A worker's reply to a job: pickled, or the file it wrote it to; a dict when it came from the
# worker rather than its serving child (a death) or from the pool (an infrastructure error).
Reply = Pickled | InFolder | dict[str, Any]


class WorkerDied(Exception):
    """The worker process is gone or unusable; the message says how."""


class _Worker(ToolkitProcess):
    """One worker process and the pipes to it."""

    def __init__(self, python: str) -> None:
        super().__init__("harness.vendors.rknn.toolkit.simulator.worker", python)
        self.versions: dict[str, str] | None = None  # set by the worker's hello

    def ready(self) -> bool:
        """Whether the worker has said hello (or died trying): taking it will not wait."""
        return self.versions is not None or self.replies.poll(0)

    def wait_ready(self) -> None:
        if self.versions is not None:
            return
        hello = self.receive(START_TIMEOUT_S, "while starting")
        if "startup_error" in hello:
            raise WorkerDied(f"worker failed to start:\n{hello['startup_error']}")
        self.versions = hello["versions"]

    def receive(self, timeout_s: float, doing: str) -> Any:
        """The worker's next message (a ``Reply``, or its hello)."""
        if not self.replies.poll(timeout_s):
            self.kill()
            raise WorkerDied(f"timed out after {timeout_s:g} s {doing}")
        try:
            return self.replies.recv()
        except (EOFError, OSError):
            raise WorkerDied(self.exit_status(doing)) from None

    def exit_status(self, doing: str) -> str:
        """E.g. "worker killed by signal SIGSEGV while running the case", plus its stderr."""
        return self.status(self.process.wait(), doing)

    def status(self, code: int, doing: str) -> str:
        """How a process that ended with exit ``code`` (negative: the signal) died ``doing``,
        plus the worker's stderr: the worker's own end, or that of its serving child."""
        if code < 0:
            status = f"worker killed by signal {signal.Signals(-code).name} {doing}"
        else:
            status = f"worker exited with code {code} {doing}"
        tail = self.stderr_tail()
        return f"{status}; its stderr ends:\n{tail}" if tail else status


class _Running:
    """One case on one worker, running or waiting in its pipe: its working folder and deadline
    (none while it waits)."""

    def __init__(self, worker: _Worker, index: int, scratch: Path) -> None:
        self.worker = worker
        self.index = index
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-", dir=scratch))
        _LIVE_RUNS.add(self)
        self.deadline = float("inf")

    def remove_folder(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)
        _LIVE_RUNS.discard(self)

    def start(self, job: Job, timeout_s: float) -> str | None:
        """Send the case to an idle worker; None, or why the worker could not take it.

        The case's time starts once the worker is ready: its import is not the case's.
        """
        try:
            message = self._message(job)
        except OSError as exc:  # a full disk, say: the worker is not to blame
            return f"writing the job to its case folder {self.workdir}: {exc.strerror or exc}"
        try:
            self.worker.wait_ready()
            self.worker.requests.send(message)
        except WorkerDied as exc:
            self.worker.stop()
            return str(exc)
        except OSError:  # the worker died while idle
            status = self.worker.exit_status("before the case was sent")
            self.worker.stop()
            return status
        self.begin(timeout_s)
        return None

    def queue(self, job: Job) -> bool:
        """Send the case to a worker running another, to wait in its pipe (it fits whole:
        ``messages``); whether it went. A worker that died meanwhile did not take it: its
        running case finds out how; a job that cannot be written waits for ``start`` to say
        why."""
        try:
            self.worker.requests.send(self._message(job))
        except OSError:
            return False
        return True

    def _message(self, job: Job) -> tuple[Pickled | InFolder, str]:
        """What the request pipe carries: the job (or the file it is written to here) and the
        case folder."""
        return messages.carried(job, self.workdir, JOB_FILE), str(self.workdir)

    def begin(self, timeout_s: float) -> None:
        """The worker starts the case now: its time runs from here."""
        self.deadline = time.monotonic() + timeout_s


_LIVE_RUNS: set[_Running] = set()  # cases of this process running, whose folder exists


@functools.cache
def _clean_up_on_sigterm() -> None:
    """Install (once, from the main thread) a SIGTERM handler that kills the workers running a
    case and removes their folders, then lets SIGTERM do what it did before."""
    previous = signal.getsignal(signal.SIGTERM)
    if previous == signal.SIG_IGN:
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        for running in list(_LIVE_RUNS):
            running.worker.kill()
            running.remove_folder()
        if callable(previous):
            previous(signum, frame)
        else:  # the default action: end the process, killed by SIGTERM
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, handler)


def _remove_stale_folders() -> None:
    """Remove the case folders whose owning process is gone."""
    for scratch in scratch_folders():
        for folder in scratch.glob(f"{FOLDER_PREFIX}*-*"):
            pid = folder.name.removeprefix(FOLDER_PREFIX).partition("-")[0]
            if pid.isdigit() and not _process_exists(int(pid)):
                shutil.rmtree(folder, ignore_errors=True)


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class SimulatorPool:
    """Runs Jobs on rknn-toolkit2 simulator workers; use as a context manager.

    ``run``, ``run_many`` and ``stream`` are for one thread at a time. A batch is spread over
    up to ``workers`` processes. With a ``cache``, hits skip the toolkit and fresh results
    without ``infra_error`` are stored. ``python`` is the interpreter the workers run (an SDK
    environment of ``hil sdk install``; default: this one); the cache must be keyed by the
    toolkit version of that interpreter.
    """

    def __init__(
        self,
        workers: int = 1,
        timeout_s: float = 120.0,
        cache: SimCache | None = None,
        python: str = sys.executable,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.capacity = workers * DEPTH  # cases the workers hold at once
        self.python = python  # the interpreter whose rknn-toolkit2 the workers import
        self.timeout_s = timeout_s
        self.cache = cache
        self.toolkit_runs = 0  # jobs handed to a worker (cache hits are not)
        self.observes = SIMULATOR_OBSERVES
        self.scratch = scratch_folder()  # where case folders go (``scratch``)
        self._idle: list[_Worker] = []
        atexit.register(self.close)
        if threading.current_thread() is threading.main_thread():  # signal handlers live there
            _clean_up_on_sigterm()
        _remove_stale_folders()

    def start(self) -> None:
        """Start every worker now and wait until each has imported the toolkit (the first job
        starts them otherwise), so that what comes next is timed without the import: a
        benchmark's case loop, as its floor's begins after its own import."""
        while len(self._idle) < self.workers:
            self._idle.append(_Worker(self.python))
        for worker in self._idle:
            worker.wait_ready()

    def run(self, job: Job) -> Observation:
        [observation] = self.stream([job])
        return observation

    def run_many(self, jobs: Sequence[Job]) -> list[Observation]:
        """Observations in job order (``stream`` collected)."""
        return list(self.stream(jobs))

    def stream(self, jobs: Iterable[Job]) -> Iterator[Observation]:
        """Observations in job order, each as soon as it and those before it are done.

        Jobs are taken as they are needed, plus one ahead of the workers, each of which holds
        ``DEPTH`` (one running, the next waiting in its pipe): the caller prepares the next
        case while a worker runs this one, and judges and reports a case while the workers
        run the next ones.
        """
        taken: list[Job] = []
        keys: dict[int, str] = {}  # a taken job's cache key, computed once (hashing its arrays)
        source = iter(jobs)
        results: dict[int, Observation] = {}
        pending: deque[int] = deque()
        busy: dict[Connection, deque[_Running]] = {}  # a worker's running case, then the next
        deaths: dict[int, Death] = {}  # the first death of a case waiting for its rerun
        following = 0  # the index to yield next
        more = True  # ``source`` may hold further jobs
        if self.cache is None and not self._idle:
            # without a cache the first job goes to a worker: one started now imports the
            # toolkit while the caller prepares that job (its host references, say)
            self._idle.append(_Worker(self.python))

        def take() -> None:
            nonlocal more
            job = next(source, None)
            if job is None:
                more = False
                return
            taken.append(job)
            hit = None
            if self.cache:
                keys[len(taken) - 1] = key = self.cache.key(job)
                hit = self.cache.observation(key)
            if hit is None:
                pending.append(len(taken) - 1)
            else:
                results[len(taken) - 1] = replace(hit, observes=SIMULATOR_OBSERVES)

        try:
            while True:
                # enough to keep every worker full, one waiting, or the next to yield
                holding = sum(map(len, busy.values()))
                while more and following not in results and len(pending) + holding <= self.capacity:
                    take()
                self._start(pending, busy, taken, results)
                while following in results:
                    yield results.pop(following)
                    following += 1
                if not more and following == len(taken):
                    return
                if busy and more and not pending:
                    take()  # prepared while the workers run
                self._collect(busy, taken, keys, results, pending, deaths)
        except BaseException:  # e.g. Ctrl-C or a closed stream: no worker may keep running
            for held in busy.values():
                held[0].worker.kill()
                held[0].worker.stop()
                for running in held:
                    running.remove_folder()
            raise

    def _start(
        self,
        pending: deque[int],
        busy: dict[Connection, deque[_Running]],
        jobs: Sequence[Job],
        results: dict[int, Observation],
    ) -> None:
        """Hand pending cases to idle workers, ready ones first, starting the workers this
        round needs together so that their imports overlap; then queue the rest behind the
        cases running, up to ``DEPTH`` a worker. An idle worker that died meanwhile (the
        out-of-memory killer's choice, say) is replaced first."""
        for dead in [worker for worker in self._idle if worker.process.poll() is not None]:
            self._idle.remove(dead)
            dead.stop()
        while len(self._idle) < min(self.workers - len(busy), len(pending)):
            self._idle.append(_Worker(self.python))
        while pending and len(busy) < self.workers and self._idle:
            index = pending.popleft()
            running = _Running(self._take_idle(), index, self.scratch)
            failure = running.start(jobs[index], self._limit(jobs[index]))
            if failure is None:
                self.toolkit_runs += 1
                busy[running.worker.replies] = deque([running])
            else:
                results[index] = self._finish(running, {"infra_error": failure})
        for held in busy.values():
            while pending and len(held) < DEPTH:
                running = _Running(held[0].worker, pending[0], self.scratch)
                if not running.queue(jobs[pending[0]]):  # the worker is gone: its reply says
                    running.remove_folder()
                    break
                self.toolkit_runs += 1
                held.append(running)
                pending.popleft()

    def _take_idle(self) -> _Worker:
        """An idle worker, one that is ready if any is (the longest-started otherwise)."""
        chosen = next((w for w in self._idle if w.ready()), self._idle[0])
        self._idle.remove(chosen)
        return chosen

    def _collect(
        self,
        busy: dict[Connection, deque[_Running]],
        jobs: Sequence[Job],
        keys: dict[int, str],
        results: dict[int, Observation],
        pending: deque[int],
        deaths: dict[int, Death],
    ) -> None:
        """Wait for the first reply or deadline among the busy workers; finish those jobs.

        A worker that replied starts the case waiting in its pipe, whose time runs from
        then, and gets the next pending one queued before its reply is finished (the log
        parsed, the result cached): the worker never waits for the parent between cases.

        A case whose worker (or its serving child: a ``died`` reply) died goes back to the
        front of ``pending`` once (its death kept in ``deaths``); after a second death
        ``after_two_deaths`` tells a crash from trouble. The cases waiting behind it go back
        too when the worker is gone (they never ran); a fresh serving child takes them."""
        if not busy:
            return
        soonest = min(held[0].deadline for held in busy.values())
        replied: list[tuple[_Running, Reply]] = []
        for conn in wait(list(busy), timeout=max(0.0, soonest - time.monotonic())):
            held = busy[conn]  # type: ignore[index]
            running = held.popleft()
            doing = "while running the case"
            try:
                reply = running.worker.receive(0, doing)
            except WorkerDied as exc:
                running.worker.stop()
                del busy[conn]  # type: ignore[arg-type]
                self._requeue(held, pending)
                code, status = running.worker.process.wait(), str(exc)
            else:
                if held:  # a "died" worker forked a fresh child, which takes the next
                    held[0].begin(self._limit(jobs[held[0].index]))
                else:
                    del busy[conn]  # type: ignore[arg-type]
                    self._idle.append(running.worker)
                if not isinstance(reply, dict) or "died" not in reply:
                    replied.append((running, reply))  # opened by _finish, after the hand-off
                    continue
                code = reply["died"]
                status = running.worker.status(code, doing)
            death = Death.of(code, status, running.workdir, LOG_FILE)
            if running.index not in deaths:
                deaths[running.index] = death
                running.remove_folder()
                pending.appendleft(running.index)
                continue
            reply = after_two_deaths(deaths.pop(running.index), death)
            results[running.index] = self._finish(running, reply, keys.get(running.index))
        self._start(pending, busy, jobs, results)
        for running, reply in replied:
            results[running.index] = self._finish(running, reply, keys.get(running.index))
        for conn, held in list(busy.items()):
            if time.monotonic() >= held[0].deadline:
                del busy[conn]
                running = held.popleft()
                running.worker.kill()
                running.worker.stop()
                self._requeue(held, pending)
                limit = self._limit(jobs[running.index])
                reply = {"infra_error": f"timed out after {limit:g} s"}
                results[running.index] = self._finish(running, reply)

    def _requeue(self, waiting: deque[_Running], pending: deque[int]) -> None:
        """The cases that waited in a worker gone (killed, timed out): pending again, first,
        in their order; they never ran."""
        for running in reversed(waiting):
            running.remove_folder()
            pending.appendleft(running.index)
            self.toolkit_runs -= 1

    def _limit(self, job: Job) -> float:
        return job.timeout_s or self.timeout_s

    def _finish(self, running: _Running, reply: Reply, key: str | None = None) -> Observation:
        """Turn a reply (or the file it was written to) plus the case's log into an
        Observation; clean the folder.

        ``key`` (the case's cache key) is given when the reply may be cached (not for infra
        errors).
        """
        try:
            opened = reply if isinstance(reply, dict) else messages.opened(reply, running.workdir)
        except Exception as exc:  # a reply file damaged or gone: an infra error, never cached
            opened, key = {"infra_error": f"reading the worker's reply: {exc}"}, None
        log_path = running.workdir / LOG_FILE
        log = log_path.read_text(errors="replace") if log_path.exists() else ""
        running.remove_folder()
        observation = with_parsed_log(
            Observation(
                backend="simulator",
                outputs=opened.get("outputs"),
                failed_stage=opened.get("failed_stage"),
                error=opened.get("error"),
                aborted=opened.get("aborted"),
                infra_error=opened.get("infra_error"),
                versions=dict(running.worker.versions or {}),
                timings=opened.get("timings", {}),
                log=log,
                observes=SIMULATOR_OBSERVES,
            )
        )
        if self.cache and key is not None and observation.infra_error is None:
            observation = self.cache.store(key, observation)
        return observation

    def pids(self) -> list[int]:
        """Process ids of the live (idle) workers."""
        return [worker.process.pid for worker in self._idle]

    def close(self) -> None:
        """Stop every worker and keep the cache to its cap; safe to call more than once."""
        while self._idle:
            worker = self._idle.pop()
            if not worker.ready():  # still importing the toolkit: nothing to wait for
                worker.kill()
            worker.stop()
        atexit.unregister(self.close)
        if self.cache is not None:
            self.cache.keep_to_cap()

    def __enter__(self) -> SimulatorPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
