"""Model-I/O verdicts: each documented property of a case against what the simulator showed.

Every expectation of a case (``harness.vendors.rknn.io_cases``) becomes one check with a status:
one of the verdicts, or ``unobserved`` with the reason the simulator cannot see that property.
The case's verdict is the most severe observed status; unobserved checks never make a case pass
or fail, they stay in the record (``CaseRecord.checks``) so a report lists them.

| property             | observed as                                  | status                    |
|----------------------|----------------------------------------------|---------------------------|
| result               | simulator output vs host reference           | confirmed, wrong-result   |
| width limit          | conv layer target, compiler errors (rewrites | see ``_width_limit``      |
|                      | of the convolution node are reported)        |                           |
| input buffer stride  | compiled input tensor (Feature Tensor table) | confirmed, doc-drift      |
| NC1HWC2 buffer size  | output tensor Size column                    | confirmed, doc-drift      |
| NC1HWC2 C2           | native C2; decoding through harness.layout   | confirmed, doc-drift      |
| NHWC channels        | NPU-side NHWC output forms (exSecondary)     | confirmed, doc-drift, or  |
|                      |                                              | unobserved when none      |
| UNDEFINE (not 4-D)   | output tensor format and native shape        | confirmed, doc-drift      |
| w_stride, backend,   | nothing: runtime attributes                  | unobserved                |
| NCHW, UNDEFINE (4-D) |                                              |                           |

A documented layout value the compiler does not follow is ``doc-drift``: the document
misdescribes the memory a zero-copy user has to address.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from harness.cases.operators import Case
from harness.judge.compare import Comparison
from harness.judge.verdict import IO_LAYERS, Verdict, placement_of
from harness.layout.align import align_up
from harness.targets.observation import Observation
from harness.vendors.rknn import QUERIED_TENSOR
from harness.vendors.rknn.buildlog import parse_build_log, tensor_sizes
from harness.vendors.rknn.io_cases import (
    BACKEND,
    CONV_OUTPUT,
    FIRST_CONV,
    INPUT_STRIDE,
    NC1HWC2_C2,
    NC1HWC2_SIZE,
    NHWC_CHANNELS,
    RESULT,
    UNDEFINE_OUTPUT,
    WIDTH_LIMIT,
    Expect,
    probe_for,
)
from harness.vendors.rknn.io_models import CONV_NODE, INPUT_NAME, OUTPUT_NAME
from harness.vendors.rknn.layout import LayoutError, pack_nc1hwc2, unpack_nc1hwc2

UNOBSERVED = "unobserved"
# Most severe first: a case's verdict is the first of these any observed check has.
SEVERITY = ("infra-error", "wrong-result", "violation", "doc-drift", "limit-confirmed", "confirmed")
ITEMSIZE = {"INT8": 1, "UINT8": 1, "INT16": 2, "FLOAT16": 2, "FLOAT32": 4, "INT32": 4}
# Compiler "E" lines that say nothing about the convolution under test (rknn-toolkit2 2.5.0).
BENIGN_ERRORS = {
    "Unkown op target": "printed for layers the compiler places on the CPU (the Reshapes "
    "around a 1-D convolution); the build and the result are unaffected",
}
_REMOVED = re.compile(r"remove node = \[(.*?)\]")


@dataclass(frozen=True)
class Check:
    prop: str
    limits: tuple[str, ...]
    documented: str
    observed: str
    status: str  # a verdict, or UNOBSERVED

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["limits"] = list(self.limits)
        return data


@dataclass(frozen=True)
class Seen:
    """Everything an observer may look at for one case."""

    case: Case
    observation: Observation
    comparison: Comparison | None
    sizes: dict[str, int]
    errors: list[str]  # compiler errors that may concern the convolution
    failure: str | None  # the toolkit rejected the model: a failed stage or a compiler abort
    infra: str | None  # trouble that says nothing about the model

    def tensor(self, name: str) -> dict[str, Any] | None:
        """The build log's entry for ``name`` (entries queried on a board come after it)."""
        return next(
            (
                t
                for t in self.observation.tensors
                if t.get("name") == name and t.get("source") != QUERIED_TENSOR
            ),
            None,
        )

    def layer(self, op: str) -> dict[str, Any] | None:
        return next((x for x in self.observation.placement if x.get("op") == op), None)

    def last_compute_layer(self) -> str:
        compute = [x for x in self.observation.placement if x.get("op") not in IO_LAYERS]
        return f"{compute[-1]['op']} on {compute[-1]['target']}" if compute else "none listed"


