"""The operator models the tests generate and build cases with: those of RKNN runs (the
vendor-neutral operators' and the toolkit's own), whose documents the tests read."""

from __future__ import annotations

from harness.vendors.rknn.vendor import VENDOR

MODELS = VENDOR.declarations
# The operators' models: those declaring how their limits are probed
OPERATORS = tuple(sorted(MODELS.probing))
