"""Host reference: the operator model run in fp32 by onnxruntime on the CPU."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx.reference import ReferenceEvaluator

from harness.models import BuiltModel

_ERROR_ONLY = 3  # onnxruntime severity: 0 verbose ... 3 error


def reference_outputs(built: BuiltModel) -> list[np.ndarray]:
    """Outputs of ``built`` on its own inputs, in ``built.output_names`` order.

    Where onnxruntime has no CPU kernel for a documented type combination (Pow with an int8
    exponent), the ONNX reference evaluator, a direct transcription of the spec, stands in.
    """
    feeds = dict(zip(built.input_names, built.inputs, strict=True))
    options = ort.SessionOptions()
    options.log_severity_level = _ERROR_ONLY
    try:
        session = ort.InferenceSession(
            built.onnx_bytes, sess_options=options, providers=["CPUExecutionProvider"]
        )
    except ort.capi.onnxruntime_pybind11_state.NotImplemented:
        evaluator = ReferenceEvaluator(built.onnx_bytes)
        return [np.asarray(out) for out in evaluator.run(built.output_names, feeds)]
    return [np.asarray(out) for out in session.run(built.output_names, feeds)]