Outcome = tuple[str, str]  # (status, observed text)
Observer = Callable[[Expect, Seen], Outcome]


def judge(case: Case, observation: Observation, comparison: Comparison | None) -> Verdict:
    """The verdict of a model-I/O case, with one check per documented property."""
    probe = probe_for(case)
    errors = _relevant_errors(parse_build_log(observation.log).errors)
    failure, infra = _failure(observation, errors)
    seen = Seen(
        case, observation, comparison, tensor_sizes(observation.log), errors, failure, infra
    )
    checks = [_check(expect, seen) for expect in probe.expects]
    return verdict_of(checks, infra)


def verdict_of(checks: list[Check], infra: str | None) -> Verdict:
    """The most severe observed check; infrastructure trouble overrides everything."""
    if infra:
        return Verdict("infra-error", infra, tuple(c.to_json() for c in checks))
    observed = [c for c in checks if c.status != UNOBSERVED]
    worst = min(observed, key=lambda c: SEVERITY.index(c.status))
    unobserved = [c.prop for c in checks if c.status == UNOBSERVED]
    detail = f"{worst.prop}: {worst.observed}"
    if unobserved:
        detail += f" (not observable on the simulator: {', '.join(unobserved)})"
    return Verdict(worst.status, detail, tuple(c.to_json() for c in checks))


def _check(expect: Expect, seen: Seen) -> Check:
    if expect.unobservable:
        status, observed = UNOBSERVED, expect.unobservable
        if expect.prop == BACKEND:
            observed += f"; compiled model: {_input_operator(seen)}"
    elif seen.infra:
        status, observed = "infra-error", seen.infra
    else:
        status, observed = OBSERVERS[expect.prop](expect, seen)
    return Check(expect.prop, expect.limits, expect.documented, observed, status)


def _relevant_errors(errors: list[str]) -> list[str]:
    """First lines of the compiler errors (a crash appends its traceback), benign ones left out."""
    firsts = [e.splitlines()[0] for e in errors if e.strip()]
    return [e for e in firsts if not any(benign in e for benign in BENIGN_ERRORS)]


def _input_operator(seen: Seen) -> str:
    layer = seen.layer("InputOperator")
    if layer is None:
        return "no InputOperator in the layer table"
    return f"InputOperator {layer['dtype']} on {layer['target']}"


def _failure(observation: Observation, errors: list[str]) -> tuple[str | None, str | None]:
    """(how the toolkit rejected the model, infrastructure trouble); either may be None.

    The compiler rejects some networks by aborting the process ("failed to tile argb mode
    layer!" then SIGABRT, measured on rv1103b and rk2118): a worker killed by SIGABRT after
    a compiler error is a failed build, not infrastructure trouble.
    """
    if observation.failed_stage:
        failed = f"{observation.failed_stage} failed: {observation.error or 'no message'}"
        return failed, observation.infra_error
    if observation.infra_error and "SIGABRT" in observation.infra_error and errors:
        return f"build aborted by the compiler after: {errors[-1]}", None
    return None, observation.infra_error


def _by_documentation(supported: bool) -> str:
    return "violation" if supported else "limit-confirmed"


# -- observers -------------------------------------------------------------------------------


