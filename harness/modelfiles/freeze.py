"""Operator parameters given as graph inputs, frozen into constants.

The ONNX node tests feed Pad's pads, Expand's shape, Gather's indices or a GRU's weights as
graph inputs; a vendor compiler keeps such an operator off the NPU (or rejects it) unless the
parameter is constant, so the NPU path is exercised only once they are frozen. A graph input
is frozen when every use of it is a parameter position of ``PARAMETER_INPUTS``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from onnx import numpy_helper

# Operator -> input positions that hold parameters rather than data (ONNX operator specs).
PARAMETER_INPUTS: dict[str, tuple[int, ...]] = {
    "Pad": (1, 2, 3),  # pads, constant_value, axes
    "Expand": (1,),  # shape
    "Gather": (1,),  # indices
    "Reshape": (1,),  # shape
    "Tile": (1,),  # repeats
    "Slice": (1, 2, 3, 4),  # starts, ends, axes, steps
    "Resize": (1, 2, 3),  # roi, scales, sizes
    "Conv": (1, 2),  # weights, bias
    "ConvTranspose": (1, 2),
    "RNN": (1, 2, 3, 4, 5),  # W, R, B, sequence_lens, initial_h
    "GRU": (1, 2, 3, 4, 5),
    "LSTM": (1, 2, 3, 4, 5, 6, 7),  # ... initial_c, P
}


def parameter_inputs(model: onnx.ModelProto) -> list[str]:
    """Graph inputs every use of which is a parameter position, in graph input order."""
    uses: dict[str, list[bool]] = {}
    for node in model.graph.node:
        positions = PARAMETER_INPUTS.get(node.op_type, ())
        for position, name in enumerate(node.input):
            if name:
                uses.setdefault(name, []).append(position in positions)
    constants = {init.name for init in model.graph.initializer}
    return [
        info.name
        for info in model.graph.input
        if info.name not in constants and uses.get(info.name) and all(uses[info.name])
    ]


def freeze(
    model: onnx.ModelProto, values: Mapping[str, np.ndarray]
) -> tuple[onnx.ModelProto, list[str]]:
    """``model`` with its parameter inputs (that ``values`` has) made initializers, and what
    was frozen, as change notes."""
    frozen = [name for name in parameter_inputs(model) if name in values]
    if not frozen:
        return model, []
    copy = onnx.ModelProto.FromString(model.SerializeToString())
    kept = [info for info in copy.graph.input if info.name not in frozen]
    del copy.graph.input[:]
    copy.graph.input.extend(kept)
    copy.graph.initializer.extend(numpy_helper.from_array(values[name], name) for name in frozen)
    notes = [f"input {name} frozen into a constant (an operator parameter)" for name in frozen]
    return copy, notes
