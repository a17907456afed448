"""The ``hil`` commands' one way to the terminal.

What they print holds text from models (node and tensor names), files (paths, journal
records), boards and known-issues files, any of which may carry terminal escape sequences; so
everything goes through ``emit``, which makes it printable (``harness.text.printable``) and stops
quietly when the reader goes away (``hil diff old new | head``).
"""

from __future__ import annotations

import os
import sys

from harness.text import printable


def emit(text: str, *, err: bool = False) -> None:
    """Write ``text`` made printable to stdout (stderr with ``err``); a reader that closed the
    pipe ends the output quietly (no traceback, no "Exception ignored" at exit), and the
    caller's exit status stands."""
    stream = sys.stderr if err else sys.stdout
    try:
        stream.write(printable(text))
        stream.flush()
    except BrokenPipeError:
        # Later writes and the interpreter's final flush go nowhere instead of raising again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
