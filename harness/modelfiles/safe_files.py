"""Reading files a user hands the harness (models, their external data, ``.npy`` inputs, node
tests' ``.pb`` tensors) under rules.

- Only regular files are read: a FIFO, a device or a socket is refused before anything is
  read from it (it is opened non-blocking and checked on the open descriptor, so a FIFO never
  blocks and ``/dev/zero`` never streams).
- Sizes are checked before reading against the size budget (``harness.models.budget``): the
  file's bytes, and for a ``.npy`` the elements and bytes its header declares.
- A model's external data must resolve, after links, to a regular file inside the model's own
  folder: a ``data.bin`` that links to ``~/.ssh/id_rsa`` is refused, never copied into a case
  folder or a bundle.

Every refusal is a :class:`ModelFileError` naming the file and what is wrong.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import numpy as np
import onnx
from onnx import external_data_helper

from harness.models.budget import SizeBudget, size_budget


class ModelFileError(ValueError):
    """A model file, input folder or option value that cannot be used; names what is at fault
    (here: a special file, a file over the budget, external data escaping its folder)."""


def read_bytes(path: Path, budget: SizeBudget | None = None) -> bytes:
    """The bytes of the regular file ``path`` (links followed), within the byte budget."""
    with _opened(path, budget or size_budget()) as reading:
        return reading.read()


def load_model(path: Path, budget: SizeBudget | None = None) -> onnx.ModelProto:
    """The model in ``path`` with its external data, every file read under the rules above.

    Raises ModelFileError for a file refused by them, ``onnx.DecodeError`` (via protobuf) and
    friends for a file that is not a model.
    """
    budget = budget or size_budget()
    data = read_bytes(path, budget)
    model = onnx.ModelProto.FromString(data)
    folder = Path(os.path.realpath(path.parent))
    total = len(data)
    for tensor in _external_tensors(model):
        info = external_data_helper.ExternalDataInfo(tensor)
        source = _external_file(path, folder, info.location)
        with _opened(source, budget) as reading:
            reading.seek(info.offset or 0)
            wanted = info.length if info.length else budget.bytes + 1
            raw = reading.read(min(wanted, budget.bytes + 1))
        total += len(raw)
        over = budget.over_bytes(f"{path} with its external data", total)
        if over is not None:
            raise ModelFileError(over)
        if info.length and len(raw) != info.length:
            raise ModelFileError(
                f"{path}: tensor {tensor.name!r}: {source} holds {len(raw)} of the {info.length} "
                f"bytes its external data names"
            )
        tensor.raw_data = raw
        del tensor.external_data[:]
        tensor.data_location = onnx.TensorProto.DEFAULT
    return model


def load_npy(path: Path, budget: SizeBudget | None = None) -> np.ndarray:
    """The array in the ``.npy`` file ``path``, its declared size checked before reading;
    no pickled objects."""
    budget = budget or size_budget()
    with _opened(path, budget) as reading:
        try:
            version = np.lib.format.read_magic(reading)
            header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0  # 3.0 differs only in its encoding
            )
            shape, _, dtype = header(reading)
        except (ValueError, SyntaxError, TypeError) as exc:
            raise ValueError(f"bad header: {exc}") from None
        count = math.prod(shape)
        over = budget.over_elements(f"{path} (shape {list(shape)})", count)
        if over is None:
            over = budget.over_bytes(f"{path}'s array", count * dtype.itemsize)
        if over is not None:
            raise ModelFileError(over)
        reading.seek(0)
        try:
            return np.lib.format.read_array(reading, allow_pickle=False)
        except EOFError as exc:
            raise ValueError(f"truncated: {exc}") from None


@contextmanager
def _opened(path: Path, budget: SizeBudget) -> Iterator[BinaryIO]:
    """``path`` open for reading if it is a regular file within the byte budget."""
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as reading:
        mode = os.fstat(fd)
        if not stat.S_ISREG(mode.st_mode):
            raise ModelFileError(f"{path}: {_kind(mode.st_mode)}, not a regular file")
        over = budget.over_bytes(str(path), mode.st_size)
        if over is not None:
            raise ModelFileError(over)
        os.set_blocking(fd, True)
        yield reading


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "a special file"


def _external_file(model: Path, folder: Path, location: str) -> Path:
    """The file of an external-data ``location``: inside ``folder`` after links, regular."""
    where = f"{model}: external data {location!r}"
    if not location or "\0" in location or os.path.isabs(location):
        raise ModelFileError(f"{where}: want a file name inside the model's folder")
    resolved = Path(os.path.realpath(folder / location))
    if not resolved.is_relative_to(folder):
        raise ModelFileError(f"{where} resolves to {resolved}, outside the model's folder {folder}")
    if not resolved.exists():  # else it would read as the model itself missing
        raise ModelFileError(f"{where}: no such file in the model's folder")
    return resolved


def _external_tensors(model: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    """Every tensor of the model (initializers, attributes, subgraphs) with external data."""
    # onnx's own walk, the one its external-data loader uses (no public name for it)
    for tensor in external_data_helper._get_all_tensors(model):
        if external_data_helper.uses_external_data(tensor):
            yield tensor
