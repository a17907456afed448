"""A user's model's host references computed within the run's deadline.

The references (``reference.HOST_REFERENCES``) run the model on the CPU, in C++ (onnxruntime)
or Python (onnx.reference); a small model can keep them busy for hours (onnxruntime takes twice
as long to load a model for each level of nested ``If`` subgraphs: 4 KB of them, days), inside
one C call where neither SIGTERM's handler nor Ctrl-C's KeyboardInterrupt gets to run. So a
user's model's references are computed in a forked child process: the parent waits for its
answer at most the deadline (``--hil-timeout``), and kills it then, or on SIGTERM or Ctrl-C,
which reach the waiting parent at once. The child dies with the parent too
(``PR_SET_PDEATHSIG``), so a harness killed any way leaves no reference running. Forking costs
a few milliseconds (``benchmarks/bench_bounded_reference.py``); the harness's own models are
computed in this process.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import pickle
import select
import signal
import time
import warnings
from collections.abc import Callable

from harness.models import BuiltModel
from harness.models.reference import HOST_REFERENCES, NoReferenceError, References

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_CHUNK = 1 << 16


class ReferenceDeadlineError(NoReferenceError):
    """The host references did not finish within the deadline: nothing to judge against."""


def references_within(
    compute: Callable[[BuiltModel], References], built: BuiltModel, deadline_s: float, model: str
) -> References:
    """``compute(built)`` in a child process; ReferenceDeadlineError naming ``model`` and the
    deadline when it has not answered within ``deadline_s`` seconds. What it raised is raised
    here, what it warned is warned here."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer, and never return into the parent's code
        os.close(read_fd)
        _child(compute, built, write_fd)
    os.close(write_fd)
    status = 0
    try:
        answer = _read(read_fd, time.monotonic() + deadline_s)
    finally:  # the answer, the deadline, SIGTERM's handler or Ctrl-C: the child goes
        os.close(read_fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        status = os.waitpid(pid, 0)[1]
    if answer == b"":  # it died before answering (a crash in onnxruntime, say)
        code = os.waitstatus_to_exitcode(status)
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        raise NoReferenceError(f"{model}: the host references' process ended ({how}) unanswered")
    if answer is None:
        raise ReferenceDeadlineError(
            f"{model}: the host references ({', '.join(HOST_REFERENCES)}) did not finish within "
            f"the run's deadline, --hil-timeout {deadline_s:g} s: stopped; a model this slow "
            "on the host (nested subgraphs, say) cannot be judged"
        )
    outcome, raised = pickle.loads(answer)
    for message, category in outcome["warnings"]:
        warnings.warn(message, category, stacklevel=2)
    if raised is not None:
        raise raised
    result: References = outcome["references"]
    return result


def _child(compute: Callable[[BuiltModel], References], built: BuiltModel, write_fd: int) -> None:
    """Compute, write the pickled answer to ``write_fd``, and end the process."""
    try:
        # the parent's objects out of the collector's sight: collecting them would write to
        # every page of the parent's heap, which the child then copies
        gc.freeze()
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:  # the parent died before the line above
            os._exit(1)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's clean-up handlers
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                references, raised = compute(built), None
            except Exception as exc:
                references, raised = None, exc
        outcome = {
            "references": references,
            "warnings": [(str(item.message), item.category) for item in seen],
        }
        try:
            data = pickle.dumps((outcome, raised))
        except Exception:  # an exception that does not pickle: its type and text
            data = pickle.dumps((outcome, NoReferenceError(f"{type(raised).__name__}: {raised}")))
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(data)
    finally:
        os._exit(0)


def _read(read_fd: int, deadline: float) -> bytes | None:
    """Everything the child writes, up to its end; None when ``deadline`` passes first."""
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([read_fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(read_fd, _CHUNK)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
