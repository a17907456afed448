"""Row-major tensors stored at byte strides, as the vendors' layout rules describe them.

Strides are in bytes, not elements. A stride leaves every element its own bytes when
``stride[i] >= stride[i+1] * shape[i+1]`` and ``stride[-1] >= itemsize``; the buffer is
``shape[0] * stride[0]`` bytes, so the last row's padding is included.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from harness.layout.errors import LayoutError


def check_shape(shape: Sequence[int], name: str = "shape") -> tuple[int, ...]:
    """Return ``shape`` as a tuple of ints after checking every dimension is a positive integer."""
    if len(shape) == 0:
        raise LayoutError(f"{name} is empty; a tensor needs at least one dimension")
    for i, dim in enumerate(shape):
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim <= 0:
            raise LayoutError(f"{name}[{i}] = {dim!r} in {name} {list(shape)}: must be >= 1")
    return tuple(int(d) for d in shape)


def check_rank(shape: Sequence[int], stride: Sequence[int], shape_name: str = "shape") -> None:
    """One stride per dimension."""
    if len(stride) != len(shape):
        raise LayoutError(
            f"stride {list(stride)} has {len(stride)} entries but {shape_name} "
            f"{list(shape)} has {len(shape)}"
        )


def check_strides(
    shape: Sequence[int], stride: Sequence[int], itemsize: int, shape_name: str = "shape"
) -> None:
    """Check row-major byte strides leave every element its own bytes.

    ``stride[i] >= stride[i+1] * shape[i+1]`` (row-major storage) and ``stride[-1] >= itemsize``.
    """
    check_rank(shape, stride, shape_name)
    last = len(shape) - 1
    if stride[last] < itemsize:
        raise LayoutError(
            f"stride[{last}] = {stride[last]} is less than the element size {itemsize} bytes"
        )
    for i in range(last):
        inner = stride[i + 1] * shape[i + 1]
        if stride[i] < inner:
            raise LayoutError(
                f"stride[{i}] = {stride[i]} breaks stride[{i}] >= stride[{i + 1}] * "
                f"{shape_name}[{i + 1}] = {stride[i + 1]} * {shape[i + 1]} = {inner}"
            )


def contiguous_stride(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """Row-major byte strides with no padding: ``stride[n] = itemsize * prod(shape[n+1:])``."""
    return tuple(itemsize * math.prod(shape[n + 1 :]) for n in range(len(shape)))


@dataclass(frozen=True)
class StridedTensor:
    """A row-major tensor stored at byte strides; its buffer is ``shape[0] * stride[0]`` bytes."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: np.dtype

    def __post_init__(self) -> None:
        check_shape(self.shape)
        check_strides(self.shape, self.stride, self.dtype.itemsize)

    @property
    def size(self) -> int:
        return self.shape[0] * self.stride[0]

    @property
    def tensor_size(self) -> int:
        """Bytes of element data, without padding."""
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def span_size(self) -> int:
        """Padding bytes in the buffer."""
        return self.size - self.tensor_size

    def view(self, buffer: np.ndarray, offset: int = 0) -> np.ndarray:
        """The elements inside a uint8 ``buffer`` starting at byte ``offset`` (shares memory)."""
        if buffer.nbytes < offset + self.size:
            raise LayoutError(
                f"buffer of {buffer.nbytes} bytes is too small: the tensor at offset {offset} "
                f"needs {offset + self.size}"
            )
        return np.ndarray(self.shape, self.dtype, buffer, offset, self.stride)

    def place(self, array: ArrayLike, buffer: np.ndarray, offset: int = 0) -> None:
        """Write ``array`` into ``buffer`` at ``offset``; bytes between elements stay untouched."""
        data = np.asarray(array)
        if data.shape != self.shape or data.dtype != self.dtype:
            raise LayoutError(
                f"array of shape {list(data.shape)} and dtype {data.dtype} does not match the "
                f"layout's shape {list(self.shape)} and dtype {self.dtype}"
            )
        self.view(buffer, offset)[...] = data

    def pack(self, array: ArrayLike) -> np.ndarray:
        """A new zero-padded uint8 buffer of ``size`` bytes holding ``array``."""
        buffer = np.zeros(self.size, np.uint8)
        self.place(array, buffer)
        return buffer

    def unpack(self, buffer: np.ndarray | bytes, offset: int = 0) -> np.ndarray:
        """A compact copy of the tensor stored in ``buffer`` at ``offset``."""
        return self.view(np.frombuffer(buffer, np.uint8), offset).copy()
