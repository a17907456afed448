"""The ``hil`` commands' one way to the terminal, and the argparse types a command module
registers with (``Registrar``: a stage's or a vendor's commands, ``harness.cli``).

What they print holds text from models (node and tensor names), files (paths, journal
records), boards and known-issues files, any of which may carry terminal escape sequences; so
everything goes through ``emit``, which makes it printable (``harness.text.printable``) and stops
quietly when the reader goes away (``hil diff old new | head``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from harness.text import printable

if TYPE_CHECKING:
    import argparse

    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
    # adds its parsers to a command group, each setting ``handler`` (args -> exit code)
    Registrar = Callable[[Subparsers], None]


def columns(rows: Sequence[Sequence[str]], right: Collection[int] = ()) -> list[str]:
    """``rows`` (the header first) as aligned plain-text lines, two spaces apart, every column
    as wide as its widest cell so that no name is cut; ``right``: the columns aligned right
    (numbers). The commands' one table layout (docs/contributing.md says why not a library)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.rjust(width) if index in right else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def emit(text: str, *, err: bool = False) -> None:
    """Write ``text`` made printable to stdout (stderr with ``err``); a reader that closed the
    pipe ends the output quietly (no traceback, no "Exception ignored" at exit), and the
    caller's exit status stands."""
    stream = _Quiet(sys.stderr if err else sys.stdout)
    stream.write(printable(text))
    stream.flush()


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """While a command runs, stdout whose reader went away (``hil run ... | head -1``) swallows
    what is left: the command still finishes its work (journal, report) and its exit status
    stands, with no BrokenPipeError traceback."""
    original = sys.stdout
    sys.stdout = _Quiet(original)
    try:
        yield
    finally:
        sys.stdout.flush()  # what is still buffered, before the interpreter's own final flush
        sys.stdout = original


class _Quiet:
    """A text stream that turns a broken pipe into silence."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._silence()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._silence()

    def _silence(self) -> None:
        # Later writes and the interpreter's final flush go nowhere instead of raising again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
