"""Houmo TCIM tensor storage (seed 002): the document's worked examples and its invariants.

One test per worked example (a (3, 3) int8 array, contiguous and at stride (5, 1)) and per
YUV format and image shape (``harness.vendors.houmo``): strides are the document's, the
split image's stride array has 2D entries, ``memory_size = tensor_size + span_size``, device
rows are 64-byte aligned and contiguous storage has no span. No target runs it: each case's
checks are journaled, citing the rules (the report's documented rows).
"""

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.cases.case import Case
from harness.vendors.houmo import layout
from harness.vendors.rules import journal_checks, rule_check

pytestmark = pytest.mark.hil_suite("houmo-layout")


def _rule(name: str) -> str:
    return f"stride/{name}"


def _tensor_checks(params: dict[str, Any]) -> list[dict[str, Any]]:
    """A worked example of a plain tensor: its strides, size and span."""
    given = params["stride"] if params.get("given") else None
    tensor = layout.tensor_layout(params["shape"], params["dtype"], given)
    rule = _rule("non-contiguous-stride" if given else "contiguous-stride")
    size = tensor.tensor_size + tensor.span_size
    return [
        rule_check(
            "stride", [rule, _rule("stride-in-bytes")], params["stride"], list(tensor.stride)
        ),
        rule_check("memory size", [_rule("memory-size")], size, tensor.size),
        rule_check("span", [_rule("contiguous-no-span")], given is not None, tensor.span_size > 0),
    ]


def _image_checks(shape: list[int], fmt: str, seed: int) -> list[dict[str, Any]]:
    """The split storage of one image: shapes, stride array, sizes, alignment, round trip."""
    device = layout.image_layout(shape, fmt)
    host = layout.image_layout(shape, fmt, contiguous=True)
    sub_h, sub_w = layout.YUV_SUBSAMPLING[fmt]
    *lead, _, height, width = shape
    plane = math.prod(shape) // 3
    data = plane + 2 * plane // (sub_h * sub_w)  # Y plus the subsampled U and V bytes
    shapes = [[*lead, height, width], [*lead, height // sub_h, width // sub_w, 2]]
    rows = [device.y.stride[-2] % 64, device.uv.stride[-3] % 64]
    image = np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)
    stored = layout.unpack_image(layout.pack_image(image, device), device)
    kept = all(
        np.array_equal(a, b) for a, b in zip(stored, layout.split_yuv(image, fmt), strict=True)
    )
    return [
        rule_check("rank", [_rule("image-rank")], True, 3 <= len(shape) <= 6),
        rule_check(
            "split shapes",
            [_rule("yuv-subsampling")],
            shapes,
            [list(device.y.shape), list(device.uv.shape)],
        ),
        rule_check(
            "stride entries", [_rule("split-stride-array")], 2 * len(shape), len(device.stride)
        ),
        rule_check(
            "data bytes",
            [_rule("memory-size")],
            [data, data],
            [device.tensor_size, host.tensor_size],
        ),
        rule_check(
            "memory size",
            [_rule("memory-size")],
            [device.tensor_size + device.span_size, host.tensor_size + host.span_size],
            [device.mem_size, host.mem_size],
        ),
        rule_check("contiguous span", [_rule("contiguous-no-span")], 0, host.span_size),
        rule_check("row alignment remainder", [_rule("device-64-byte-alignment")], [0, 0], rows),
        rule_check("Y and UV stored and read back", [_rule("split-stride-array")], True, kept),
    ]


def test_storage_rule(hil_case: Case, pytestconfig: pytest.Config) -> None:
    params = hil_case.params
    if "format" in params:
        checks = _image_checks(params["shape"], params["format"], hil_case.seed)
    else:
        checks = _tensor_checks(params)
    record = journal_checks(Path(pytestconfig.getoption("results")), hil_case, checks)
    assert record.verdict == "confirmed", record.detail
