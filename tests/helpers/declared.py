"""The operator models the tests generate and build cases with: those of RKNN runs (the
vendor-neutral operators' and the toolkit's own), whose documents the tests read."""

from __future__ import annotations

import functools

from harness.cases.case import Case
from harness.cases.operators import operator_cases
from harness.vendors.rknn.vendor import VENDOR

MODELS = VENDOR.declarations
# The operators' models: those declaring how their limits are probed
OPERATORS = tuple(sorted(MODELS.probing))


@functools.cache
def platform_cases(platform: str) -> tuple[Case, ...]:
    """Every operator case generated for ``platform``, once per test session (1-3 s each)."""
    return tuple(operator_cases(VENDOR.operators(platform), MODELS).cases)
