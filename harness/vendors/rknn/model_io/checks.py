"""Rockchip observers: each documented model-I/O property against what the target showed.

The judge (``harness.judge.checks``) hands each expectation of a case to the observer of its
property; ``JUDGE``, which the plugin hands to the pipeline, adds ``OBSERVERS`` to the generic
ones. Build-log facts (compiler errors, tensor sizes) are read from ``Observation.log``; values
a board's C runner queried from the runtime are the ``QUERIED_TENSOR`` entries of
``Observation.tensors``.

| property             | observed as                                  | status                    |
|----------------------|----------------------------------------------|---------------------------|
| width limit          | conv layer target, compiler errors (rewrites | see ``_width_limit``;     |
| (placement phase)    | of the convolution node are reported)        | decides before the result |
| input buffer stride  | compiled input tensor (Feature Tensor table) | confirmed, doc-drift      |
| w_stride attribute   | the runtime's queried input w_stride         | confirmed, doc-drift      |
|                      | (C runner only)                              |                           |
| NC1HWC2 buffer size  | output tensor Size column                    | confirmed, doc-drift      |
| NC1HWC2 C2           | native C2; decoding through harness.layout   | confirmed, doc-drift      |
| NHWC channels        | NPU-side NHWC output forms (exSecondary)     | confirmed, doc-drift, or  |
|                      |                                              | unobserved when none      |
| UNDEFINE (not 4-D)   | output tensor format and native shape        | confirmed, doc-drift      |
| backend, NCHW,       | no target yet                                | unobserved                |
| UNDEFINE (4-D)       |                                              |                           |

The other properties are judged in the layout phase, after placement and the numeric result
(``harness.judge.verdict``): a documented layout value the compiler or runtime does not
follow is ``doc-drift``, also for a documented supported case: the document misdescribes the
memory a zero-copy user has to address. Precision (int8 cases) is the generic observer's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from harness.cases.case import Expect
from harness.judge.checks import Judge, Observer, Outcome, Seen
from harness.judge.observers import GENERIC_OBSERVERS, by_documentation, placement_of
from harness.judge.verdict import LAYOUT_PHASE, PLACEMENT_PHASE, UNOBSERVED
from harness.layout.align import align_up
from harness.vendors.rknn import QUERIED_TENSOR
from harness.vendors.rknn.documents.properties import (
    BACKEND,
    INPUT_STRIDE,
    NC1HWC2_C2,
    NC1HWC2_SIZE,
    NCHW_OUTPUT,
    NHWC_CHANNELS,
    UNDEFINE_OUTPUT,
    W_STRIDE,
    WIDTH_LIMIT,
)
from harness.vendors.rknn.model_io.layout import LayoutError, pack_nc1hwc2, unpack_nc1hwc2
from harness.vendors.rknn.model_io.models import CONV_NODE, INPUT_NAME, OUTPUT_NAME
from harness.vendors.rknn.toolkit.buildlog import parse_build_log, tensor_sizes

ITEMSIZE = {"INT8": 1, "UINT8": 1, "INT16": 2, "FLOAT16": 2, "FLOAT32": 4, "INT32": 4}
# Compiler "E" lines that say nothing about the convolution under test (rknn-toolkit2 2.5.0).
BENIGN_ERRORS = {
    "Unkown op target": "printed for layers the compiler places on the CPU (the Reshapes "
    "around a 1-D convolution); the build and the result are unaffected",
}
_REMOVED = re.compile(r"remove node = \[(.*?)\]")


@functools.lru_cache(maxsize=4)  # every observer of a case reads the same log
def compiler_errors(log: str) -> tuple[str, ...]:
    """First lines of the compiler errors (a crash appends its traceback), benign ones left out."""
    firsts = [e.splitlines()[0] for e in parse_build_log(log).errors if e.strip()]
    return tuple(e for e in firsts if not any(benign in e for benign in BENIGN_ERRORS))


@functools.lru_cache(maxsize=4)
def _sizes(log: str) -> Mapping[str, int]:
    return tensor_sizes(log)


def _tensor(seen: Seen, name: str) -> dict[str, Any] | None:
    """The build log's entry for ``name`` (entries queried on a board come after it)."""
    return next(
        (
            t
            for t in seen.observation.tensors
            if t.get("name") == name and t.get("source") != QUERIED_TENSOR
        ),
        None,
    )


