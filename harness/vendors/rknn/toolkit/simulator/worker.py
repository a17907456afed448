"""A simulator worker process: imports rknn-toolkit2 once, then runs one job per message.

Started by ``pool.py`` as ``python -m harness.vendors.rknn.toolkit.simulator.worker
PARENT_PID`` with stdin carrying ``(Job, workdir)`` messages and stdout carrying reply dicts
(multiprocessing.connection framing). The toolkit prints its verbose tables from C (librknnc,
stdout) and its Python messages through logging (stderr), so for each job file descriptors 1
and 2 are pointed at ``workdir/toolkit.log``. Measured: the compiler flushes its own lines, so
both sources land in the file in the order they were printed. The parent reads and parses that
file, also after a crash or a hang.

The jobs are served by a forked child of the worker, which holds the imported toolkit. When
the toolkit takes that child down inside a case (its compiler aborts or segfaults on some
documented values), the worker replies ``{"died": exit code}`` for the case and forks a fresh
child in milliseconds, where a fresh worker would import the toolkit again for seconds. A
child that dies between cases takes the worker down the same way, as if it had died itself.
"""

from __future__ import annotations

import faulthandler
import mmap
import os
import platform
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from harness.targets.job import Job
from harness.vendors.rknn.toolkit.buildlog import parse_build_log
from harness.vendors.rknn.toolkit.calls import (
    LOG_FILE,
    MODEL_FILE,
    note_stage,
    toolkit_calls,
    toolkit_dataset,
    toolkit_inputs,
    toolkit_version,
    write_dataset,
)
from harness.vendors.rknn.toolkit.process import die_with_parent, libc, parent_pipes
from harness.vendors.rknn.toolkit.simulator import messages
from harness.vendors.rknn.toolkit.simulator.messages import REPLY_FILE

# Test-only fault hook, for faults the real toolkit cannot be made to show on demand: a comma
# list of "<kind>:<case_id>" makes the worker, inside that case's build call, exit with code 3
# ("exit"), die of SIGSEGV ("segv"; "segv-once": the first time only, marked by a file in the
# FAULT_MARKS_ENV folder), be killed as the out-of-memory killer does ("kill"; "kill-worker":
# the worker process, which the serving child dies with) or hang.
FAULT_ENV = "NPU_HIL_SIM_FAULT"
FAULT_MARKS_ENV = "NPU_HIL_SIM_FAULT_MARKS"


