"""The operator models of RKNN runs beyond the vendor-neutral ones: the toolkit's own
operators of the operator list (``fused``, ``activations``, ``normalization``: families of
the same names), the model-I/O probes' models, the layer types the toolkit names operators
by (``data/layer-aliases.yaml``; a convolution's are made of its kind and fused
activation)."""

from __future__ import annotations

from harness.models import Declarations, convolution, families
from harness.vendors.rknn.documents.layer_aliases import (
    load_convolution_layers,
    load_operator_layers,
)
from harness.vendors.rknn.model_io.models import MODELS
from harness.vendors.rknn.models import activations, fused, normalization


def _convolution_layers() -> dict[str, tuple[str, ...]]:
    """Each convolution operator's layer type: ConvolutionRelu is a "ConvRelu" layer."""
    kinds, parts = load_convolution_layers()
    return {
        op: (kinds[kind] + parts.get(fuses, fuses),)
        for op, (kind, fuses) in convolution.PARTS.items()
    }


DECLARATIONS = Declarations(
    {**families(activations, normalization, fused), "model_io": MODELS},
    layers={**load_operator_layers(), **_convolution_layers()},
)
