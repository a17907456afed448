"""RKNN zero-copy layouts: worked numbers from seed 003 and vendor samples; round trips.

Expected offsets use the vendor samples' NC1HWC2 formula written out here element by element,
not the module's reshapes; expected alignments are read from the seed tables by hand.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.vendors.rknn.documents.model_io import load_model_io
from harness.vendors.rknn.model_io.layout import (
    LayoutError,
    input_stride,
    native_shape,
    nc1hwc2_buffer_shape,
    nc1hwc2_c2,
    nhwc_output_channels,
    output_layout,
    pack_input,
    pack_nc1hwc2,
    pack_nhwc_output,
    unpack_input,
    unpack_nc1hwc2,
    unpack_nhwc_output,
)

PROPERTY = settings(max_examples=60, deadline=None)


# --- inputs -----------------------------------------------------------------------------------


def test_rk3588_int8_uint8_nhwc_worked_example() -> None:
    # RK3588 row "int8 | 4 | uint8 | NPU | 16 | ...": width 223 -> 224 (14 * 16); bytes 1*224*224*3.
    stride = input_stride("rk3588", "int8", "uint8", (1, 3, 224, 223), "NHWC")
    assert (stride.align, stride.w_stride, stride.itemsize) == (16, 224, 1)
    assert stride.size_with_stride == 150528
    assert stride.size == 1 * 3 * 224 * 223
    assert stride.buffer_shape == (1, 224, 224, 3)
    nchw = input_stride("rk3588", "int8", "uint8", (1, 3, 224, 223), "NCHW")
    assert (nchw.buffer_shape, nchw.size_with_stride) == ((1, 3, 224, 224), 150528)


@pytest.mark.parametrize(
    ("platform", "precision", "input_type", "shape", "w_stride", "size_with_stride"),
    [
        # RK3566/RK3568 float16 first layer, float16 input: channel 3 -> width aligned to 4.
        ("rk3566", "float16", "float16", (1, 3, 10, 13), 16, 1 * 10 * 16 * 3 * 2),
        # Same row, channel 5 ("channel≠1,3,4" column): alignment 1, no padding.
        ("rk3568", "float16", "float16", (1, 5, 10, 13), 13, 1 * 10 * 13 * 5 * 2),
        # RK3562 int8, float32 input takes the "Other types" row: 16; itemsize 4.
        ("rk3562", "int8", "float32", (2, 1, 3, 17), 32, 2 * 3 * 32 * 1 * 4),
        # RV1103B/RV1106B int8 uint8: 8; an already aligned width stays.
        ("rv1106b", "int8", "uint8", (1, 4, 2, 24), 24, 1 * 2 * 24 * 4),
    ],
)
def test_input_stride_by_hand(
    platform: str,
    precision: str,
    input_type: str,
    shape: tuple[int, int, int, int],
    w_stride: int,
    size_with_stride: int,
) -> None:
    stride = input_stride(platform, precision, input_type, shape, "NHWC")
    assert (stride.w_stride, stride.size_with_stride) == (w_stride, size_with_stride)


def test_pack_input_pads_the_width_with_zeros() -> None:
    x = np.arange(1, 1 + 1 * 2 * 3 * 5, dtype=np.uint8).reshape(1, 2, 3, 5)  # NHWC, W = 3
    buffer = pack_input(x, "NHWC", 8)
    assert buffer.shape == (1, 2, 8, 5) and buffer.flags.c_contiguous
    assert (buffer[:, :, :3, :] == x).all() and not buffer[:, :, 3:, :].any()
    # Row h starts at h * w_stride * C elements: the stride the runtime reports, in elements.
    assert buffer.ravel()[1 * 8 * 5] == x[0, 1, 0, 0]


def test_input_errors_are_layout_errors_naming_the_value() -> None:
    with pytest.raises(LayoutError, match="NCWH"):
        input_stride("rk3588", "int8", "uint8", (1, 3, 4, 4), "NCWH")
    with pytest.raises(LayoutError, match=r"shape\[2\].*0"):
        input_stride("rk3588", "int8", "uint8", (1, 3, 0, 4), "NHWC")
    with pytest.raises(LayoutError, match="4 dimensions"):
        input_stride("rk3588", "int8", "uint8", (3, 4, 4), "NHWC")
    with pytest.raises(LayoutError, match="rk9999"):
        input_stride("rk9999", "int8", "uint8", (1, 3, 4, 4), "NHWC")
    with pytest.raises(LayoutError, match="float16"):  # RV1103/RV1106 document int8 only
        input_stride("rv1106", "float16", "uint8", (1, 3, 4, 4), "NHWC")
    with pytest.raises(LayoutError, match="w_stride 2"):
        pack_input(np.zeros((1, 1, 3, 1)), "NHWC", 2)
    with pytest.raises(LayoutError, match="width"):
        unpack_input(np.zeros((1, 1, 4, 1)), "NHWC", 5)


MODEL = load_model_io()
INPUT_COMBOS = [
    (target, precision, input_type)
    for target in MODEL.targets
    for precision in ("int8", "float16")
    for input_type in ("uint8", "int8", "float16", "float32")
    if any(
        row.dims == "4" and row.precision == precision
        for row in MODEL.group(target).inputs
        if row.input_type in (input_type, "Other types (input alignment may change)")
    )
]


@PROPERTY
@given(
    combo=st.sampled_from(INPUT_COMBOS),
    shape=st.tuples(*(st.integers(1, n) for n in (2, 6, 4, 40))),
    layout=st.sampled_from(["NCHW", "NHWC"]),
)
def test_input_properties(
    combo: tuple[str, str, str], shape: tuple[int, int, int, int], layout: str
) -> None:
    platform, precision, input_type = combo
    stride = input_stride(platform, precision, input_type, shape, layout)
    width = shape[3]
    assert stride.w_stride % stride.align == 0 and 0 <= stride.w_stride - width < stride.align
    assert stride.size_with_stride >= stride.size == math.prod(shape) * stride.itemsize
    nchw = np.arange(1, 1 + math.prod(shape)).reshape(shape).astype(input_type)
    x = nchw if layout == "NCHW" else nchw.transpose(0, 2, 3, 1)
    x = x + (x == 0)  # every data element non-zero, so zeros mark padding only
    buffer = pack_input(x, layout, stride.w_stride)
    assert buffer.shape == stride.buffer_shape
    assert buffer.nbytes == stride.size_with_stride
    assert np.count_nonzero(buffer) == x.size  # padding never overlaps data
    assert np.array_equal(unpack_input(buffer, layout, width), x)


# --- NC1HWC2 ----------------------------------------------------------------------------------


def test_rk3568_int8_nc1hwc2_worked_example() -> None:
    # RK3566/RK3568 int8 NC1HWC2: "Last layer convolution: aligned to 16; non-convolution: 8".
    assert nc1hwc2_c2("rk3568", "int8", last_layer_conv=False) == 8
    assert native_shape((1, 13, 4, 4), 8) == (1, 2, 4, 4, 8)  # C1 = ceil(13 / 8)
    assert nc1hwc2_c2("rk3568", "int8", last_layer_conv=True) == 16
    assert native_shape((1, 13, 4, 4), 16) == (1, 1, 4, 4, 16)


@pytest.mark.parametrize(
    ("platform", "precision", "conv", "other"),
    [
        ("rk3588", "int8", 32, 16),
        ("rk3588", "float16", 16, 8),
        ("rk3566", "float16", 8, 4),
        ("rv1103", "int8", 32, 16),
        ("rk3562", "float16", 16, 8),
        ("rk3576", "int8", 32, 16),
        ("rk2118", "float16", 8, 4),
        ("rv1103b", "int8", 8, 8),
    ],
)
def test_c2_per_platform(platform: str, precision: str, conv: int, other: int) -> None:
    assert nc1hwc2_c2(platform, precision, last_layer_conv=True) == conv
    assert nc1hwc2_c2(platform, precision, last_layer_conv=False) == other


def test_output_layout_matches_the_toolkit_allocation() -> None:
    # rknn-toolkit2 2.5.0, rk3588 float16, a 1x13x3x5 output in NC1HWC2: the build log's
    # Feature Tensor table gives 0x200 = 512 bytes = C1 2 * align_up(15, 4) * C2 8 * 2 bytes.
    out = output_layout("rk3588", "float16", "NC1HWC2", (1, 13, 3, 5))
    assert (out.channel_align, out.hw_align) == (8, 4)
    assert out.native_shape == (1, 2, 3, 5, 8)
    assert out.buffer_shape == (1, 2, 16, 8)
    assert out.size_with_stride == 512


def design_offset(shape: tuple[int, ...], c2: int, plane: int, n: int, c: int, hw: int) -> int:
    """Vendor samples: n*C1*H*W*C2 + (c//C2)*H*W*C2 + (h*W + w)*C2 + c%C2, H*W as ``plane``."""
    c1 = -(-shape[1] // c2)
    return n * c1 * plane * c2 + (c // c2) * plane * c2 + hw * c2 + c % c2


def test_pack_nc1hwc2_puts_each_element_at_the_design_offset() -> None:
    shape = (2, 13, 3, 5)
    x = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    flat = pack_nc1hwc2(x, "NCHW", 8, 4).ravel()
    assert flat.size == 2 * 2 * 16 * 8  # N * C1 * align_up(15, 4) * C2
    for n, c, h, w in itertools.product(*map(range, shape)):
        assert flat[design_offset(shape, 8, 16, n, c, h * 5 + w)] == x[n, c, h, w]


@PROPERTY
@given(
    shape=st.tuples(*(st.integers(1, n) for n in (2, 40, 5, 6))),
    c2=st.sampled_from([4, 8, 16, 32]),
    hw_align=st.sampled_from([1, 4]),
    layout=st.sampled_from(["NCHW", "NHWC"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_nc1hwc2_roundtrip_ignores_garbage_padding(
    shape: tuple[int, int, int, int], c2: int, hw_align: int, layout: str, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    nchw = rng.integers(-128, 128, size=shape, dtype=np.int8)
    x = nchw if layout == "NCHW" else nchw.transpose(0, 2, 3, 1)
    packed = pack_nc1hwc2(x, layout, c2, hw_align)
    n_, c_, h_, w_ = shape
    plane = -(-(h_ * w_) // hw_align) * hw_align
    assert packed.shape == nc1hwc2_buffer_shape(shape, c2, hw_align)
    assert packed.size == n_ * -(-c_ // c2) * plane * c2 >= nchw.size
    data = {
        design_offset(shape, c2, plane, n, c, h * w_ + w)
        for n, c, h, w in itertools.product(*map(range, shape))
    }
    assert len(data) == nchw.size  # no two elements share a slot
    garbage = rng.integers(-128, 128, size=packed.size, dtype=np.int8)
    board = packed.ravel().copy()
    padding = np.setdiff1d(np.arange(packed.size), sorted(data))
    board[padding] = garbage[padding]
    assert np.array_equal(unpack_nc1hwc2(board, shape, layout, c2, hw_align), x)


def test_nc1hwc2_errors() -> None:
    with pytest.raises(LayoutError, match="needs 64"):
        unpack_nc1hwc2(np.zeros(63), (1, 3, 2, 2), "NCHW", 16, 4)
    with pytest.raises(LayoutError, match="c2"):
        native_shape((1, 3, 2, 2), 0)
    with pytest.raises(LayoutError, match="NC1HWC2"):  # RK2118 documents float16 only
        nc1hwc2_c2("rk2118", "int8", last_layer_conv=False)


# --- NHWC outputs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "precision", "channels", "padded"),
    [
        ("rk3588", "int8", 13, 16),  # "Aligned to 16"
        ("rk3588", "float16", 13, 16),  # "Aligned to 8"
        ("rk3568", "int8", 17, 24),  # "Aligned to 8"
        ("rk3566", "float16", 5, 8),  # "Aligned to 4"
        ("rk3562", "int8", 13, 13),  # "None"
        ("rv1106", "int8", 13, 13),  # "None"
        ("rk2118", "float16", 3, 3),  # "None"
    ],
)
def test_nhwc_output_channels(platform: str, precision: str, channels: int, padded: int) -> None:
    assert nhwc_output_channels(platform, precision, channels) == padded
    out = output_layout(platform, precision, "NHWC", (1, channels, 2, 3))
    itemsize = {"int8": 1, "float16": 2}[precision]
    assert out.size_with_stride == 1 * 2 * 3 * padded * itemsize


@PROPERTY
@given(
    shape=st.tuples(*(st.integers(1, n) for n in (2, 4, 4, 40))), padded_extra=st.integers(0, 31)
)
def test_nhwc_output_roundtrip(shape: tuple[int, int, int, int], padded_extra: int) -> None:
    x = np.arange(1, 1 + math.prod(shape), dtype=np.int32).reshape(shape)
    buffer = pack_nhwc_output(x, shape[3] + padded_extra)
    assert np.count_nonzero(buffer) == x.size
    assert np.array_equal(unpack_nhwc_output(buffer, shape[3]), x)


def test_undefine_and_nchw_outputs_are_unpadded() -> None:
    nchw = output_layout("rk3588", "int8", "NCHW", (1, 13, 3, 5))
    assert nchw.buffer_shape == (1, 13, 3, 5) and nchw.size_with_stride == 195
    flat = output_layout("rk3576", "float16", "UNDEFINE", (7, 9), last_layer_conv=True)
    assert flat.size_with_stride == 7 * 9 * 2
    with pytest.raises(LayoutError, match="NHWC"):  # NHWC rows are 4-D only
        output_layout("rk3588", "int8", "NHWC", (7, 9))
