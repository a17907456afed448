"""Cases from the model I/O catalogue (seed 003): input rows, convolution widths, output rows.

Every case is an ordinary :class:`harness.cases.case.Case` of an I/O model
(``harness.vendors.rknn.model_io.models``) carrying the documented expectations it probes, one per
property of ``harness.vendors.rknn.documents.properties``. Representative values, not sweeps:

- input rows: per row, a 3x3 first-layer Convolution (1-D for a not-4-D row) fed the row's
  input type (``float32`` stands for "Other types" and "Unrestricted"); channel 3 at width
  32 (aligned to every documented alignment), 33 (its stride tells 4, 8, 16 and 32 apart), the
  largest width of the row's condition and one more; channels 1 and 4 at width 33; channel 5
  (an unrestricted count) at 33 and beyond the condition's width.
- convolution widths: per condition and convolution type, kernels 1x1 and 3x3 and dilated
  3x3 kernels (dilated size 2d+1) at the edges of N's range: where N enters 1..7 from above,
  the last with N = 1, the first with N = 0; each at its largest width and one more (the
  bound that binds decides whether that is the product or the absolute width cap), N < 1
  kernels at one width. Widths are computed with the formula's N even where N leaves its
  range, so a platform whose small kernels give N = 9 (RK3588) is probed at the widths the
  formula would allow. Plus channel 5 beyond the width (documented "Unrestricted").
- output rows: per precision, a 1x1 convolution to 3 or 20 channels on 3x7 (H*W = 21), with
  the convolution last or an Add after it; one case covers every 4-D row of its precision.
  A Reshape to 3-D covers the "Not 4D" row.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from harness.cases.case import Case, Expect, case_seed
from harness.documented.properties import PRECISION, RESULT
from harness.layout.align import align_up
from harness.vendors.rknn.documents.model_io import (
    OTHER_TYPES,
    UNRESTRICTED,
    Group,
    InputRow,
    ModelIO,
    OutputRule,
    WidthCondition,
    dilated_kernel,
    load_model_io,
)
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
from harness.vendors.rknn.model_io.layout import input_stride, output_layout
from harness.vendors.rknn.model_io.models import CONV_TYPES

FIRST_CONV = "FirstConv"
CONV_OUTPUT = "ConvOutput"
ALL_PLATFORMS = "all"

# Representative values (see the module docstring).
LISTED_PROBE = 3
OTHER_CHANNELS = 5
ALIGNED_WIDTH = 32
UNALIGNED_WIDTH = 33
INPUT_HEIGHT = 3
INPUT_KERNEL = 3
CONV_OUT_CHANNELS = 4
FED_TYPE = {OTHER_TYPES: "float32", UNRESTRICTED: "float32"}
OUTPUT_SHAPES = ((3, 3, 7), (20, 3, 7))  # C, H, W
OUTPUT_IN_CHANNELS = 8
MAX_DILATION = 128  # N-edge search over dilated 3x3 kernels up to 257
# Row kinds a report lists, ranked in the seed's order (a condition's bounds and N formulas
# together).
_SEED_ORDER = {"input": 0, "n_range": 1, "condition": 2, "n_formula": 2, "output": 3}
_SECTION = {"title": "Model I/O", "document": "seed 003"}  # the report's section of its rows


def result_expect(limits: tuple[str, ...], how: str) -> Expect:
    return Expect(RESULT, limits, f"the output matches the host reference ({how})")


# -- widths of a convolution condition -------------------------------------------------------


@dataclass(frozen=True)
class WidthRule:
    """A condition applied to one convolution: N, its bounds and the limit ids involved."""

    group: str
    condition: WidthCondition
    conv_type: str
    dilated: tuple[int, int]  # dilated kernel h, w

    @property
    def n(self) -> int:
        return self.condition.n_formulas[self.conv_type].n(*self.dilated)

    @property
    def n_in_range(self) -> bool:
        lo, hi = self.condition.n_range
        return lo <= self.n <= hi

    def ids(self) -> dict[str, str]:
        name = self.condition.name
        return {
            "product": f"{self.group}/conv/{name}/1",
            "cap": f"{self.group}/conv/{name}/2",
            "n": f"{self.group}/conv/{name}/{self.conv_type}/N",
            "range": f"{self.group}/conv/N-range",
        }

    def largest(self) -> tuple[int, str]:
        """Largest width the bounds allow with the formula's N, and the bound that binds."""
        cond = self.condition
        product = cond.product.largest(self.dilated[0], cond.product.value * self.n)
        cap = cond.width.largest(1, cond.width.value)
        return (product, "product") if product < cap else (cap, "cap")

    def broken(self, width: int) -> tuple[str, ...]:
        cond, ids = self.condition, self.ids()
        broken = [] if self.n_in_range else [ids["range"]]
        if not cond.product.allows(width * self.dilated[0], cond.product.value * self.n):
            broken.append(ids["product"])
        if not cond.width.allows(width, cond.width.value):
            broken.append(ids["cap"])
        return tuple(broken)

    def describe(self, width: int) -> str:
        formula = self.condition.n_formulas[self.conv_type]
        largest, _ = self.largest()
        text = (
            f"condition {self.condition.name}, {formula.label}, dilated kernel "
            f"{self.dilated[0]}x{self.dilated[1]}: {formula.text} -> N = {self.n}"
        )
        if not self.n_in_range:
            lo, hi = self.condition.n_range
            return f"{text}, outside {lo}..{hi}: unsupported at any width"
        bounds = f"'{self.condition.product.text}', '{self.condition.width.text}'"
        verdict = "inside" if not self.broken(width) else "outside"
        return f"{text}; {bounds}: largest width {largest}, width {width} is {verdict}"


