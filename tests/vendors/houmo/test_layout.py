"""Houmo TCIM storage: seed 002's examples, the image split, its addresses and memory size."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.layout.errors import LayoutError
from harness.vendors.houmo import layout as tcim


def test_seed_contiguous_example() -> None:
    layout = tcim.tensor_layout([3, 3], "int8")
    assert layout.stride == (3, 1)
    assert layout.span_size == 0


@pytest.mark.parametrize(
    ("shape", "dtype"), [((2, 3, 4), "float32"), ((5, 1, 7), "int16"), ((4,), "int8")]
)
def test_contiguous_strides_are_numpy_c_order(shape: tuple[int, ...], dtype: str) -> None:
    # Row-major, as the seed's example; not its printed product over Shape[0..n-1].
    assert tcim.contiguous_stride(shape, np.dtype(dtype).itemsize) == np.empty(shape, dtype).strides


def test_seed_non_contiguous_example() -> None:
    layout = tcim.tensor_layout([3, 3], "int8", [5, 1])
    array = np.arange(1, 10, dtype=np.int8).reshape(3, 3)
    buffer = layout.pack(array)
    # Rows start 5 bytes apart; each is followed by 2 padding bytes.
    assert buffer.tolist() == [1, 2, 3, 0, 0, 4, 5, 6, 0, 0, 7, 8, 9, 0, 0]
    assert (layout.tensor_size, layout.size, layout.span_size) == (9, 15, 6)
    np.testing.assert_array_equal(layout.unpack(buffer), array)


def test_overlapping_strides_are_refused() -> None:
    with pytest.raises(LayoutError, match=r"stride\[0\] = 2 breaks .* = 1 \* 3 = 3"):
        tcim.tensor_layout([3, 3], "int8", [2, 1])


# (format, H, W) -> (h, w) from the seed's table.
SPLIT = {"YUV420SP": (110, 110), "YUV422SP": (220, 110), "YUV444SP": (220, 220)}


@pytest.mark.parametrize("fmt", SPLIT)
@pytest.mark.parametrize("lead", [(), (4,), (2, 1, 3)])
def test_split_shapes_follow_the_seed(fmt: str, lead: tuple[int, ...]) -> None:
    layout = tcim.image_layout([*lead, 3, 220, 220], fmt)
    assert layout.y.shape == (*lead, 220, 220)
    assert layout.uv.shape == (*lead, *SPLIT[fmt], 2)
    dims = len(lead) + 3
    assert len(layout.stride) == 2 * dims
    assert layout.stride[: dims - 1] == layout.y.stride
    assert layout.stride[dims - 1 : 2 * dims - 1] == layout.uv.stride
    assert layout.stride[2 * dims - 1] == layout.uv_offset


def test_device_layout_of_a_220x220_yuv420sp_image() -> None:
    # Worked by hand: Y rows of 220 bytes padded to 256; UV rows of 110 pairs = 220 bytes
    # padded to 256; 220 Y rows and 110 UV rows per image; UV after both Y planes.
    layout = tcim.image_layout([2, 3, 220, 220], "YUV420SP")
    assert layout.stride == (56320, 256, 1, 28160, 256, 2, 1, 2 * 56320)
    assert layout.mem_size == 2 * 56320 + 2 * 28160
    assert layout.tensor_size == 2 * 220 * 220 * 3 // 2
    assert layout.span_size == layout.mem_size - layout.tensor_size


def test_contiguous_host_layout_has_no_span() -> None:
    layout = tcim.image_layout([2, 3, 4, 6], "YUV420SP", contiguous=True)
    assert layout.stride == (24, 6, 1, 12, 6, 2, 1, 48)
    assert layout.span_size == 0
    assert layout.mem_size == 2 * 4 * 6 * 3 // 2  # 1.5 bytes per pixel


def test_subsampling_keeps_the_top_left_sample_of_each_block() -> None:
    image = np.random.default_rng(1).integers(0, 256, (3, 4, 6), dtype=np.uint8)
    y, uv = tcim.split_yuv(image, "YUV420SP")
    np.testing.assert_array_equal(y, image[0])
    for i in range(2):
        for j in range(3):
            assert tuple(uv[i, j]) == (image[1, 2 * i, 2 * j], image[2, 2 * i, 2 * j])
    _, uv422 = tcim.split_yuv(image, "YUV422SP")
    assert tuple(uv422[3, 2]) == (image[1, 3, 4], image[2, 3, 4])


@pytest.mark.parametrize(
    ("shape", "fmt", "message"),
    [
        ([1, 3, 5, 4], "YUV420SP", "YUV420SP needs H divisible by 2.*H = 5"),
        ([1, 3, 4, 5], "YUV422SP", "YUV422SP needs W divisible by 2.*W = 5"),
        ([1, 4, 4, 4], "YUV444SP", r"must be \[\.\.\., 3, H, W\]"),
        ([3, 4], "YUV444SP", "3 to 6 dimensions"),
        ([1, 1, 1, 1, 3, 4, 4], "YUV444SP", "3 to 6 dimensions"),
        ([1, 3, 4, 4], "NV21", "format 'NV21' is not one of YUV420SP"),
        ([1, 3, 0, 4], "YUV444SP", r"shape\[2\] = 0"),
    ],
)
def test_invalid_images(shape: list[int], fmt: str, message: str) -> None:
    with pytest.raises(LayoutError, match=message):
        tcim.image_layout(shape, fmt)


def test_odd_height_is_fine_for_yuv422sp() -> None:
    assert tcim.image_layout([3, 5, 4], "YUV422SP").uv.shape == (5, 2, 2)


@st.composite
def images(draw: st.DrawFn) -> tuple[list[int], str, bool]:
    fmt = draw(st.sampled_from(sorted(tcim.YUV_SUBSAMPLING)))
    lead = draw(st.lists(st.integers(1, 3), min_size=0, max_size=3))
    height = 2 * draw(st.integers(1, 12))
    width = 2 * draw(st.integers(1, 80))
    return [*lead, 3, height, width], fmt, draw(st.booleans())


@settings(max_examples=60, deadline=None)
@given(images(), st.integers(0, 2**32 - 1))
def test_image_storage_properties(case: tuple[list[int], str, bool], seed: int) -> None:
    shape, fmt, contiguous = case
    layout = tcim.image_layout(shape, fmt, contiguous)
    stride, dims = layout.stride, len(shape)
    image = np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)
    buffer = tcim.pack_image(image, layout)

    # The seed's memory size: outermost UV count * outermost UV stride + Y-to-UV offset.
    assert buffer.size == layout.mem_size == layout.uv.shape[0] * stride[dims - 1] + stride[-1]

    # Round trip back to the split tensors.
    y, uv = tcim.unpack_image(buffer, layout)
    want_y, want_uv = tcim.split_yuv(image, fmt)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(uv, want_uv)

    # Addresses by the seed's rule, element by element: Y at sum(index * Stride[0..D-2]),
    # UV at sum(index * Stride[D-1..2D-2]) + Stride[2D-1].
    y_at = np.indices(want_y.shape).reshape(want_y.ndim, -1).T @ np.array(stride[: dims - 1])
    uv_index = np.indices(want_uv.shape).reshape(want_uv.ndim, -1).T
    uv_at = uv_index @ np.array(stride[dims - 1 : -1]) + stride[-1]
    np.testing.assert_array_equal(buffer[y_at], want_y.reshape(-1))
    np.testing.assert_array_equal(buffer[uv_at], want_uv.reshape(-1))

    # Sentinel: with every sample 0xFF, exactly tensor_size bytes are 0xFF (data never overlaps)
    # and the rest, span_size bytes, are zero padding.
    full = tcim.pack_image(np.full(shape, 0xFF, np.uint8), layout)
    assert np.count_nonzero(full == 0xFF) == layout.tensor_size
    assert layout.tensor_size == math.prod(want_y.shape) + math.prod(want_uv.shape)
    assert np.count_nonzero(full == 0) == layout.span_size == layout.mem_size - layout.tensor_size

    if contiguous:
        assert layout.span_size == 0
    else:  # every Y row and UV row starts on a 64-byte boundary
        assert np.all(y_at[:: shape[-1]] % 64 == 0)
        assert np.all(uv_at[:: 2 * layout.uv.shape[-2]] % 64 == 0)