def _layer(seen: Seen, op: str) -> dict[str, Any] | None:
    return next((x for x in seen.observation.placement if x.get("op") == op), None)


def _last_compute_layer(seen: Seen) -> str:
    compute = [x for x in seen.observation.placement if not x.get("io")]
    return f"{compute[-1]['op']} on {compute[-1]['target']}" if compute else "none listed"


# -- observers -------------------------------------------------------------------------------


def _width_limit(expect: Expect, seen: Seen) -> Outcome:
    """The operator verdicts, with compiler errors counted as a build error.

    A build that succeeds but logs compiler errors (e.g. "REGTASK: The bit width of field value
    exceeds the limit") produced a network the hardware cannot run as built. A rewrite that
    replaces the convolution node (a split, a dilation conversion) is reported but, as in the
    operator suites, still counts as running on the NPU: measured, the compiler rewrites
    large dilations on both sides of a documented boundary.
    """
    supported = bool(expect.value)
    failed = seen.failure
    if failed:
        return by_documentation(supported), failed
    target, how = placement_of(seen.observation.placement, seen.case.layer_types)
    rewrites = [r.split(":", 1)[0] for r in seen.observation.rewrites if _replaces_conv(r)]
    facts = [how]
    if rewrites:
        facts.append(f"convolution replaced by the compiler ({', '.join(sorted(set(rewrites)))})")
    errors = compiler_errors(seen.observation.log)
    if errors:
        facts.append(f"{len(errors)} compiler error(s), e.g. {errors[0]}")
    observed = "; ".join(facts)
    if target == "CPU" or errors:
        return by_documentation(supported), observed
    if supported:
        return "confirmed", observed
    return "doc-drift", f"limit not enforced: {observed}; no compiler error"


def _replaces_conv(rewrite: str) -> bool:
    removed = _REMOVED.search(rewrite)
    return removed is not None and f"'{CONV_NODE}'" in removed.group(1)


def _input_stride(expect: Expect, seen: Seen) -> Outcome:
    """The row stride the compiled input tensor has.

    A 4-D input the NPU reads directly (native C2 equal to its channel count: the first-layer
    path for 1, 3 or 4 channels) shows its padded rows only in the Size column: stride = Size /
    (N * H * C * itemsize). Otherwise the native shape's width is the stride.
    """
    entry = _tensor(seen, INPUT_NAME)
    if entry is None or not entry.get("native_shape"):
        return UNOBSERVED, _missing(INPUT_NAME, seen)
    shape = seen.case.params["shape"]
    native, fmt = entry["native_shape"], entry["format"]
    where = f"{INPUT_NAME} {fmt} {tuple(native)}"
    if len(shape) == 4 and fmt == "NC1HWC2" and native[-1] == shape[1]:
        size, itemsize = _sizes(seen.observation.log).get(INPUT_NAME), ITEMSIZE.get(entry["dtype"])
        per_row = shape[0] * shape[2] * shape[1] * (itemsize or 0)
        if size is None or not per_row or size % per_row:
            return UNOBSERVED, f"{where}: Size {size} gives no whole row stride"
        stride = size // per_row
        where += f" = {size} bytes, {shape[0] * shape[2]} rows of {stride} x {shape[1]}"
    else:
        stride = native[3] if fmt == "NC1HWC2" and len(native) == 5 else native[-1]
    observed = f"{where}: stride {stride}"
    return ("confirmed" if stride == expect.value else "doc-drift"), observed