def _probe_widths(rule: WidthRule) -> tuple[list[int], str]:
    """Widths probing ``rule`` and the limit id they probe."""
    ids = rule.ids()
    if rule.n < 1:
        return [rule.dilated[1] + 1], ids["range"]
    largest, bound = rule.largest()
    return [largest, largest + 1], ids[bound] if rule.n_in_range else ids["range"]


def _edge_dilations(rule: WidthRule) -> list[int]:
    """Dilations of a 3x3 kernel at the edges of N's range (nearest odd dilated sizes)."""

    def n_of(d: int) -> int:
        size = dilated_kernel(3, d)
        return replace(rule, dilated=(size, size)).n

    lo, hi = rule.condition.n_range
    ns = {d: n_of(d) for d in range(1, MAX_DILATION + 1)}
    found = []
    if ns[1] > hi:
        found.append(next((d for d, n in ns.items() if n <= hi), None))
    found.append(max((d for d, n in ns.items() if n >= lo), default=None))
    found.append(next((d for d, n in ns.items() if n < lo), None))
    return sorted({d for d in found if d is not None and d > 1})


# -- the generator ---------------------------------------------------------------------------


def _source(text: str, source: str) -> dict[str, str]:
    seed, _, section = source.partition(": ")
    return {"seed": seed, "section": section, "text": text}


def _case(
    platform: str,
    case_id: str,
    op: str,
    dtype: str,
    limits: tuple[str, ...],
    value: str,
    broken: tuple[str, ...],
    params: dict[str, Any],
    source: dict[str, str],
    layer_types: tuple[str, ...],
    expects: tuple[Expect, ...],
) -> Case:
    """The case, its expectations naming the document's contradictions they rest on, plus the
    precision an int8 case asks for."""
    full_id = f"{platform}/{case_id}"
    if dtype == "int8":
        asked = "the layers under test run in int8, as the first-layer precision asks"
        expects = (*expects, Expect(PRECISION, limits, asked, "int8"))
    marked = load_model_io().inconsistencies()
    expects = tuple(
        replace(
            e,
            inconsistent=tuple(
                f"{i}: {marked[i]}" for i in dict.fromkeys((*e.limits, *broken)) if i in marked
            ),
        )
        for e in expects
    )
    return Case(
        id=full_id,
        platform=platform,
        op=op,
        dtype=dtype,
        limit=limits[0],
        value=value,
        documented="outside" if broken else "supported",
        params=params,
        seed=case_seed(full_id),
        source=source,
        layer_types=layer_types,
        limits=limits,
        outside_because=broken,
        expects=expects,
    )


