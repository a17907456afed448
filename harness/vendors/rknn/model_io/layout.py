"""RKNN zero-copy buffer layouts: width-padded inputs, NC1HWC2 and channel-padded NHWC outputs.

Every alignment number comes from the model I/O catalogue (seed 003). Shapes are the model's
logical ``(N, C, H, W)``; ``layout`` names the buffer's order. From the vendor's public
zero-copy samples (docs/rknn.md): ``w_stride`` counts elements and includes padding,
``size_with_stride`` counts bytes; NC1HWC2 has ``C1 = ceil(C / C2)`` and memory order C2, W, H,
C1, N.

H*W alignment ("Aligned to 4" in the NC1HWC2 rows): each C1 plane holds ``align_up(H*W, 4)``
pixels, the tail being padding, so an element sits at
``n*C1*P*C2 + (c//C2)*P*C2 + (h*W + w)*C2 + c%C2`` with ``P = align_up(H*W, hw_align)`` (the
vendor samples' formula when H*W is aligned). rknn-toolkit2 2.5.0 allocates exactly that: rk3588
float16, output 1x13x3x5 -> 512 bytes = 2 (C1) * 16 (P) * 8 (C2) * 2 bytes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from operator import index

import numpy as np

from harness.layout.align import align_up
from harness.layout.errors import LayoutError
from harness.vendors.rknn.documents.model_io import (
    InputRule,
    ModelIO,
    ModelIOError,
    OutputRule,
    load_model_io,
)

__all__ = [
    "InputStride",
    "LayoutError",
    "OutputLayout",
    "input_stride",
    "native_shape",
    "nc1hwc2_buffer_shape",
    "nc1hwc2_c2",
    "nhwc_output_channels",
    "output_layout",
    "pack_input",
    "pack_nc1hwc2",
    "pack_nhwc_output",
    "unpack_input",
    "unpack_nc1hwc2",
    "unpack_nhwc_output",
]

_INPUT_LAYOUTS = ("NCHW", "NHWC")
_NHWC_FROM_NCHW = (0, 2, 3, 1)
_NCHW_FROM_NHWC = (0, 3, 1, 2)


@contextmanager
def _documented() -> Iterator[None]:
    """Catalogue lookups fail with ModelIOError/ValueError; callers get one error type."""
    try:
        yield
    except (ModelIOError, ValueError) as exc:
        raise LayoutError(str(exc)) from exc


def _catalogue(model_io: ModelIO | None) -> ModelIO:
    return load_model_io() if model_io is None else model_io


def _positive(name: str, value: int) -> int:
    try:
        number = index(value)
    except TypeError:
        number = 0
    if isinstance(value, bool) or number < 1:
        raise LayoutError(f"{name} must be a positive integer, got {value!r}")
    return number


def _dims(name: str, shape: Sequence[int], ndim: int | None = 4) -> tuple[int, ...]:
    """Positive integer dimensions; exactly ``ndim`` of them unless ``ndim`` is None."""
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise LayoutError(f"{name} must be a sequence of integers, got {shape!r}")
    if not shape or (ndim is not None and len(shape) != ndim):
        raise LayoutError(f"{name} must have {ndim or 'at least 1'} dimensions, got {shape!r}")
    return tuple(_positive(f"{name}[{i}]", d) for i, d in enumerate(shape))


def _layout(layout: str, allowed: Sequence[str]) -> str:
    if layout not in allowed:
        raise LayoutError(f"layout must be one of {', '.join(allowed)}, got {layout!r}")
    return layout


def _array(name: str, array: np.ndarray, ndim: int) -> np.ndarray:
    array = np.asarray(array)
    if array.ndim != ndim:
        raise LayoutError(f"{name} must be {ndim}-dimensional, got shape {array.shape}")
    return array


def _pad_axis(array: np.ndarray, axis: int, size: int, name: str) -> np.ndarray:
    """A new contiguous array with ``axis`` zero-padded at its end to ``size``."""
    if _positive(name, size) < array.shape[axis]:
        raise LayoutError(f"{name} {size} is smaller than the data's {array.shape[axis]}")
    widths = [(0, 0)] * array.ndim
    widths[axis] = (0, size - array.shape[axis])
    return np.pad(array, widths)


def _crop_axis(buffer: np.ndarray, axis: int, size: int, name: str) -> np.ndarray:
    if _positive(name, size) > buffer.shape[axis]:
        raise LayoutError(f"{name} must be in 1..{buffer.shape[axis]}, got {size!r}")
    return np.ascontiguousarray(np.take(buffer, np.arange(size), axis=axis))


@dataclass(frozen=True)
class InputStride:
    """The zero-copy input buffer for one model input."""

    shape: tuple[int, ...]  # model shape N, C, H, W
    layout: str  # buffer order, NCHW or NHWC
    input_type: str
    itemsize: int  # bytes per element
    align: int  # documented width alignment for this channel count
    w_stride: int  # elements per row, padding included
    buffer_shape: tuple[int, ...]  # the padded array in `layout` order
    size: int  # bytes without padding
    size_with_stride: int  # bytes with padding
    rule: InputRule


def input_stride(
    platform: str,
    precision: str,
    input_type: str,
    shape: Sequence[int],
    layout: str,
    *,
    model_io: ModelIO | None = None,
) -> InputStride:
    """Width stride and buffer size of a 4-D input (``shape`` is N, C, H, W)."""
    n, c, h, w = _dims("shape", shape)
    _layout(layout, _INPUT_LAYOUTS)
    catalogue = _catalogue(model_io)
    with _documented():
        rule = catalogue.input_rule(platform, precision, input_type, c, ndim=4)
    itemsize = np.dtype(input_type).itemsize
    w_stride = align_up(w, rule.width_align)
    buffer_shape = (n, h, w_stride, c) if layout == "NHWC" else (n, c, h, w_stride)
    return InputStride(
        (n, c, h, w),
        layout,
        input_type,
        itemsize,
        rule.width_align,
        w_stride,
        buffer_shape,
        n * c * h * w * itemsize,
        math.prod(buffer_shape) * itemsize,
        rule,
    )


def _width_axis(layout: str) -> int:
    return 2 if _layout(layout, _INPUT_LAYOUTS) == "NHWC" else 3


def pack_input(array: np.ndarray, layout: str, w_stride: int) -> np.ndarray:
    """The zero-copy buffer for ``array`` (already in ``layout`` order), width zero-padded."""
    array = _array("array", array, 4)
    return _pad_axis(array, _width_axis(layout), w_stride, "w_stride")


def unpack_input(buffer: np.ndarray, layout: str, width: int) -> np.ndarray:
    """The data of a width-padded buffer (in ``layout`` order), padding dropped."""
    buffer = _array("buffer", buffer, 4)
    return _crop_axis(buffer, _width_axis(layout), width, "width")


def native_shape(shape: Sequence[int], c2: int) -> tuple[int, int, int, int, int]:
    """NC1HWC2 shape ``(N, ceil(C / C2), H, W, C2)`` of a logical (N, C, H, W) tensor."""
    n, c, h, w = _dims("shape", shape)
    c2 = _positive("c2", c2)
    return n, -(-c // c2), h, w, c2


def nc1hwc2_buffer_shape(shape: Sequence[int], c2: int, hw_align: int) -> tuple[int, ...]:
    """Memory shape ``(N, C1, align_up(H*W, hw_align), C2)``: the planes with their padding."""
    n, c1, h, w, _ = native_shape(shape, c2)
    return n, c1, align_up(h * w, _positive("hw_align", hw_align)), c2


def nc1hwc2_c2(
    platform: str, precision: str, last_layer_conv: bool, *, model_io: ModelIO | None = None
) -> int:
    """C2 of an NC1HWC2 output: the NC1HWC2 row's channel alignment."""
    with _documented():
        rule = _catalogue(model_io).output_rule(platform, precision, "NC1HWC2")
    return _c2(rule, last_layer_conv)