def _w_stride(expect: Expect, seen: Seen) -> Outcome:
    """The input's w_stride as the board's runtime reports it (rknn_query, zero-copy attrs)."""
    queried = [
        t
        for t in seen.observation.tensors
        if t.get("source") == QUERIED_TENSOR and t.get("role") == "input"
    ]
    entry = next((t for t in queried if t.get("name") == INPUT_NAME), None)
    if entry is None:
        why = seen.failure or "the runtime reported no input attributes"
        return UNOBSERVED, f"no queried attributes for input {INPUT_NAME!r} ({why})"
    width = seen.case.params["shape"][-1]
    stride = entry["w_stride"] or width  # the runtime reports 0 for "the width itself"
    observed = (
        f"rknn_query: {entry['name']} {entry['format']} {tuple(entry['native_shape'])}, "
        f"w_stride {entry['w_stride']}, size_with_stride {entry['size_with_stride']}: "
        f"stride {stride}"
    )
    return ("confirmed" if stride == expect.value else "doc-drift"), observed


def _missing(tensor: str, seen: Seen) -> str:
    return f"no Feature Tensor entry for {tensor!r} ({seen.failure or 'not in the build log'})"


def _output_entry(seen: Seen) -> tuple[dict[str, Any] | None, str]:
    entry = _tensor(seen, OUTPUT_NAME)
    if entry is None or not entry.get("native_shape"):
        return None, _missing(OUTPUT_NAME, seen)
    size = _sizes(seen.observation.log).get(OUTPUT_NAME)
    text = f"{OUTPUT_NAME} {entry['format']} {tuple(entry['native_shape'])}, {size} bytes"
    return entry, f"{text}; last layer {_last_compute_layer(seen)}"


def _nc1hwc2_size(expect: Expect, seen: Seen) -> Outcome:
    entry, observed = _output_entry(seen)
    if entry is None or entry["format"] != "NC1HWC2":
        return UNOBSERVED, observed
    size = _sizes(seen.observation.log).get(OUTPUT_NAME)
    return ("confirmed" if size == expect.value else "doc-drift"), observed