LAYER_TYPES = {
    "Convolution": ("Conv",),
    "DepthwiseConvolution": ("Conv",),
    "ConvTranspose": ("ConvTranspose", "Deconvolution"),
}


def _precisions(group: Group) -> list[str]:
    named = [r.precision for r in group.inputs] + [r.precision for r in group.outputs]
    return sorted({p for p in named if p != UNRESTRICTED})


def _first_conv_params(
    shape: list[int], w_stride: int, input_type: str = "float32", **conv: Any
) -> dict[str, Any]:
    spatial = len(shape) - 2
    params: dict[str, Any] = {
        "shape": shape,
        "conv_type": "Convolution",
        "kernel": [INPUT_KERNEL] * spatial,
        "dilation": [1] * spatial,
        "out_channels": CONV_OUT_CHANNELS,
        "input_type": input_type,
        "w_stride": w_stride,
    }
    return params | conv


def _doc_stride(
    model_io: ModelIO, platform: str, precision: str, input_type: str, shape: list[int]
) -> tuple[int, int]:
    """(width alignment, w_stride) the documentation gives an input of ``shape``."""
    if len(shape) == 4:
        found = input_stride(platform, precision, input_type, shape, "NHWC", model_io=model_io)
        return found.align, found.w_stride
    rule = model_io.input_rule(platform, precision, input_type, shape[1], ndim=len(shape))
    return rule.width_align, align_up(shape[-1], rule.width_align)


def _input_cases(model_io: ModelIO, platform: str, group: Group) -> Iterator[Case]:
    for row in group.inputs:
        precisions = [row.precision] if row.precision != UNRESTRICTED else _precisions(group)
        for precision in precisions:
            yield from _input_row_cases(model_io, platform, group, row, precision)


def _input_row_cases(
    model_io: ModelIO, platform: str, group: Group, row: InputRow, precision: str
) -> Iterator[Case]:
    input_type = FED_TYPE.get(row.input_type, row.input_type)
    four_d = row.dims == "4"
    kernel_h = INPUT_KERNEL if four_d else 1
    listed_limit = row.limit[0]
    beyond: list[int] = []
    rule = None
    if listed_limit is not None:
        rule = WidthRule(
            group.id,
            group.conditions[listed_limit],
            "Convolution",
            (kernel_h, INPUT_KERNEL),
        )
        beyond, _ = _probe_widths(rule)
    plan = [(LISTED_PROBE, [ALIGNED_WIDTH, UNALIGNED_WIDTH, *beyond])]
    if four_d:
        plan += [(1, [UNALIGNED_WIDTH]), (4, [UNALIGNED_WIDTH])]
    plan.append((OTHER_CHANNELS, [UNALIGNED_WIDTH, *beyond[1:]]))
    for channels, widths in plan:
        for width in widths:
            shape = [1, channels, INPUT_HEIGHT, width] if four_d else [1, channels, width]
            resolved = model_io.input_rule(platform, precision, input_type, channels, len(shape))
            assert resolved.id == row.id, f"{row.id} is shadowed by {resolved.id}"
            yield _input_case(
                model_io, platform, row, precision, input_type, shape, resolved.width_limit, rule
            )