def _c2(rule: OutputRule, last_layer_conv: bool) -> int:
    c2 = rule.channel_align(last_layer_conv)
    if c2 is None:
        raise LayoutError(f"{rule.row} gives no channel alignment, so no C2 ({rule.source})")
    return c2


def pack_nc1hwc2(array: np.ndarray, layout: str, c2: int, hw_align: int) -> np.ndarray:
    """NC1HWC2 memory (shape from ``nc1hwc2_buffer_shape``) of an NCHW or NHWC array."""
    array = _array("array", array, 4)
    nchw = array if _layout(layout, _INPUT_LAYOUTS) == "NCHW" else array.transpose(_NCHW_FROM_NHWC)
    n, c1, plane, _ = nc1hwc2_buffer_shape(nchw.shape, c2, hw_align)
    _, _, h, w = nchw.shape
    padded = _pad_axis(nchw, 1, c1 * c2, "C1*C2")
    planes = padded.reshape(n, c1, c2, h * w).transpose(0, 1, 3, 2)  # N, C1, H*W, C2
    return _pad_axis(planes, 2, plane, "plane")


def unpack_nc1hwc2(
    buffer: np.ndarray, shape: Sequence[int], layout: str, c2: int, hw_align: int
) -> np.ndarray:
    """The (N, C, H, W) data of NC1HWC2 memory, in ``layout`` order; padding is ignored.

    ``buffer`` may be flat (as read from a board) or shaped; only its element count matters.
    """
    n, c, h, w = _dims("shape", shape)
    _layout(layout, _INPUT_LAYOUTS)
    buffer_shape = nc1hwc2_buffer_shape(shape, c2, hw_align)
    buffer = np.asarray(buffer)
    needed = math.prod(buffer_shape)
    if buffer.size != needed:
        raise LayoutError(
            f"buffer has {buffer.size} elements; NC1HWC2 {buffer_shape} needs {needed}"
        )
    _, c1, _, _ = buffer_shape
    planes = buffer.reshape(buffer_shape)[:, :, : h * w, :]
    nchw = planes.transpose(0, 1, 3, 2).reshape(n, c1 * c2, h, w)[:, :c]
    return np.ascontiguousarray(nchw if layout == "NCHW" else nchw.transpose(_NHWC_FROM_NCHW))


