"""Houmo TCIM tensor storage (seed 002, 4.1.4): byte strides, padded storage, YUV image splitting.

Strides are in bytes, not elements. Tensors are row-major (the seed's examples all are).

Non-image tensors. Contiguous storage has ``stride[n] = itemsize * prod(shape[n+1:])``. The
seed prints ``Stride[n] = prod_{i=0}^{n-1} Shape[i]``, which indexes from the wrong end (for a
(3, 4) int8 array it would give (1, 3)); its worked example, shape (3, 3) int8 -> stride (3, 1),
is what is implemented. Non-contiguous storage is any stride with ``stride[i] >= stride[i+1] *
shape[i+1]`` and ``stride[-1] >= itemsize`` (so no two elements share a byte), e.g. (3, 3) int8
at stride (5, 1). The buffer is ``shape[0] * stride[0]`` bytes, the form of the seed's image
``memory_size`` (and of Horizon's buffer size), so the last row's padding is included.

Images ``[..., 3, H, W]`` (3 to 6 dimensions, D of them) are split into a Y tensor ``[..., H, W]``
and an interleaved UV tensor ``[..., h, w, 2]``, with one stride array of 2D entries: Y strides
``Stride[0 .. D-2]``, UV strides ``Stride[D-1 .. 2D-2]``, Y-to-UV offset ``Stride[2D-1]``. The
seed gives batch n's Y at ``n * Stride[0]``, its UV at ``n * Stride[D-1] + Stride[2D-1]``, and
``memory_size = N * Stride[D-1] + Stride[2D-1]``. That size is exact only if all N Y planes come
first and the UV planes follow from the offset: were Y and UV interleaved per batch
(Y0 UV0 Y1 UV1 ...), ``Stride[D-1]`` would span a Y plane too and the formula would count the
offset twice. So the offset is ``N * Stride[0]`` (the whole Y part) and the memory size is the Y
part plus the UV part; for 3-D images the outermost dimension is H (or h) itself, for 5-D and
6-D the outermost leading dimension, and the same formula ``outer * outermost stride`` holds.

Device storage pads every Y row and every UV row to a multiple of 64 bytes (the seed: "64字节对齐");
outer strides are whole multiples of the row stride, so every row starts 64-byte aligned.
Contiguous host storage (``contiguous=True``) has no padding: ``span_size`` is 0.

The YUV source before splitting is taken to be ``[..., 3, H, W]`` uint8 with channel 0 = Y and
channels 1, 2 = U, V at full resolution; U and V are subsampled by keeping the top-left sample of
each 2x2 (YUV420SP) or 1x2 (YUV422SP) block. The seed does not say how TCIM subsamples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from harness.layout.align import align_up
from harness.layout.errors import LayoutError
from harness.layout.strided import StridedTensor, check_shape, contiguous_stride
from harness.vendors.rules import load_rules

RULES = load_rules(Path(__file__).with_name("data") / "storage-rules.yaml")
_CONSTANTS = RULES.constants("TCIM")
DEVICE_ALIGNMENT: int = _CONSTANTS["device_alignment"]
# Chroma subsampling (rows, columns) per format, from the seed's h/w table.
YUV_SUBSAMPLING: dict[str, tuple[int, int]] = {
    fmt: (rows, columns) for fmt, (rows, columns) in _CONSTANTS["subsampling"].items()
}
MAX_RANK: int = _CONSTANTS["max_rank"]


def tensor_layout(
    shape: Sequence[int], dtype: DTypeLike, stride: Sequence[int] | None = None
) -> StridedTensor:
    """A non-image tensor's storage: contiguous when ``stride`` is None, else the given strides."""
    dims = check_shape(shape)
    dt = np.dtype(dtype)
    strides = contiguous_stride(dims, dt.itemsize) if stride is None else tuple(stride)
    return StridedTensor(dims, strides, dt)