def _input_case(
    model_io: ModelIO,
    platform: str,
    row: InputRow,
    precision: str,
    input_type: str,
    shape: list[int],
    limit: str | None,
    rule: WidthRule | None,
) -> Case:
    channels, width = shape[1], shape[-1]
    align, w_stride = _doc_stride(model_io, platform, precision, input_type, shape)
    column = "channel=1,3,4" if channels in model_io.listed_channels else "channel≠1,3,4"
    stride_text = f"width alignment {align} ({column}): w_stride {w_stride} for width {width}"
    if limit is None or rule is None:
        broken: tuple[str, ...] = ()
        width_ids: tuple[str, ...] = (row.id,)
        width_text = f"width limit Unrestricted ({column})"
    else:
        broken = rule.broken(width)
        ids = rule.ids()
        width_ids = (row.id, ids["product"], ids["cap"], ids["n"])
        width_text = rule.describe(width)
    expects = (
        Expect(INPUT_STRIDE, (row.id,), stride_text, w_stride),
        Expect(W_STRIDE, (row.id,), stride_text, w_stride),
        Expect(
            BACKEND,
            (row.id,),
            f"{row.backend} (input type {input_type})",
            row.backend,
        ),
        Expect(WIDTH_LIMIT, width_ids, width_text, not broken),
        result_expect((row.id,), "data read back from the zero-copy buffer"),
    )
    dims = "4d" if len(shape) == 4 else "nd"
    return _case(
        platform,
        f"input/{precision}/{input_type}/{dims}/c{channels}/w{width}",
        FIRST_CONV,
        precision,
        (row.id, *[i for i in width_ids[1:] if i in broken]),
        f"c={channels} w={width}",
        broken,
        _first_conv_params(shape, w_stride, input_type),
        _source(row.row, row.source),
        LAYER_TYPES["Convolution"],
        expects,
    )


def _conv_cases(model_io: ModelIO, platform: str, group: Group) -> Iterator[Case]:
    for name, condition in group.conditions.items():
        for row in _condition_rows(group, name):
            fed = FED_TYPE.get(row.input_type, row.input_type)
            for conv_type in CONV_TYPES:
                base = WidthRule(group.id, condition, conv_type, (1, 1))
                for kernel, dilation in _kernels(base):
                    size = dilated_kernel(kernel, dilation)
                    rule = replace(base, dilated=(size, size))
                    widths, probed = _probe_widths(rule)
                    for width in widths:
                        yield _conv_case(
                            model_io, platform, row, fed, rule, (kernel, dilation), width, probed
                        )
            yield _unrestricted_case(model_io, platform, group, row, fed, condition)


def _condition_rows(group: Group, name: str) -> list[InputRow]:
    """Per first-layer precision, the first 4-D input row whose listed channels use ``name``."""
    rows: dict[str, InputRow] = {}
    for row in group.inputs:
        if row.dims == "4" and row.limit[0] == name and row.precision != UNRESTRICTED:
            rows.setdefault(row.precision, row)
    return list(rows.values())


def _kernels(base: WidthRule) -> list[tuple[int, int]]:
    """(kernel, dilation) of the square kernels probed: 1x1, 3x3 and N-edge dilated 3x3."""
    edges = _edge_dilations(replace(base, dilated=(3, 3)))
    return [(1, 1), (3, 1), *[(3, d) for d in edges]]


def _conv_case(
    model_io: ModelIO,
    platform: str,
    row: InputRow,
    input_type: str,
    rule: WidthRule,
    kernel: tuple[int, int],
    width: int,
    probed: str,
) -> Case:
    size, dilation = kernel
    ids = rule.ids()
    broken = rule.broken(width)
    limits = (probed, ids["n"], *[i for i in broken if i != probed])
    out = LISTED_PROBE if rule.conv_type == "DepthwiseConvolution" else CONV_OUT_CHANNELS
    shape = [1, LISTED_PROBE, max(rule.dilated[0], 2), width]
    _, w_stride = _doc_stride(model_io, platform, row.precision, input_type, shape)
    params = _first_conv_params(
        shape,
        w_stride,
        input_type,
        conv_type=rule.conv_type,
        kernel=[size, size],
        dilation=[dilation, dilation],
        out_channels=out,
    )
    expects = (
        Expect(WIDTH_LIMIT, limits, rule.describe(width), not broken),
        result_expect(limits, "the convolution at this width"),
    )
    return _case(
        platform,
        f"conv/{rule.condition.name}/{rule.conv_type}/k{size}d{dilation}/w{width}",
        FIRST_CONV,
        row.precision,
        limits,
        f"dilated {rule.dilated[0]}x{rule.dilated[1]} N={rule.n} w={width}",
        broken,
        params,
        _source(rule.condition.n_formulas[rule.conv_type].text, rule.condition.source),
        LAYER_TYPES[rule.conv_type],
        expects,
    )


