"""Writing to stdout when the reader may stop early (``hil diff old new | head``)."""

from __future__ import annotations

import os
import sys


def emit(text: str) -> None:
    """Write ``text`` to stdout; a reader that closed the pipe ends the output quietly (no
    traceback, no "Exception ignored" at exit), and the caller's exit status stands."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # Later writes and the interpreter's final flush go nowhere instead of raising again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