def _nc1hwc2_c2(expect: Expect, seen: Seen) -> Outcome:
    """Decode, with the documented C2, the NC1HWC2 memory the compiler describes.

    The simulator returns NCHW; the native buffer is rebuilt from it with the native C2 and the
    channel planes the Size column shows, then read back by ``harness.vendors.rknn.model_io.layout``
    with the documented C2: a different element order scrambles the result.
    """
    entry, observed = _output_entry(seen)
    outputs = seen.observation.outputs
    if entry is None or entry["format"] != "NC1HWC2" or not outputs:
        return UNOBSERVED, observed
    c2_doc, hw_align = expect.value["c2"], expect.value["hw_align"]
    data = np.asarray(outputs[0])
    n, channels, height, width = data.shape
    c2 = entry["native_shape"][-1]
    plane = n * align_up(height * width, hw_align) * ITEMSIZE.get(entry["dtype"], 0)
    size = _sizes(seen.observation.log).get(OUTPUT_NAME)
    if size is None or not plane or size % plane or (size // plane) % c2:
        return UNOBSERVED, f"{observed}: no whole channel planes of C2 = {c2}"
    slots = size // plane
    observed += f"; native C2 {c2}, {slots // c2} plane(s) of {c2} channels"
    padded = np.pad(data, [(0, 0), (0, slots - channels), (0, 0), (0, 0)])
    native = pack_nc1hwc2(padded, "NCHW", c2, hw_align)
    try:
        decoded = unpack_nc1hwc2(native.ravel(), data.shape, "NCHW", c2_doc, hw_align)
    except LayoutError as exc:
        return "doc-drift", f"{observed}; decoding with C2 = {c2_doc} fails: {exc}"
    if np.array_equal(decoded, data):
        return "confirmed", f"{observed}; decoding with C2 = {c2_doc} gives the output back"
    return "doc-drift", f"{observed}; decoding with C2 = {c2_doc} scrambles the channels"


def _nhwc_channels(expect: Expect, seen: Seen) -> Outcome:
    """NPU-side NHWC forms of the output: tensors ``y``/``y_exSecondary*`` shaped N, H, W, C'."""
    height, width = seen.case.params["shape"][2:]
    forms = [
        t
        for t in seen.observation.tensors
        if t.get("source") != QUERIED_TENSOR  # the compiler's forms, not the runtime's bound buffer
        and str(t.get("name", "")).startswith(OUTPUT_NAME)
        and len(t.get("orig_shape") or []) == 4
        and list(t["orig_shape"][1:3]) == [height, width]
        and (t["name"] == OUTPUT_NAME or t["name"].startswith(f"{OUTPUT_NAME}_exSecondary"))
    ]
    if not forms:
        layer = _layer(seen, "OutputOperator")
        where = layer["target"] if layer else "an unknown target"
        return UNOBSERVED, (
            f"the compiled model offers no NPU-side NHWC form of the output (OutputOperator on "
            f"{where}); a runtime CPU conversion has no alignment (output note 1) and is not "
            f"observed by {seen.observation.backend}"
        )
    shown = ", ".join(f"{t['name']} {t['format']} {tuple(t['orig_shape'])}" for t in forms)
    matched = any(t["orig_shape"][3] == expect.value for t in forms)
    return ("confirmed" if matched else "doc-drift"), f"NHWC forms: {shown}"


def _undefine(expect: Expect, seen: Seen) -> Outcome:
    """A not-4-D output's format and native shape; a 4-D row (``value`` None) has nothing to
    compare: the compiled 4-D output is NC1HWC2 and the runtime reports UNDEFINE only on request.
    """
    entry, observed = _output_entry(seen)
    if entry is None:
        return UNOBSERVED, observed
    if expect.value is None:
        return UNOBSERVED, (
            f"{observed}: UNDEFINE is a format the runtime reports for a 4-D output; "
            f"{seen.observation.backend} cannot select it"
        )
    plain = entry["format"] == "UNDEFINED" and entry["native_shape"] == expect.value
    return ("confirmed" if plain else "doc-drift"), observed


_BUILD_LOG = "the compiled model's Feature Tensor table (host build log)"
OBSERVERS = {
    WIDTH_LIMIT: Observer(
        _width_limit, "the compiled model's layer table (host build log)", PLACEMENT_PHASE
    ),
    INPUT_STRIDE: Observer(_input_stride, _BUILD_LOG, LAYOUT_PHASE),
    W_STRIDE: Observer(
        _w_stride,
        "w_stride is a zero-copy runtime attribute (rknn_query of the input attributes), "
        "queried only by a board's C runner",
        LAYOUT_PHASE,
    ),
    BACKEND: Observer(
        None,
        "where a runtime runs mean/scale/quant for the configured input type is not "
        "exercised: the simulator converts any input dtype itself before its own quantization "
        "(measured: identical outputs for uint8, int8, float16 and float32 feeds)",
        LAYOUT_PHASE,
    ),
    NC1HWC2_SIZE: Observer(_nc1hwc2_size, _BUILD_LOG, LAYOUT_PHASE),
    NC1HWC2_C2: Observer(_nc1hwc2_c2, _BUILD_LOG, LAYOUT_PHASE),
    NHWC_CHANNELS: Observer(_nhwc_channels, _BUILD_LOG, LAYOUT_PHASE),
    NCHW_OUTPUT: Observer(
        None,
        "an NCHW output is converted by the runtime and its size queried through the "
        "zero-copy API (output note 3); no observer reads it yet",
        LAYOUT_PHASE,
    ),
    UNDEFINE_OUTPUT: Observer(_undefine, _BUILD_LOG, LAYOUT_PHASE),
}
# The judge of cases run on Rockchip targets: the generic observers plus these.
JUDGE = Judge({**GENERIC_OBSERVERS, **OBSERVERS})