def _result(expect: Expect, seen: Seen) -> Outcome:
    failed = seen.failure
    if failed:
        return _by_documentation(seen.case.documented == "supported"), failed
    if seen.comparison is None:
        return "infra-error", "the backend returned no outputs and reported no failure"
    status = "confirmed" if seen.comparison.passed else "wrong-result"
    return status, seen.comparison.detail


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
        return _by_documentation(supported), failed
    target, how = placement_of(seen.observation.placement, seen.case.layer_types)
    rewrites = [r.split(":", 1)[0] for r in seen.observation.rewrites if _replaces_conv(r)]
    facts = [how]
    if rewrites:
        facts.append(f"convolution replaced by the compiler ({', '.join(sorted(set(rewrites)))})")
    if seen.errors:
        facts.append(f"{len(seen.errors)} compiler error(s), e.g. {seen.errors[0]}")
    observed = "; ".join(facts)
    if target == "CPU" or seen.errors:
        return _by_documentation(supported), observed
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
    entry = seen.tensor(INPUT_NAME)
    if entry is None or not entry.get("native_shape"):
        return UNOBSERVED, _missing(INPUT_NAME, seen)
    shape = seen.case.params["shape"]
    native, fmt = entry["native_shape"], entry["format"]
    where = f"{INPUT_NAME} {fmt} {tuple(native)}"
    if len(shape) == 4 and fmt == "NC1HWC2" and native[-1] == shape[1]:
        size, itemsize = seen.sizes.get(INPUT_NAME), ITEMSIZE.get(entry["dtype"])
        per_row = shape[0] * shape[2] * shape[1] * (itemsize or 0)
        if size is None or not per_row or size % per_row:
            return UNOBSERVED, f"{where}: Size {size} gives no whole row stride"
        stride = size // per_row
        where += f" = {size} bytes, {shape[0] * shape[2]} rows of {stride} x {shape[1]}"
    else:
        stride = native[3] if fmt == "NC1HWC2" and len(native) == 5 else native[-1]
    observed = f"{where}: stride {stride}"
    return ("confirmed" if stride == expect.value else "doc-drift"), observed


def _missing(tensor: str, seen: Seen) -> str:
    return f"no Feature Tensor entry for {tensor!r} ({seen.failure or 'not in the build log'})"


def _output_entry(seen: Seen) -> tuple[dict[str, Any] | None, str]:
    entry = seen.tensor(OUTPUT_NAME)
    if entry is None or not entry.get("native_shape"):
        return None, _missing(OUTPUT_NAME, seen)
    size = seen.sizes.get(OUTPUT_NAME)
    text = f"{OUTPUT_NAME} {entry['format']} {tuple(entry['native_shape'])}, {size} bytes"
    return entry, f"{text}; last layer {seen.last_compute_layer()}"


def _nc1hwc2_size(expect: Expect, seen: Seen) -> Outcome:
    entry, observed = _output_entry(seen)
    if entry is None or entry["format"] != "NC1HWC2":
        return UNOBSERVED, observed
    size = seen.sizes.get(OUTPUT_NAME)
    return ("confirmed" if size == expect.value else "doc-drift"), observed


def _nc1hwc2_c2(expect: Expect, seen: Seen) -> Outcome:
    """Decode, with the documented C2, the NC1HWC2 memory the compiler describes.

    The simulator returns NCHW; the native buffer is rebuilt from it with the native C2 and
    the channel planes the Size column shows, then read back by ``harness.vendors.rknn.layout`` with
    the documented C2: a different element order scrambles the result.
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
    size = seen.sizes.get(OUTPUT_NAME)
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
        layer = seen.layer("OutputOperator")
        where = layer["target"] if layer else "an unknown target"
        return UNOBSERVED, (
            f"the compiled model offers no NPU-side NHWC form of the output (OutputOperator on "
            f"{where}); a runtime CPU conversion has no alignment (output note 1) and is not "
            "observable on the simulator"
        )
    shown = ", ".join(f"{t['name']} {t['format']} {tuple(t['orig_shape'])}" for t in forms)
    matched = any(t["orig_shape"][3] == expect.value for t in forms)
    return ("confirmed" if matched else "doc-drift"), f"NHWC forms: {shown}"


def _undefine(expect: Expect, seen: Seen) -> Outcome:
    entry, observed = _output_entry(seen)
    if entry is None:
        return UNOBSERVED, observed
    plain = entry["format"] == "UNDEFINED" and entry["native_shape"] == expect.value
    return ("confirmed" if plain else "doc-drift"), observed


OBSERVERS: dict[str, Observer] = {
    RESULT: _result,
    WIDTH_LIMIT: _width_limit,
    INPUT_STRIDE: _input_stride,
    NC1HWC2_SIZE: _nc1hwc2_size,
    NC1HWC2_C2: _nc1hwc2_c2,
    NHWC_CHANNELS: _nhwc_channels,
    UNDEFINE_OUTPUT: _undefine,
}
# The models whose cases this module judges (``harness.pipeline`` dispatches on Case.op).
JUDGES = {FIRST_CONV: judge, CONV_OUTPUT: judge}