def _unrestricted_case(
    model_io: ModelIO,
    platform: str,
    group: Group,
    row: InputRow,
    input_type: str,
    condition: WidthCondition,
) -> Case:
    """Channel 5 beyond the condition's 3x3 width: the row says "Unrestricted" for it."""
    rule = WidthRule(group.id, condition, "Convolution", (INPUT_KERNEL, INPUT_KERNEL))
    width = rule.largest()[0] + 1
    shape = [1, OTHER_CHANNELS, INPUT_HEIGHT, width]
    _, w_stride = _doc_stride(model_io, platform, row.precision, input_type, shape)
    text = (
        f"width limit Unrestricted (channel≠1,3,4), although width {width} is beyond "
        f"condition {condition.name} for channel=1,3,4"
    )
    expects = (
        Expect(WIDTH_LIMIT, (row.id,), text, True),
        result_expect((row.id,), "the convolution at this width"),
    )
    return _case(
        platform,
        f"conv/{condition.name}/unrestricted/c{OTHER_CHANNELS}/w{width}",
        FIRST_CONV,
        row.precision,
        (row.id,),
        f"c={OTHER_CHANNELS} w={width}",
        (),
        _first_conv_params(shape, w_stride, input_type),
        _source(row.row, row.source),
        LAYER_TYPES["Convolution"],
        expects,
    )


def _output_cases(model_io: ModelIO, platform: str, group: Group) -> Iterator[Case]:
    for precision in _precisions(group):
        rows = [r for r in group.outputs if r.precision == precision and r.dims == "4"]
        for last in ("Conv", "Add") if rows else ():
            for dims in OUTPUT_SHAPES:
                yield _output_case(model_io, platform, precision, rows, last, dims)
        flat = [
            r for r in group.outputs if r.dims != "4" and r.precision in (precision, UNRESTRICTED)
        ]
        if flat:
            yield _flat_output_case(platform, precision, flat[0], OUTPUT_SHAPES[0])


def _output_params(shape: tuple[int, int, int], last: str) -> dict[str, Any]:
    channels, height, width = shape
    return {
        "shape": [1, OUTPUT_IN_CHANNELS, height, width],
        "out_channels": channels,
        "last_layer": last,
    }


def _output_expect(
    model_io: ModelIO, platform: str, rule: OutputRule, shape: list[int], last_conv: bool
) -> Iterator[Expect]:
    ids = (rule.id,)
    if rule.layout in ("NCHW", "UNDEFINE"):
        prop = NCHW_OUTPUT if rule.layout == "NCHW" else UNDEFINE_OUTPUT
        yield Expect(prop, ids, f"{rule.layout}: no alignment")
        return
    found = output_layout(
        platform, rule.precision, rule.layout, shape, last_conv, model_io=model_io
    )
    kind = "convolution" if last_conv else "non-convolution"
    if rule.layout == "NHWC":
        channels = found.native_shape[3]
        align = "none" if found.channel_align is None else found.channel_align
        text = f"NHWC channel alignment {align}: {shape[1]} channels -> {channels}"
        yield Expect(NHWC_CHANNELS, ids, text, channels)
        return
    text = (
        f"NC1HWC2, last layer {kind}: channels aligned to {found.channel_align}, H*W aligned "
        f"to {found.hw_align}: buffer {found.buffer_shape} = {found.size_with_stride} bytes"
    )
    yield Expect(NC1HWC2_SIZE, ids, text, found.size_with_stride)
    yield Expect(
        NC1HWC2_C2,
        ids,
        f"C2 = {found.channel_align} (the channel alignment, as "
        "harness.vendors.rknn.model_io.layout decodes it)",
        {"c2": found.channel_align, "hw_align": found.hw_align},
    )