@dataclass(frozen=True)
class ImageLayout:
    """A YUV image split into Y and UV tensors in one buffer: Y part first, UV at ``uv_offset``."""

    format: str
    shape: tuple[int, ...]
    y: StridedTensor
    uv: StridedTensor
    uv_offset: int

    @property
    def stride(self) -> tuple[int, ...]:
        """The seed's 2D-entry stride array: Y strides, UV strides, Y-to-UV offset."""
        return (*self.y.stride, *self.uv.stride, self.uv_offset)

    @property
    def mem_size(self) -> int:
        return self.uv_offset + self.uv.size

    @property
    def tensor_size(self) -> int:
        return self.y.tensor_size + self.uv.tensor_size

    @property
    def span_size(self) -> int:
        return self.mem_size - self.tensor_size


def _subsampling(fmt: str) -> tuple[int, int]:
    try:
        return YUV_SUBSAMPLING[fmt.upper()]
    except KeyError:
        known = ", ".join(YUV_SUBSAMPLING)
        raise LayoutError(f"format {fmt!r} is not one of {known}") from None


def _split_shapes(shape: Sequence[int], fmt: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    dims = check_shape(shape)
    if not 3 <= len(dims) <= MAX_RANK or dims[-3] != 3:
        raise LayoutError(
            f"image shape {list(dims)} must be [..., 3, H, W] with 3 to {MAX_RANK} dimensions"
        )
    sub_h, sub_w = _subsampling(fmt)
    *lead, _, height, width = dims
    for name, value, factor in (("H", height, sub_h), ("W", width, sub_w)):
        if value % factor:
            raise LayoutError(
                f"{fmt.upper()} needs {name} divisible by {factor}; shape {list(dims)} has "
                f"{name} = {value}"
            )
    return (*lead, height, width), (*lead, height // sub_h, width // sub_w, 2)


def _row_padded_stride(shape: Sequence[int], row_dim: int, alignment: int) -> tuple[int, ...]:
    """Contiguous uint8 strides, except that dimension ``row_dim`` steps over aligned rows."""
    stride = list(contiguous_stride(shape, 1))
    stride[row_dim] = align_up(stride[row_dim], alignment)
    for i in reversed(range(row_dim)):
        stride[i] = stride[i + 1] * shape[i + 1]
    return tuple(stride)


def image_layout(shape: Sequence[int], fmt: str, contiguous: bool = False) -> ImageLayout:
    """Split storage of a ``[..., 3, H, W]`` uint8 image: 64-byte rows, or none when contiguous."""
    y_shape, uv_shape = _split_shapes(shape, fmt)
    alignment = 1 if contiguous else DEVICE_ALIGNMENT
    uint8 = np.dtype(np.uint8)
    # The Y row is dimension -2 of [..., H, W]; the UV row is dimension -3 of [..., h, w, 2].
    y = StridedTensor(y_shape, _row_padded_stride(y_shape, len(y_shape) - 2, alignment), uint8)
    uv = StridedTensor(uv_shape, _row_padded_stride(uv_shape, len(uv_shape) - 3, alignment), uint8)
    return ImageLayout(fmt.upper(), check_shape(shape), y, uv, uv_offset=y.size)


def split_yuv(image: ArrayLike, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """Y ``[..., H, W]`` and interleaved UV ``[..., h, w, 2]`` from full-resolution YUV planes."""
    data = np.asarray(image)
    if data.dtype != np.uint8:
        raise LayoutError(f"YUV image dtype is {data.dtype}; it must be uint8")
    _split_shapes(data.shape, fmt)
    sub_h, sub_w = _subsampling(fmt)
    chroma = data[..., 1:, ::sub_h, ::sub_w]  # top-left sample of each block
    return data[..., 0, :, :], np.moveaxis(chroma, -3, -1)


def pack_image(image: ArrayLike, layout: ImageLayout) -> np.ndarray:
    """Split ``image`` and store Y and UV in one zero-padded buffer of ``mem_size`` bytes."""
    y, uv = split_yuv(image, layout.format)
    buffer = np.zeros(layout.mem_size, np.uint8)
    layout.y.place(y, buffer)
    layout.uv.place(uv, buffer, layout.uv_offset)
    return buffer


def unpack_image(buffer: np.ndarray | bytes, layout: ImageLayout) -> tuple[np.ndarray, np.ndarray]:
    """The Y and UV tensors stored in ``buffer``."""
    return layout.y.unpack(buffer), layout.uv.unpack(buffer, layout.uv_offset)
