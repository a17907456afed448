"""exSoftmax13: the toolkit's name for the layer an ONNX Softmax becomes, an entry of its own
in the operator list, probed with the Softmax model."""

from __future__ import annotations

from harness.models.normalization import SOFTMAX

OPERATORS = {"exSoftmax13": SOFTMAX}