def _output_case(
    model_io: ModelIO,
    platform: str,
    precision: str,
    rows: list[OutputRule],
    last: str,
    dims: tuple[int, int, int],
) -> Case:
    shape = [1, *dims]
    ids = tuple(r.id for r in rows)
    expects = [
        e for r in rows for e in _output_expect(model_io, platform, r, shape, last == "Conv")
    ]
    expects.append(result_expect(ids, "the NCHW output"))
    channels, height, width = dims
    return _case(
        platform,
        f"output/{precision}/4d/{last}/c{channels}-{height}x{width}",
        CONV_OUTPUT,
        precision,
        ids,
        f"last {last} c={channels} h*w={height * width}",
        (),
        _output_params(dims, last),
        _source(rows[0].row, rows[0].source),
        (last,),
        tuple(expects),
    )


def _flat_output_case(
    platform: str, precision: str, rule: OutputRule, dims: tuple[int, int, int]
) -> Case:
    channels, height, width = dims
    shape = [1, channels, height * width]
    expects = (
        Expect(UNDEFINE_OUTPUT, (rule.id,), f"UNDEFINE, no alignment: native shape {shape}", shape),
        result_expect((rule.id,), "the not-4-D output"),
    )
    return _case(
        platform,
        f"output/{precision}/nd/Reshape/c{channels}-{height * width}",
        CONV_OUTPUT,
        precision,
        (rule.id,),
        f"last Reshape shape={shape}",
        (),
        _output_params(dims, "Reshape"),
        _source(rule.row, rule.source),
        ("Reshape",),
        expects,
    )


# -- the public entry points -----------------------------------------------------------------


@functools.cache
def platform_cases(platform: str) -> dict[str, Case]:
    """Every I/O case of one toolkit target, by id, in generation order."""
    model_io = load_model_io()
    group = model_io.group(platform)
    cases = [
        *_input_cases(model_io, platform, group),
        *_conv_cases(model_io, platform, group),
        *_output_cases(model_io, platform, group),
    ]
    found = {case.id: case for case in cases}
    if len(found) != len(cases):
        raise AssertionError(f"{platform}: duplicate I/O case ids")
    return found


def model_io_cases(platform: str) -> list[Case]:
    """The I/O cases of ``platform``, or of every documented target for ``"all"``."""
    targets = load_model_io().targets if platform == ALL_PLATFORMS else (platform,)
    return [case for target in targets for case in platform_cases(target).values()]


def documented_rows(platform: str) -> list[dict[str, Any]]:
    """The seed-003 rows a report lists, per platform group of ``platform`` (every group for
    ``"all"``): ``{"title", "document", "group", "targets", "rows": [{"limit", "kind",
    "text"}]}``, rows in the seed's order. Written into the run's metadata
    (``Vendor.documented``), so reports need no catalogue."""
    model_io = load_model_io()
    groups = model_io.groups if platform == ALL_PLATFORMS else (model_io.group(platform),)
    found = []
    for group in groups:
        limits = [lim for lim in model_io.limits() if lim.group == group.id]
        ordered = sorted(
            (lim for lim in limits if lim.kind in _SEED_ORDER),
            key=lambda lim: _SEED_ORDER[lim.kind],
        )
        rows = [{"limit": lim.id, "kind": lim.kind, "text": lim.text} for lim in ordered]
        found.append(
            {**_SECTION, "group": group.name, "targets": list(group.targets), "rows": rows}
        )
    return found
