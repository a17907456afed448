"""What crosses a simulator worker's pipes: small messages whole, large ones through its case
folder.

A job (the model, its inputs and calibration samples) or a reply (the outputs) can run to
megabytes. Through a pipe (64 KiB) the writer waits until the reader has taken all of it: the
pool for a worker busy with the case before, a worker for a parent busy judging, each at
times for the other. A message whose pickle is larger than ``INLINE_BYTES`` is therefore
written to the case's folder (in memory when there is room: ``scratch``) and the pipe carries
an ``InFolder`` naming the file; a smaller one travels as the ``Pickled`` bytes its size was
measured by, so no message is pickled twice. Every message on a pipe then fits it twice over,
so a job queued behind a running case never waits for the worker, and replies never wait long.
"""

from __future__ import annotations

import pickle
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any, NamedTuple

INLINE_BYTES = 1 << 15  # half of a Linux pipe's 64 KiB
JOB_FILE = "job.pickle"
REPLY_FILE = "reply.pickle"


class InFolder(NamedTuple):
    """A message written to the case folder's file ``name`` instead of the pipe."""

    name: str


class Pickled(NamedTuple):
    """A small message as its pickle, carried in the pipe."""

    data: bytes


def carried(message: Any, folder: Path, name: str) -> Pickled | InFolder:
    """What the pipe carries for ``message``: its ``Pickled`` bytes when they are few, else an
    ``InFolder`` naming ``folder/name``, which they are written to here."""
    data = ForkingPickler.dumps(message)
    if len(data) <= INLINE_BYTES:
        return Pickled(bytes(data))
    (folder / name).write_bytes(data)
    return InFolder(name)


def opened(message: Pickled | InFolder, folder: Path) -> Any:
    """The message as it was sent: unpickled, read from ``folder`` if it came as ``InFolder``."""
    if isinstance(message, InFolder):
        return pickle.loads((folder / message.name).read_bytes())
    return pickle.loads(message.data)
