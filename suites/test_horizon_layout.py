"""Horizon J6 input strides (seed 000): the document's worked examples and its rules' invariants.

One test per worked example and J6 platform (``harness.vendors.horizon``) for ``--platform X``
(``all``: every J6 platform): the filled stride is the one the document derives for the
platform's alignment, and every filled stride keeps the document's rules. No target runs it:
the harness's own computation is checked against the document's numbers on the host, and each
case's checks are journaled, citing the rules (the report's documented rows).
"""

from pathlib import Path

import numpy as np
import pytest

from harness.cases.case import Case
from harness.vendors.horizon import layout
from harness.vendors.rules import journal_checks, rule_check

pytestmark = pytest.mark.hil_suite("horizon-layout")
ORDER, ALIGNED, STATIC = (f"stride/{rule}" for rule in layout.RULE_IDS)


def test_worked_example(hil_case: Case, pytestconfig: pytest.Config) -> None:
    example = hil_case.params
    filled = layout.fill(
        hil_case.platform,
        example["valid_shape"],
        example["stride"],
        model_valid_shape=example["model_valid_shape"],
    )
    shape, stride = filled.valid_shape, filled.stride
    image = filled.kind in layout.IMAGE_CHANNELS
    covers = all(stride[i] >= stride[i + 1] * shape[i + 1] for i in range(len(shape) - 1))
    checks = [
        rule_check(
            "stride", [ORDER, ALIGNED if image else STATIC], example["filled"], list(stride)
        ),
        rule_check("kind", [ALIGNED], example["kind"], filled.kind),
        rule_check("stride covers the inner dimension", [ORDER], True, covers),
    ]
    if image:  # Y and UV: the strides above the W dimension are aligned
        unaligned = [s % layout.PLATFORM_ALIGNMENT[hil_case.platform] for s in stride[:2]]
        checks.append(rule_check("W-direction alignment remainder", [ALIGNED], [0, 0], unaligned))
    record = journal_checks(Path(pytestconfig.getoption("results")), hil_case, checks)
    assert record.verdict == "confirmed", f"{record.detail} ({example['text']})"
    # the buffer holds every element at its strided offset
    buffer = np.zeros(filled.buffer_size, np.uint8)
    values = np.arange(np.prod(shape), dtype=np.uint8).reshape(shape)
    filled.tensor.place(values, buffer)
    assert np.array_equal(filled.tensor.unpack(buffer), values)
