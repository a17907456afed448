"""The toolkit's own activations of the operator list, as the ONNX patterns it makes them of
(``harness.models.activations``). The layers they compile to: ``data/layer-aliases.yaml``."""

from __future__ import annotations

from harness.models.activations import unary

OPERATORS = {
    "exSwish": unary("Swish"),
    "exMish": unary("Mish"),
    # The toolkit (2.5.0) fuses the Erf form into one exGelu layer (rk3588, rk3576, rk3562).
    "exGelu": unary("Gelu"),
}
