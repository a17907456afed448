"""Horizon J6 stride filling: seed 000's worked examples, its rules, and packing properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.layout.errors import LayoutError
from harness.vendors.horizon import layout as horizon

# Seed 000: the three inputs of the example model (validShape, stride as the model declares them)
# and the actual shapes of the dynamic ones.
MODEL = {
    "y": ([1, -1, -1, 1], [-1, -1, 1, 1], [1, 220, 220, 1]),
    "uv": ([1, -1, -1, 2], [-1, -1, 2, 1], [1, 110, 110, 2]),
    "roi": ([1, 4], [16, 4], [1, 4]),
}
# The seed's results: J6E (ALIGN_32) and J6H/P, S6P (ALIGN_64).
SEED_STRIDES = {
    32: {"y": (49280, 224, 1, 1), "uv": (24640, 224, 2, 1), "roi": (16, 4)},
    64: {"y": (56320, 256, 1, 1), "uv": (28160, 256, 2, 1), "roi": (16, 4)},
}
PLATFORMS = {"J6E": 32, "J6M": 32, "J6B": 32, "J6H": 64, "J6P": 64, "S6P": 64}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", MODEL)
def test_seed_example(platform: str, name: str) -> None:
    model_shape, stride, actual = MODEL[name]
    layout = horizon.fill(platform, actual, stride, model_valid_shape=model_shape)
    assert layout.stride == SEED_STRIDES[PLATFORMS[platform]][name]
    assert layout.valid_shape == tuple(actual)
    assert layout.alignment == PLATFORMS[platform]
    assert layout.kind == ("other" if name == "roi" else name)


def test_buffer_size_is_batch_stride_times_batch() -> None:
    layout = horizon.fill("J6E", [3, 220, 220, 1], [-1, -1, 1, 1])
    assert layout.stride[0] == 49280  # one batch is the seed's single-image buffer
    assert layout.buffer_size == 3 * 49280


def test_packed_seed_y_input_puts_rows_at_aligned_offsets() -> None:
    layout = horizon.fill("J6E", [1, 220, 220, 1], [-1, -1, 1, 1])
    image = np.random.default_rng(0).integers(1, 256, (1, 220, 220, 1), dtype=np.uint8)
    buffer = layout.tensor.pack(image)
    assert buffer.size == 49280
    rows = buffer.reshape(220, 224)  # rows of 224 bytes: 220 pixels, 4 padding
    np.testing.assert_array_equal(rows[:, :220], image[0, :, :, 0])
    assert not rows[:, 220:].any()
    np.testing.assert_array_equal(layout.tensor.unpack(buffer.tobytes()), image)


def test_non_image_dynamic_stride_is_compact_and_unaligned() -> None:
    layout = horizon.fill("J6H", [2, 3, 5], [-1, -1, -1], dtype=np.float32)
    assert layout.kind == "other"
    assert layout.stride == (60, 20, 4)  # 4-byte floats, 5 per row, 3 rows per batch


def test_auto_treats_static_4d_input_as_other_but_explicit_y_checks_alignment() -> None:
    assert horizon.fill("J6E", [1, 2, 20, 1], [640, 20, 1, 1]).kind == "other"
    with pytest.raises(LayoutError, match=r"stride\[1\] = 20 of a Y input .* multiple of 32"):
        horizon.fill("J6E", [1, 2, 20, 1], [640, 20, 1, 1], kind="y")


@pytest.mark.parametrize(
    ("shape", "stride", "kwargs", "message"),
    [
        # The seed's rule stride[idx] >= stride[idx+1] * validShape[idx+1].
        ([1, 4], [8, 4], {}, r"stride\[0\] = 8 breaks .* = 4 \* 4 = 16"),
        ([1, 220, 220, 1], [-1, 192, 1, 1], {}, r"stride\[1\] = 192 breaks .* = 1 \* 220 = 220"),
        ([1, 4], [4, 2], {"dtype": np.float32}, r"stride\[1\] = 2 .* element size 4"),
        ([1, 4], [16, 4, 1], {}, r"stride \[16, 4, 1\] has 3 entries .* has 2"),
        ([1, 0, 4], [-1, -1, 1], {}, r"validShape\[1\] = 0"),
        ([1, 4], [16, 0], {}, r"stride\[1\] = 0"),
        ([1, 224, 220, 1], [-1, -1, 1, 1], {"model_valid_shape": [1, 220, -1, 1]}, "fixes 220"),
        ([1, 20, 20, 3], [-1, -1, 1, 1], {"kind": "uv"}, r"UV input has validShape \[N,H,W,2\]"),
        ([1, 4], [16, 4], {"kind": "rgb"}, "input kind 'rgb'"),
    ],
)
def test_invalid_requests_name_the_field(
    shape: list[int], stride: list[int], kwargs: dict, message: str
) -> None:
    with pytest.raises(LayoutError, match=message):
        horizon.fill("J6E", shape, stride, **kwargs)


def test_unknown_platform() -> None:
    with pytest.raises(LayoutError, match="platform 'J5' is not one of J6E"):
        horizon.fill("J5", [1, 4], [16, 4])


@st.composite
def image_inputs(draw: st.DrawFn) -> tuple[str, list[int], list[int]]:
    channels = draw(st.sampled_from([1, 2]))
    shape = [draw(st.integers(1, 3)), draw(st.integers(1, 40)), draw(st.integers(1, 150)), channels]
    inner = draw(st.sampled_from([[channels, 1], [-1, -1]]))
    return draw(st.sampled_from(sorted(PLATFORMS))), shape, [-1, -1, *inner]


@settings(max_examples=60, deadline=None)
@given(image_inputs())
def test_filled_image_strides_obey_every_rule(case: tuple[str, list[int], list[int]]) -> None:
    platform, shape, stride = case
    layout = horizon.fill(platform, shape, stride)
    filled, align = layout.stride, PLATFORMS[platform]
    assert layout.kind == ("y" if shape[3] == 1 else "uv")
    assert filled[3] == 1 and filled[2] == shape[3]  # a pixel is C one-byte samples
    for i in range(3):
        assert filled[i] >= filled[i + 1] * shape[i + 1]
    for i in (0, 1):  # batch and row strides: aligned, and no more padding than alignment needs
        assert filled[i] % align == 0
        assert filled[i] - filled[i + 1] * shape[i + 1] < align


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=5),
    st.sampled_from(["uint8", "int16", "float16", "float32", "int64"]),
)
def test_dynamic_non_image_strides_match_numpy_c_order(shape: list[int], dtype: str) -> None:
    layout = horizon.fill("J6P", shape, [-1] * len(shape), kind="other", dtype=dtype)
    assert layout.stride == np.empty(shape, dtype).strides


@st.composite
def strided_inputs(draw: st.DrawFn) -> tuple[list[int], list[int], np.dtype]:
    """A shape with valid, possibly padded, strides built from the innermost dimension out."""
    dtype = np.dtype(draw(st.sampled_from(["uint8", "int16", "float32", "float64"])))
    shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    stride = [dtype.itemsize + draw(st.integers(0, 3))]
    for dim in reversed(shape[1:]):
        stride.insert(0, stride[0] * dim + draw(st.integers(0, 7)))
    return shape, stride, dtype


@settings(max_examples=80, deadline=None)
@given(strided_inputs(), st.integers(0, 2**32 - 1))
def test_pack_round_trips_and_padding_never_touches_data(
    case: tuple[list[int], list[int], np.dtype], seed: int
) -> None:
    shape, stride, dtype = case
    layout = horizon.fill("J6E", shape, stride, kind="other", dtype=dtype)
    assert list(layout.stride) == stride  # given strides are kept
    tensor_bytes = int(np.prod(shape)) * dtype.itemsize
    data = np.random.default_rng(seed).integers(0, 256, tensor_bytes, dtype=np.uint8)
    array = data.view(dtype).reshape(shape)
    assert layout.tensor.unpack(layout.tensor.pack(array)).tobytes() == array.tobytes()
    # Sentinel: every data byte 0xFF. Overlapping elements would leave fewer than tensor_bytes
    # sentinel bytes; padding must stay zero.
    sentinel = np.full(tensor_bytes, 0xFF, np.uint8).view(dtype).reshape(shape)
    buffer = layout.tensor.pack(sentinel)
    assert buffer.size == layout.buffer_size == stride[0] * shape[0]
    assert np.count_nonzero(buffer == 0xFF) == tensor_bytes
    assert np.count_nonzero(buffer == 0) == layout.buffer_size - tensor_bytes