class Rejected(Exception):
    """The toolkit refused the model at a stage ("build" or "runtime")."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


def main() -> None:
    requests, replies = parent_pipes()
    faulthandler.enable()  # a segfault leaves a traceback in the job's log
    # The toolkit's own import of pkg_resources warns once, into whichever case comes first.
    warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
    try:
        from rknn.api import RKNN

        hello: dict[str, Any] = {"versions": _versions()}
    except Exception:
        replies.send({"startup_error": traceback.format_exc()})
        return
    replies.send(hello)
    in_case = mmap.mmap(-1, 1)  # shared with the serving child: 1 while it runs a case
    worker = os.getpid()
    while True:
        child = os.fork()
        if child == 0:
            die_with_parent(worker)
            _serve_jobs(RKNN, requests, replies, in_case)
            os._exit(0)
        code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
        if code == 0:  # the pool closed the request pipe: done
            # without the interpreter's teardown of the imported toolkit, which takes seconds
            # (the pool waits for it) and has nothing to keep
            _flush()
            os._exit(0)
        if not in_case[0]:
            _end_as(code)
        in_case[0] = 0
        replies.send({"died": code})


def _serve_jobs(
    rknn_class: Callable[..., Any], requests: Connection, replies: Connection, in_case: mmap.mmap
) -> None:
    """The serving child: run jobs until the pool closes the request pipe."""
    while True:
        try:
            message, workdir = requests.recv()
        except EOFError:  # the pool closed the pipe or died
            return
        in_case[0] = 1
        folder = Path(workdir)
        try:
            reply = serve(rknn_class, messages.opened(message, folder), folder)
        except Exception:
            reply = {"infra_error": f"worker error outside the toolkit:\n{traceback.format_exc()}"}
        finally:  # the pool deletes the folder; do not sit in it
            os.chdir("/")
            tempfile.tempdir = None
        # Cleared before the reply is sent (a large one was written to the folder before): a
        # death while sending it ends the worker, and the pool reads the cut reply as the
        # worker's death, never a "died" as the next case's reply.
        carried: messages.Pickled | messages.InFolder | dict[str, str]
        try:
            carried = messages.carried(reply, folder, REPLY_FILE)
        except OSError as exc:  # a full disk, say: not the toolkit's doing
            carried = {"infra_error": f"writing the reply to the case folder: {exc}"}
        in_case[0] = 0
        replies.send(carried)


def _end_as(code: int) -> None:
    """End this process as the serving child ended: by its signal, else its exit code."""
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code if code > 0 else 1)


def serve(rknn_class: Callable[..., Any], job: Job, workdir: Path) -> dict[str, Any]:
    """Build and simulate one job in ``workdir``; the reply dict for the pool."""
    os.chdir(workdir)  # the toolkit drops intermediate .onnx files into the working directory
    tempfile.tempdir = str(workdir)  # and its temporary folders go where the pool cleans up
    (workdir / MODEL_FILE).write_bytes(job.model)
    if job.quantize and job.dataset:
        write_dataset(toolkit_dataset(job), workdir)
    calls = toolkit_calls(job)
    timings: dict[str, float] = {}
    with captured_output(workdir / LOG_FILE) as log:
        started = time.perf_counter()
        rknn = None
        try:
            rknn = call_stage("build", log, rknn_class, calls["RKNN"])
            for name in ("config", "load_onnx", "build"):
                call_stage("build", log, getattr(rknn, name), calls[name], job.case_id)
            timings["build_s"] = time.perf_counter() - started
            started = time.perf_counter()
            call_stage("runtime", log, rknn.init_runtime, calls["init_runtime"])
            outputs = call_stage(
                "runtime",
                log,
                rknn.inference,
                {"inputs": toolkit_inputs(job), **calls["inference"]},
            )
            timings["run_s"] = time.perf_counter() - started
        except Rejected as rejected:
            return {"failed_stage": rejected.stage, "error": str(rejected), "timings": timings}
        finally:
            if rknn is not None:
                rknn.release()
    # The simulator already returns float32 arrays in the ONNX output shapes; this only
    # guarantees it (and makes them contiguous) for the comparison downstream.
    return {
        "outputs": [np.ascontiguousarray(out, dtype=np.float32) for out in outputs],
        "timings": timings,
    }


def call_stage(
    stage: str, log: Path, method: Callable[..., Any], kwargs: dict[str, Any], case_id: str = ""
) -> Any:
    """Call the toolkit; a raised exception or a failure return value becomes ``Rejected``.

    ``case_id`` is for the test-only fault hook (FAULT_ENV), which acts inside ``build``."""
    name = getattr(method, "__name__", str(method))
    mark = log.stat().st_size
    note_stage(log.parent, f"{stage} {name}")
    if name == "build":
        _inject_fault(case_id)
    try:
        result = method(**kwargs)
    except Exception as exc:
        raise Rejected(stage, f"{name}: {_exception_message(exc)}") from exc
    failed = result is None if name == "inference" else isinstance(result, int) and result != 0
    if failed:
        _flush()
        with log.open("rb") as f:
            f.seek(mark)
            errors = parse_build_log(f.read().decode(errors="replace")).errors
        raise Rejected(stage, "\n".join([f"{name} returned {result!r}", *errors]))
    return result


def _exception_message(exc: Exception) -> str:
    """The toolkit puts a whole traceback into its exceptions; keep the final error."""
    text = str(exc).strip()
    if "Traceback (most recent call last)" not in text:
        return f"{type(exc).__name__}: {text}"
    lines = text.splitlines()
    last = max(i for i, line in enumerate(lines) if line and not line[0].isspace())
    return " ".join(line.strip() for line in lines[last:])


@contextmanager
def captured_output(path: Path) -> Iterator[Path]:
    """Send everything written to fds 1 and 2 (Python and C) to ``path``."""
    _flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        yield path
    finally:
        _flush()
        for target, fd in zip((1, 2), saved, strict=True):
            os.dup2(fd, target)
            os.close(fd)


def _flush() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    libc.fflush(None)


def _versions() -> dict[str, str]:
    import onnx

    return {
        "rknn_toolkit2": toolkit_version(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "onnx": onnx.__version__,
    }


def _inject_fault(case_id: str) -> None:
    entries = (entry.partition(":") for entry in os.environ.get(FAULT_ENV, "").split(","))
    kind = next((kind for kind, _, target in entries if kind and target == case_id), None)
    if kind is None:
        return
    if kind == "exit":
        os._exit(3)
    if kind == "segv-once":
        mark = Path(os.environ[FAULT_MARKS_ENV]) / case_id
        if mark.exists():
            return
        mark.touch()
        kind = "segv"
    if kind in ("segv", "kill"):
        os.kill(os.getpid(), signal.SIGSEGV if kind == "segv" else signal.SIGKILL)
    if kind == "kill-worker":  # the worker itself; this serving child dies with it
        os.kill(os.getppid(), signal.SIGKILL)
        kind = "hang"
    if kind == "hang":
        while True:
            time.sleep(60)
    raise ValueError(f"unknown {FAULT_ENV} kind {kind!r}")


if __name__ == "__main__":
    main()