def nhwc_output_channels(
    platform: str, precision: str, channels: int, *, model_io: ModelIO | None = None
) -> int:
    """Channels of an NHWC output buffer: aligned up per the NHWC row (its "None" = no padding)."""
    with _documented():
        rule = _catalogue(model_io).output_rule(platform, precision, "NHWC")
    return _nhwc_channels(rule, _positive("channels", channels))


def _nhwc_channels(rule: OutputRule, channels: int) -> int:
    align = rule.channel_align(last_layer_conv=False)
    if align != rule.channel_align(last_layer_conv=True):
        raise LayoutError(f"{rule.row}: NHWC alignment depends on the last layer ({rule.source})")
    return channels if align is None else align_up(channels, align)


def pack_nhwc_output(array: np.ndarray, padded_channels: int) -> np.ndarray:
    """An NHWC array with its channels zero-padded to ``padded_channels``."""
    return _pad_axis(_array("array", array, 4), 3, padded_channels, "padded_channels")


def unpack_nhwc_output(buffer: np.ndarray, channels: int) -> np.ndarray:
    """The first ``channels`` channels of a channel-padded NHWC buffer."""
    return _crop_axis(_array("buffer", buffer, 4), 3, channels, "channels")


@dataclass(frozen=True)
class OutputLayout:
    """How an output of logical ``shape`` sits in memory for one documented output row."""

    shape: tuple[int, ...]  # logical shape (N, C, H, W for 4-D outputs)
    layout: str
    channel_align: int | None  # C2 for NC1HWC2, the channel padding unit for NHWC
    hw_align: int | None
    native_shape: tuple[int, ...]  # NC1HWC2: N, C1, H, W, C2; NHWC: N, H, W, padded C
    buffer_shape: tuple[int, ...]  # memory order, padding included
    itemsize: int
    size_with_stride: int  # bytes, padding included
    rule: OutputRule


def output_layout(
    platform: str,
    precision: str,
    layout: str,
    shape: Sequence[int],
    last_layer_conv: bool = False,
    *,
    model_io: ModelIO | None = None,
) -> OutputLayout:
    """Native shape, memory shape and byte size of an output (layouts other than 4-D: UNDEFINE)."""
    dims = _dims("shape", shape, None)
    catalogue = _catalogue(model_io)
    with _documented():
        rule = catalogue.output_rule(platform, precision, layout, ndim=len(dims))
    align = rule.channel_align(last_layer_conv)
    native: tuple[int, ...] = dims
    buffer = dims
    if layout == "NC1HWC2":
        align = _c2(rule, last_layer_conv)
        native = native_shape(dims, align)
        buffer = nc1hwc2_buffer_shape(dims, align, rule.hw_align or 1)
    elif layout == "NHWC":
        n, c, h, w = dims
        native = buffer = (n, h, w, _nhwc_channels(rule, c))
    itemsize = np.dtype(precision).itemsize
    return OutputLayout(
        dims,
        layout,
        align,
        rule.hw_align,
        native,
        buffer,
        itemsize,
        math.prod(buffer) * itemsize,
        rule,
    )
