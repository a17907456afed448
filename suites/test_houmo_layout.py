"""Houmo TCIM tensor storage (seed 002): the document's worked examples and its invariants.

One test per worked example (a (3, 3) int8 array, contiguous and at stride (5, 1)) and per
YUV format and image shape (``harness.vendors.houmo``): strides are the document's, the
split image's stride array has 2D entries, ``memory_size = tensor_size + span_size``, device
rows are 64-byte aligned and contiguous storage has no span. No target runs it.
"""

import math

import numpy as np
import pytest

from harness.cases.case import Case
from harness.vendors.houmo import layout

pytestmark = pytest.mark.hil_suite("houmo-layout")


def test_storage_rule(hil_case: Case) -> None:
    params = hil_case.params
    if "format" not in params:  # a worked example of a plain tensor
        stride = params["stride"] if params.get("given") else None
        tensor = layout.tensor_layout(params["shape"], params["dtype"], stride)
        assert list(tensor.stride) == params["stride"], params["text"]
        assert tensor.size == tensor.tensor_size + tensor.span_size
        assert (tensor.span_size == 0) == (stride is None)
        return
    shape, fmt = params["shape"], params["format"]
    device = layout.image_layout(shape, fmt)
    host = layout.image_layout(shape, fmt, contiguous=True)
    rank = len(shape)
    assert len(device.stride) == 2 * rank  # Y strides, UV strides, the Y-to-UV offset
    sub_h, sub_w = layout.YUV_SUBSAMPLING[fmt]
    *lead, _, height, width = shape
    assert device.y.shape == (*lead, height, width)
    assert device.uv.shape == (*lead, height // sub_h, width // sub_w, 2)
    for image in (device, host):
        assert image.mem_size == image.tensor_size + image.span_size
        assert image.tensor_size == math.prod(shape) // 3 * (1 + 2 / (sub_h * sub_w))
    assert host.span_size == 0
    assert device.y.stride[-2] % layout.DEVICE_ALIGNMENT == 0
    assert device.uv.stride[-3] % layout.DEVICE_ALIGNMENT == 0
    image = np.random.default_rng(hil_case.seed).integers(0, 256, shape, dtype=np.uint8)
    y, uv = layout.split_yuv(image, fmt)
    stored_y, stored_uv = layout.unpack_image(layout.pack_image(image, device), device)
    assert np.array_equal(stored_y, y) and np.array_equal(stored_uv, uv)
