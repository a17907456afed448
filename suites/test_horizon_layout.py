"""Horizon J6 input strides (seed 000): the document's worked examples and its rules' invariants.

One test per worked example and J6 platform (``harness.vendors.horizon``) for ``--platform X``
(``all``: every J6 platform): the filled stride is the one the document derives for the
platform's alignment, and every filled stride keeps the document's rules. No target runs it:
the rules are the harness's own computation, checked against the document's numbers.
"""

import numpy as np
import pytest

from harness.cases.case import Case
from harness.vendors.horizon import layout

pytestmark = pytest.mark.hil_suite("horizon-layout")


def test_worked_example(hil_case: Case) -> None:
    example = hil_case.params
    filled = layout.fill(
        hil_case.platform,
        example["valid_shape"],
        example["stride"],
        model_valid_shape=example["model_valid_shape"],
    )
    assert list(filled.stride) == example["filled"], example["text"]
    assert filled.kind == example["kind"]
    shape, stride = filled.valid_shape, filled.stride
    # stride[idx] >= stride[idx+1] * validShape[idx+1]
    assert all(stride[i] >= stride[i + 1] * shape[i + 1] for i in range(len(shape) - 1))
    if filled.kind in layout.IMAGE_CHANNELS:  # Y and UV: aligned above the W dimension
        assert all(s % layout.PLATFORM_ALIGNMENT[hil_case.platform] == 0 for s in stride[:2])
    # the buffer holds every element at its strided offset
    buffer = np.zeros(filled.buffer_size, np.uint8)
    values = np.arange(np.prod(shape), dtype=np.uint8).reshape(shape)
    filled.tensor.place(values, buffer)
    assert np.array_equal(filled.tensor.unpack(buffer), values)
