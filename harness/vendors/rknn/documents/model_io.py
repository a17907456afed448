"""RKNN2 model input/output limitations (seed 003): zero-copy alignment and convolution widths.

The YAML keeps the vendor's cell texts verbatim; this module parses them with strict patterns,
so a formula or an "aligned to" cell exists in exactly one place, the transcription.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.documented.limits import Limit
from harness.names import suggestion
from harness.safe_yaml import DataFileError, key_path, load_validated
from harness.vendors.rknn import DATA_DIR

DEFAULT_PATH = DATA_DIR / "rknn2-2.5.0" / "model-io.yaml"
SCHEMA_PATH = DATA_DIR / "model-io.schema.yaml"

# Table vocabulary (the schema pins these spellings).
UNRESTRICTED = "Unrestricted"
OTHER_TYPES = "Other types (input alignment may change)"
_INPUT_DIMS = {True: "4", False: "Not 4-dimensional"}
_OUTPUT_DIMS = {True: "4", False: "Not 4D"}

_POSITIVE = r"[1-9]\d*"  # a zero factor, cap, divisor or alignment would make a rule meaningless
_PRODUCT = re.compile(rf"^width \* dilation_kernel_h (?P<op><=?) (?P<value>{_POSITIVE}) \* N$")
_WIDTH = re.compile(rf"^width (?P<op><=?) (?P<value>{_POSITIVE})$")
_N = re.compile(  # the MAX( ..., floor) wrapper is optional: (?(max)...) closes it when present
    r"^N = (?P<base>\d+) - (?P<max>MAX\()?"
    rf"CEIL\(\(dilation_kernel_h \* dilation_kernel_w\) / (?P<divisor>{_POSITIVE})\)"
    r"(?(max), (?P<floor>\d+)\))$"
)
_N_RANGE = re.compile(r"N must be an integer from (?P<lo>\d+) to (?P<hi>\d+);")
_ALIGNED = re.compile(rf"^Aligned to (?P<value>{_POSITIVE})$")
_SPLIT = re.compile(
    rf"^Last layer convolution: aligned to (?P<conv>{_POSITIVE}); "
    rf"non-convolution: aligned to (?P<other>{_POSITIVE})$"
)
_DILATED = re.compile(
    r"^dilated_kernel_(?P<a>[hw]) = kernel_(?P=a) \* dilations_(?P=a) - dilations_(?P=a) \+ 1$"
)


class ModelIOError(LookupError):
    """A platform or a combination the document does not cover."""


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def dilated_kernel(kernel: int, dilation: int) -> int:
    """Special Notes: ``dilated_kernel = kernel * dilations - dilations + 1``."""
    return _positive("kernel", kernel) * _positive("dilation", dilation) - dilation + 1


@dataclass(frozen=True)
class Bound:
    """``lhs < value`` or ``lhs <= value`` (times N for the product bound), with its text."""

    text: str
    strict: bool
    value: int

    def allows(self, lhs: int, rhs: int) -> bool:
        return lhs < rhs if self.strict else lhs <= rhs

    def largest(self, per_width: int, rhs: int) -> int:
        """Largest width with ``width * per_width`` allowed against ``rhs``."""
        return (rhs - 1) // per_width if self.strict else rhs // per_width


@dataclass(frozen=True)
class NFormula:
    """``N = base - CEIL(kh*kw / divisor)`` or ``N = base - MAX(CEIL(kh*kw / divisor), floor)``."""

    conv_type: str
    label: str
    text: str
    base: int
    divisor: int
    floor: int | None

    def n(self, dilated_h: int, dilated_w: int) -> int:
        blocks = math.ceil(dilated_h * dilated_w / self.divisor)
        return self.base - (blocks if self.floor is None else max(blocks, self.floor))


@dataclass(frozen=True)
class WidthCondition:
    """A width-limit condition (A, B): both bounds must hold and N must lie in ``n_range``."""

    name: str
    product: Bound
    width: Bound
    n_formulas: Mapping[str, NFormula]
    n_range: tuple[int, int]
    source: str


@dataclass(frozen=True)
class InputRow:
    """One row of an input table; ``align``/``limit`` are (channel=1,3,4, other channels)."""

    id: str
    group: str
    precision: str
    dims: str
    input_type: str
    backend: str
    align: tuple[int, int]
    limit: tuple[str | None, str | None]
    source: str
    row: str


@dataclass(frozen=True)
class InputRule:
    """The input row that applies, resolved for one channel count."""

    id: str
    group: str
    precision: str
    input_type: str
    backend: str  # where mean/scale/quant run: NPU or CPU
    channels: int
    width_align: int
    width_limit: str | None  # condition name, None when "Unrestricted"
    source: str
    row: str


@dataclass(frozen=True)
class OutputRule:
    """One row of an output table."""

    id: str
    group: str
    precision: str
    dims: str
    layout: str
    align_conv: int | None
    align_other: int | None
    hw_align: int | None
    source: str
    row: str

    def channel_align(self, last_layer_conv: bool) -> int | None:
        """Channel alignment for a last layer that is (or is not) a convolution; None = none."""
        return self.align_conv if last_layer_conv else self.align_other


@dataclass(frozen=True)
class Group:
    id: str
    name: str
    targets: tuple[str, ...]
    inputs: tuple[InputRow, ...]
    outputs: tuple[OutputRule, ...]
    conditions: Mapping[str, WidthCondition]


@dataclass(frozen=True)
class ModelIO:
    """The loaded catalogue; lookups take a lowercase toolkit target such as ``rk3588``."""

    path: Path
    toolkit: str
    groups: tuple[Group, ...]
    listed_channels: frozenset[int]
    limit_items: tuple[Limit, ...]

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(t for g in self.groups for t in g.targets)

    def group(self, platform: str) -> Group:
        for group in self.groups:
            if platform in group.targets:
                return group
        raise ModelIOError(
            f"unknown platform {platform!r}; documented targets: {', '.join(self.targets)}"
            + suggestion(platform, self.targets)
        )

    def limits(self) -> list[Limit]:
        return list(self.limit_items)

    def inconsistencies(self) -> dict[str, str]:
        """Limit id -> why the document contradicts itself on it (catalogue ``inconsistent``)."""
        return {lim.id: lim.inconsistent for lim in self.limit_items if lim.inconsistent}

    def input_rule(
        self, platform: str, precision: str, input_type: str, channels: int, ndim: int = 4
    ) -> InputRule:
        """The input row for a first-layer precision and configured input type.

        Input types other than those the tables name (uint8, int8, float16) take the
        "Other types" row; ``input_type`` must be a canonical numeric numpy dtype name.
        """
        group = self.group(platform)
        _positive("channels", channels)
        _positive("ndim", ndim)
        self._check_precision(precision)
        if not _is_dtype_name(input_type):
            raise ValueError(
                f"input_type must be a numeric numpy dtype name such as 'uint8', got {input_type!r}"
            )
        named = {r.input_type for g in self.groups for r in g.inputs} - {OTHER_TYPES, UNRESTRICTED}
        wanted = input_type if input_type in named else OTHER_TYPES
        dims = _INPUT_DIMS[ndim == 4]
        for row in group.inputs:
            if (
                row.dims == dims
                and row.precision in (precision, UNRESTRICTED)
                and row.input_type in (wanted, UNRESTRICTED)
            ):
                column = 0 if channels in self.listed_channels else 1
                return InputRule(
                    row.id,
                    row.group,
                    precision,
                    input_type,
                    row.backend,
                    channels,
                    row.align[column],
                    row.limit[column],
                    row.source,
                    row.row,
                )
        raise ModelIOError(
            f"{platform} ({group.name}) documents no input row for first-layer precision "
            f"{precision!r}, input type {input_type!r}, {ndim}-D input; rows: "
            + "; ".join(r.row for r in group.inputs)
        )

    def output_rule(self, platform: str, precision: str, layout: str, ndim: int = 4) -> OutputRule:
        group = self.group(platform)
        _positive("ndim", ndim)
        self._check_precision(precision)
        dims = _OUTPUT_DIMS[ndim == 4]
        for row in group.outputs:
            if (
                row.dims == dims
                and row.precision in (precision, UNRESTRICTED)
                and row.layout == layout
            ):
                return row
        raise ModelIOError(
            f"{platform} ({group.name}) documents no output row for precision {precision!r}, "
            f"layout {layout!r}, {ndim}-D output; rows: " + "; ".join(r.row for r in group.outputs)
        )

    def _check_precision(self, precision: str) -> None:
        named = {r.precision for g in self.groups for r in g.inputs}
        named |= {r.precision for g in self.groups for r in g.outputs}
        named.discard(UNRESTRICTED)
        if precision not in named:
            raise ValueError(f"precision must be one of {sorted(named)}, got {precision!r}")


def _is_dtype_name(name: str) -> bool:
    """A canonical numeric dtype name: strings, records, objects and complex have no element
    size a tensor buffer can use (``str`` is 0 bytes, ``object`` a pointer)."""
    try:
        dtype = np.dtype(name)
    except TypeError:
        return False
    return dtype.name == name and dtype.kind in "biuf"


@functools.cache
def load_model_io(path: Path | None = None) -> ModelIO:
    """Load, validate and parse a model I/O catalogue (default: rknn-toolkit2 2.5.0); cached."""
    path = DEFAULT_PATH if path is None else path
    return _Reader(path, load_validated(path, SCHEMA_PATH)).model_io()


def _slug(cell: str) -> str:
    return {UNRESTRICTED: "any", OTHER_TYPES: "other"}.get(cell, cell)


def _dims_slug(cell: str) -> str:
    return "4d" if cell == "4" else "nd"


def _row(cells: list[object]) -> str:
    """The table row as the seed prints it."""
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


class _Reader:
    """Turns the validated document into a ModelIO; every semantic error names its key path."""

    def __init__(self, path: Path, doc: Any) -> None:
        self.path = path
        self.doc = doc
        self.limits: dict[str, Limit] = {}

    def fail(self, where: list[str | int], value: object, message: str) -> DataFileError:
        return DataFileError(self.path, key_path(where), value, message)

    def match(
        self, pattern: re.Pattern[str], text: str, where: list[str | int], like: str
    ) -> re.Match[str]:
        found = pattern.search(text)
        if found is None:
            raise self.fail(where, text, f"does not read like {like}")
        return found

    def source(self, section: str) -> str:
        return f"{self.doc['seed_file']}: {section}"

    def add(self, where: list[str | int], limit: Limit) -> None:
        if limit.id in self.limits:
            raise self.fail(where, limit.id, "duplicate limit id (the same row transcribed twice?)")
        self.limits[limit.id] = limit

    def model_io(self) -> ModelIO:
        for kind in ("input", "output"):
            notes = self.doc[f"{kind}_notes"]
            for i, text in enumerate(notes["texts"]):
                where: list[str | int] = [f"{kind}_notes", "texts", i]
                self.add(
                    where,
                    Limit(
                        f"notes/{kind}/{i + 1}",
                        kind="note",
                        text=text,
                        source=self.source(notes["source"]),
                    ),
                )
        dilated = self.doc["dilated_kernel"]
        axes = []
        for i, text in enumerate(dilated["formulas"]):
            where = ["dilated_kernel", "formulas", i]
            axis = self.match(
                _DILATED,
                text,
                where,
                "'dilated_kernel_h = kernel_h * dilations_h - dilations_h + 1'",
            )["a"]
            axes.append(axis)
            self.add(
                where,
                Limit(
                    f"special/dilated_kernel_{axis}",
                    "formula",
                    text,
                    self.source(dilated["source"]),
                ),
            )
        if sorted(axes) != ["h", "w"]:
            raise self.fail(
                ["dilated_kernel", "formulas"], axes, "need one formula for h and one for w"
            )
        seen: dict[str, str] = {}
        groups = tuple(
            self.group(raw, ["groups", gi], seen) for gi, raw in enumerate(self.doc["groups"])
        )
        return ModelIO(
            self.path,
            self.doc["toolkit"],
            groups,
            frozenset(self.doc["width_align_channels"]),
            tuple(self.limits.values()),
        )

    def group(self, raw: Any, at: list[str | int], seen: dict[str, str]) -> Group:
        for ti, target in enumerate(raw["targets"]):
            if target in seen:
                raise self.fail(
                    [*at, "targets", ti], target, f"target already belongs to group {seen[target]}"
                )
            seen[target] = raw["id"]
        conditions = self.conditions(raw, [*at, "convolution"])
        inputs = tuple(
            self.input_row(raw, row, [*at, "inputs", "rows", ri], conditions)
            for ri, row in enumerate(raw["inputs"]["rows"])
        )
        outputs = tuple(
            self.output_row(raw, row, [*at, "outputs", "rows", ri])
            for ri, row in enumerate(raw["outputs"]["rows"])
        )
        for ri, remark in enumerate(raw.get("remarks", [])):
            limit_id = f"{raw['id']}/remark/{ri + 1}"
            limit = Limit(
                limit_id,
                "remark",
                remark["text"],
                self.source(remark["source"]),
                group=raw["id"],
                inconsistent=remark.get("inconsistent"),
            )
            self.add([*at, "remarks", ri], limit)
        return Group(raw["id"], raw["name"], tuple(raw["targets"]), inputs, outputs, conditions)

    def conditions(self, raw: Any, at: list[str | int]) -> dict[str, WidthCondition]:
        conv, gid = raw["convolution"], raw["id"]
        source = self.source(conv["source"])
        found = self.match(
            _N_RANGE, conv["rule"], [*at, "rule"], "'N must be an integer from 1 to 7;'"
        )
        n_range = (int(found["lo"]), int(found["hi"]))
        self.add(
            [*at, "rule"], Limit(f"{gid}/conv/N-range", "n_range", conv["rule"], source, group=gid)
        )
        out: dict[str, WidthCondition] = {}
        for ci, cond in enumerate(conv["conditions"]):
            where: list[str | int] = [*at, "conditions", ci]
            name = cond["name"]
            if name in out:
                raise self.fail([*where, "name"], name, "condition listed twice")
            bounds = []
            for part, pattern, like in (
                ("product", _PRODUCT, "'width * dilation_kernel_h <= 2048 * N'"),
                ("width", _WIDTH, "'width <= 4096'"),
            ):
                found = self.match(pattern, cond[part], [*where, part], like)
                bounds.append(Bound(cond[part], found["op"] == "<", int(found["value"])))
                row = _row([f"{name} ({len(bounds)})", cond[part]])
                self.add(
                    [*where, part],
                    Limit(f"{gid}/conv/{name}/{len(bounds)}", "condition", row, source, group=gid),
                )
            formulas: dict[str, NFormula] = {}
            for fi, item in enumerate(cond["n"]):
                fwhere: list[str | int] = [*where, "n", fi]
                conv_type, text = item["conv_type"], item["formula"]
                if conv_type in formulas:
                    raise self.fail(
                        [*fwhere, "conv_type"], conv_type, "convolution type listed twice"
                    )
                like = "'N = 8 - MAX(CEIL((dilation_kernel_h * dilation_kernel_w) / 128), 2)'"
                found = self.match(_N, text, [*fwhere, "formula"], like)
                divisor = int(found["divisor"])
                floor = None if found["floor"] is None else int(found["floor"])
                formulas[conv_type] = NFormula(
                    conv_type, item["label"], text, int(found["base"]), divisor, floor
                )
                row = _row([f"{name} / {item['label']}", text])
                limit_id = f"{gid}/conv/{name}/{conv_type}/N"
                reason = item.get("inconsistent")
                self.add(
                    fwhere,
                    Limit(limit_id, "n_formula", row, source, group=gid, inconsistent=reason),
                )
            out[name] = WidthCondition(name, bounds[0], bounds[1], formulas, n_range, source)
        return out

    def input_row(
        self, group: Any, raw: Any, at: list[str | int], conditions: Mapping[str, WidthCondition]
    ) -> InputRow:
        align, limit = raw["width_align"], raw["width_limit"]
        limits: list[str | None] = []
        for column in ("channels_1_3_4", "other_channels"):
            name = limit[column]
            if name != UNRESTRICTED and name not in conditions:
                raise self.fail(
                    [*at, "width_limit", column],
                    name,
                    f"group {group['id']} has no condition {name}",
                )
            limits.append(None if name == UNRESTRICTED else name)
        cells = [raw[k] for k in ("precision", "dims", "input_type", "backend")]
        cells += [
            align["channels_1_3_4"],
            align["other_channels"],
            limit["channels_1_3_4"],
            limit["other_channels"],
        ]
        gid = group["id"]
        slugs = (_slug(raw["precision"]), _slug(raw["input_type"]), _dims_slug(raw["dims"]))
        limit_id = f"{gid}/input/" + "/".join(slugs)
        row = InputRow(
            limit_id,
            group["name"],
            raw["precision"],
            raw["dims"],
            raw["input_type"],
            raw["backend"],
            (align["channels_1_3_4"], align["other_channels"]),
            (limits[0], limits[1]),
            self.source(group["inputs"]["source"]),
            _row([group["name"], *cells]),
        )
        self.add(at, Limit(limit_id, "input", row.row, row.source, group=gid))
        return row

    def output_row(self, group: Any, raw: Any, at: list[str | int]) -> OutputRule:
        channel, hw = raw["channel_align"], raw["hw_align"]
        split = _SPLIT.search(channel)
        conv_align: int | None
        other_align: int | None
        if split:
            conv_align, other_align = int(split["conv"]), int(split["other"])
        else:
            conv_align = other_align = self.aligned(channel, [*at, "channel_align"])
        gid = group["id"]
        limit_id = (
            f"{gid}/output/{_slug(raw['precision'])}/{raw['layout']}/{_dims_slug(raw['dims'])}"
        )
        cells = [group["name"], raw["precision"], raw["dims"], raw["layout"], channel, hw]
        rule = OutputRule(
            limit_id,
            group["name"],
            raw["precision"],
            raw["dims"],
            raw["layout"],
            conv_align,
            other_align,
            self.aligned(hw, [*at, "hw_align"]),
            self.source(group["outputs"]["source"]),
            _row(cells),
        )
        self.add(at, Limit(limit_id, "output", rule.row, rule.source, group=gid))
        return rule

    def aligned(self, text: str, where: list[str | int]) -> int | None:
        """``None`` or ``Aligned to N``."""
        if text == "None":
            return None
        found = self.match(
            _ALIGNED, text, where, "'None', 'Aligned to 8' or 'Last layer convolution: ...'"
        )
        return int(found["value"])
