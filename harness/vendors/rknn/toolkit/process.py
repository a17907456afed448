"""Starting the processes that import rknn-toolkit2: simulator workers and the converter.

This is the one place that starts them, so the interpreter is a parameter: ``python`` (default
this one, ``sys.executable``) may be another SDK's environment, with its own rknn-toolkit2.
The child runs ``python -m <module> <this pid>``, imports this checkout's harness (and nothing
else from here) through ``harness_env`` whether or not it is installed there, started in the
folder that holds only the harness's link (``harness_only_folder``), and talks over
two pipes with multiprocessing.connection framing: requests on its stdin, replies on its
stdout. It starts in a session of its own, so a terminal's Ctrl-C reaches the parent, which
stops it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import tempfile
from multiprocessing.connection import Connection
from typing import IO

from harness.vendors.rknn.toolkit.calls import harness_env, harness_only_folder

libc = ctypes.CDLL(None)  # the C library, for prctl (and the worker's fflush)


class ToolkitProcess:
    """``python -m module <this pid>``: the process, its request and reply connections and
    its stderr (a temporary file); ``stop`` ends it."""

    STOP_GRACE_S = 5.0

    def __init__(self, module: str, python: str = sys.executable) -> None:
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop)
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        try:
            self.process = subprocess.Popen(
                [python, "-m", module, str(os.getpid())],
                stdin=request_read,
                stdout=reply_write,
                stderr=self.stderr,
                start_new_session=True,
                env=harness_env(),
                # ``python -m`` puts its working folder first on sys.path: started here, the
                # child imports this harness even where the caller's folder holds another
                cwd=harness_only_folder(),
            )
        except BaseException:
            for fd in (request_write, reply_read):
                os.close(fd)
            self.stderr.close()
            raise
        finally:
            os.close(request_read)
            os.close(reply_write)
        self.requests = Connection(request_write, readable=False)
        self.replies = Connection(reply_read, writable=False)

    def stderr_tail(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-2000:].decode(errors="replace").strip()

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)  # its session holds only the process
        self.process.wait()

    def stop(self) -> None:
        """Close the request pipe (the process exits on EOF); kill it if it does not."""
        self.requests.close()
        try:
            self.process.wait(self.STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self.kill()
        self.replies.close()
        self.stderr.close()


def parent_pipes() -> tuple[Connection, Connection]:
    """In the child: the request and reply connections; fd 0 becomes /dev/null and fd 1 the
    child's stderr, so that stray prints never reach the reply pipe. The child also dies with
    its parent (``die_with_parent``) and leaves Ctrl-C to it."""
    requests = Connection(os.dup(0), writable=False)
    replies = Connection(os.dup(1), readable=False)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    die_with_parent(int(sys.argv[1]))  # ``python -m module <parent pid>``
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return requests, replies


def die_with_parent(parent_pid: int) -> None:
    """Have the kernel kill this child when its parent dies, even mid-toolkit-hang.

    (Linux ties this to the thread that started the child: start it from a thread that lives
    as long as the parent needs it.)
    """
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(0)
