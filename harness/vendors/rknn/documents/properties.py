"""The documented properties Rockchip cases expect, and which of them each target observes.

Property names are the ``prop`` of a case's expectations and of its record's checks. A target
observes a property when what it reports lets an observer (``harness.vendors.rknn.model_io.checks``)
check it: the host build log shows placement, the precision each layer runs in (the layer
table's DataType), compiler rewrites and the compiled tensor forms for the simulator and for
boards alike (a board runs the model its host converted); a board's C runner also queries the
runtime's tensor attributes (``w_stride``, ``size_with_stride``, native formats).
"""

from __future__ import annotations

from harness.documented.properties import CPU_RULE, PLACEMENT, PRECISION, RESULT

INPUT_STRIDE = "input buffer stride"
W_STRIDE = "w_stride attribute"
BACKEND = "mean/scale/quant backend"
WIDTH_LIMIT = "width limit"
NC1HWC2_SIZE = "NC1HWC2 buffer size"
NC1HWC2_C2 = "NC1HWC2 C2"
NHWC_CHANNELS = "NHWC channels"
NCHW_OUTPUT = "NCHW output"
UNDEFINE_OUTPUT = "UNDEFINE output"

# What the host build log of a compiled model shows (the simulator's and a board's alike).
BUILD_LOG = frozenset(
    {
        PLACEMENT,
        PRECISION,
        CPU_RULE,
        WIDTH_LIMIT,
        INPUT_STRIDE,
        NC1HWC2_SIZE,
        NC1HWC2_C2,
        NHWC_CHANNELS,
        UNDEFINE_OUTPUT,
    }
)
SIMULATOR_OBSERVES = BUILD_LOG | {RESULT}
# rknn-toolkit-lite2 (and the test stand-in) return outputs only: nothing beyond the build log.
PYTHON_RUNNER_OBSERVES = BUILD_LOG | {RESULT}
# hil_c_runner reports the runtime's queried attributes (QUERIED_TENSOR entries).
C_RUNNER_OBSERVES = PYTHON_RUNNER_OBSERVES | {W_STRIDE}
