"""Starting the processes that import rknn-toolkit2: simulator workers and the converter.

This is the one place that starts them, so the interpreter is a parameter: ``python`` (default
this one, ``sys.executable``) may be another SDK's environment, with its own rknn-toolkit2.
The child runs ``python -m <module> <this pid>``, imports this checkout's harness (and nothing
else from here) through ``harness_env`` whether or not it is installed there, and talks over
two pipes with multiprocessing.connection framing: requests on its stdin, replies on its
stdout. It starts in a session of its own, so a terminal's Ctrl-C reaches the parent, which
stops it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from multiprocessing.connection import Connection
from typing import IO

from harness.vendors.rknn.toolkit import harness_env


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
    child's stderr, so that stray prints never reach the reply pipe."""
    requests = Connection(os.dup(0), writable=False)
    replies = Connection(os.dup(1), readable=False)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return requests, replies
