"""The model I/O catalogue against seed 003, read here independently of the loader.

The seed is parsed with simple table splitting and its formulas are evaluated as arithmetic
(``CEIL`` -> ceil, ``MAX`` -> max), unlike the loader's strict patterns, so a transcription or
parsing slip shows up as a disagreement. Hand-worked numbers carry their arithmetic.
"""

from __future__ import annotations

import copy
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.helpers import paths

from harness.safe_yaml import DataFileError, key_path
from harness.vendors.rknn.documents.model_io import (
    DEFAULT_PATH,
    ModelIOError,
    dilated_kernel,
    load_model_io,
)
from harness.vendors.rknn.model_io.cases import WidthRule

SEED = paths.ROOT / "docs" / "seeds" / "003_ab4f54387f9c3502.txt"
LINES = SEED.read_text(encoding="utf-8").splitlines()
OUT_AT = LINES.index("Model Output Limitations")
SPECIAL_AT = LINES.index("Special Notes")
MODEL = load_model_io()


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def is_row(line: str) -> bool:
    return line.startswith("| ") and not line.startswith(("| Platform", "| Condition"))


def sections(start: int, end: int, heading_marker: str) -> list[tuple[str, list[str]]]:
    """(heading, lines) per platform section; a heading is the line before ``heading_marker``."""
    starts = [i for i in range(start, end) if LINES[i + 1].startswith(heading_marker)]
    bounds = [*starts, end]
    return [(LINES[s], LINES[s + 1 : e]) for s, e in zip(starts, bounds[1:], strict=True)]


INPUT_SECTIONS = sections(0, OUT_AT, "Editable transcription")
OUTPUT_SECTIONS = sections(OUT_AT, SPECIAL_AT, "| Platform")


def seed_rows(kind: str) -> list[tuple[str, list[str]]]:
    """(section heading, cells) of every table row of one kind in the seed."""
    found = []
    for heading, body in INPUT_SECTIONS if kind != "output" else OUTPUT_SECTIONS:
        for line in filter(is_row, body):
            row = cells(line)
            if {"input": 9, "output": 6, "formula": 2}[kind] == len(row):
                found.append((heading, row))
    return found


def targets_of(platform_cell: str) -> list[str]:
    """``RK3566/RK3568`` -> the toolkit targets rk3566, rk3568."""
    return platform_cell.lower().split("/")


def evaluate(formula: str, **values: int) -> Any:
    """Evaluate a seed formula's right-hand side (or whole comparison) as Python."""
    text = formula.split(" = ", 1)[1] if formula.startswith("N = ") else formula
    text = text.replace("CEIL", "ceil").replace("MAX", "max")
    return eval(text, {"__builtins__": {}, "ceil": math.ceil, "max": max}, values)


# --- every input row ------------------------------------------------------------------------

INPUT_CASES = [
    pytest.param(heading, row, target, id=f"{target}-{'-'.join(row[1:4])}")
    for heading, row in seed_rows("input")
    for target in targets_of(row[0])
]


@pytest.mark.parametrize(("heading", "row", "target"), INPUT_CASES)
def test_input_row_reachable(heading: str, row: list[str], target: str) -> None:
    _, precision, dims, input_type, backend, align_134, align_other, limit_134, limit_other = row
    precisions = ["int8", "float16"] if precision == "Unrestricted" else [precision]
    ndims = [4] if dims == "4" else [2, 3, 5]
    types = {"Unrestricted": ["uint8", "float32"], "uint8": ["uint8"], "int8": ["int8"]}.get(
        input_type, ["float16"] if input_type == "float16" else ["float32", "int16", "uint16"]
    )
    for prec in precisions:
        for ndim in ndims:
            for typ in types:
                for channels, align, limit in [
                    *((c, align_134, limit_134) for c in (1, 3, 4)),
                    *((c, align_other, limit_other) for c in (2, 5, 16)),
                ]:
                    rule = MODEL.input_rule(target, prec, typ, channels, ndim)
                    assert rule.width_align == int(align)
                    assert rule.width_limit == (None if limit == "Unrestricted" else limit)
                    assert rule.backend == backend
                    assert rule.row == "| " + " | ".join(row) + " |"
                    assert rule.source.endswith(f"Model Input Limitations / {heading}")


# --- every output row -----------------------------------------------------------------------

OUTPUT_CASES = [
    pytest.param(row, target, id=f"{target}-{'-'.join(row[1:4])}")
    for _, row in seed_rows("output")
    for target in targets_of(row[0])
]


@pytest.mark.parametrize(("row", "target"), OUTPUT_CASES)
def test_output_row_reachable(row: list[str], target: str) -> None:
    _, precision, dims, layout, channel, hw = row
    numbers = [int(x) for x in re.findall(r"\d+", channel)]
    conv, other = {0: (None, None), 1: (*numbers, *numbers), 2: tuple(numbers)}[len(numbers)]
    hw_numbers = [int(x) for x in re.findall(r"\d+", hw)]
    for prec in ["int8", "float16"] if precision == "Unrestricted" else [precision]:
        for ndim in [4] if dims == "4" else [2, 3, 5]:
            rule = MODEL.output_rule(target, prec, layout, ndim)
            assert rule.channel_align(last_layer_conv=True) == conv
            assert rule.channel_align(last_layer_conv=False) == other
            assert rule.hw_align == (hw_numbers[0] if hw_numbers else None)
            assert rule.row == "| " + " | ".join(row) + " |"


# --- every formula row: N and the width conditions ------------------------------------------

KERNELS = [1, 2, 3, 7, 11, 12, 22, 23, 29, 30, 32, 33, 45, 46, 64, 65, 91, 92]
CONV_TYPES = {
    "Convolution": "Convolution",
    "Depthwise Convolution": "DepthwiseConvolution",
    "ConvTranspose/Deconvolution": "ConvTranspose",
}


def condition_tables() -> list[tuple[str, str, dict[str, str], tuple[int, int]]]:
    """(target, condition, {label: formula}, N range) per condition table in the seed."""
    tables = []
    for _, body in INPUT_SECTIONS:
        sentence = next(line for line in body if "N must be an integer" in line)
        lo, hi = map(int, re.findall(r"from (\d+) to (\d+)", sentence)[0])
        platform = next(cells(line)[0] for line in body if is_row(line) and len(cells(line)) == 9)
        by_condition: dict[str, dict[str, str]] = {}
        for line in body:
            if is_row(line) and len(cells(line)) == 2:
                label, formula = cells(line)
                by_condition.setdefault(label[0], {})[label[1:].strip(" /")] = formula
        for target in targets_of(platform):
            tables += [(target, cond, rows, (lo, hi)) for cond, rows in by_condition.items()]
    return tables


CONDITION_CASES = [pytest.param(*t, id=f"{t[0]}-{t[1]}") for t in condition_tables()]


@pytest.mark.parametrize(("target", "condition", "rows", "n_range"), CONDITION_CASES)
def test_condition_formulas(
    target: str, condition: str, rows: dict[str, str], n_range: tuple[int, int]
) -> None:
    conditions = MODEL.group(target).conditions
    assert conditions[condition].n_range == n_range
    for label, conv_type in CONV_TYPES.items():
        for kh in KERNELS:
            for kw in (1, 3, kh):
                for dilation in (1, 2):
                    dk_h, dk_w = kh * dilation - dilation + 1, kw * dilation - dilation + 1
                    n = evaluate(rows[label], dilation_kernel_h=dk_h, dilation_kernel_w=dk_w)
                    group = MODEL.group(target).id
                    rule = WidthRule(group, conditions[condition], conv_type, (dk_h, dk_w))
                    assert rule.n == n

                    def inside(width: int, n: int = n, dk_h: int = dk_h) -> bool:
                        values = {"width": width, "dilation_kernel_h": dk_h, "N": n}
                        return bool(
                            evaluate(rows["(1)"], **values) and evaluate(rows["(2)"], **values)
                        )

                    if not n_range[0] <= n <= n_range[1]:
                        assert not rule.n_in_range and rule.ids()["range"] in rule.broken(1)
                        continue
                    top, _ = rule.largest()
                    assert inside(top) and not inside(top + 1)
                    for width in {1, max(top - 1, 1), top, top + 1}:
                        assert (not rule.broken(width)) == inside(width), rule.describe(width)


def test_dilated_kernel_formulas_from_the_seed() -> None:
    formulas = [s for s in LINES[SPECIAL_AT:] if s.startswith("dilated_kernel_") and " = " in s]
    assert len(formulas) == 2
    for formula in formulas:
        axis = formula[len("dilated_kernel_")]
        for kernel in (1, 2, 3, 7):
            for dilation in (1, 2, 5):
                values = {f"kernel_{axis}": kernel, f"dilations_{axis}": dilation}
                assert dilated_kernel(kernel, dilation) == evaluate(
                    formula.split(" = ")[1], **values
                )


# --- hand-worked edges ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "condition", "conv_type", "kernel", "dilation", "n", "max_width"),
    [
        # RK3566 A: N = 8 - CEIL(kh*kw/128); width*kh < 1024*N; width <= 4096.
        ("rk3566", "A", "Convolution", (3, 3), 1, 7, 2389),  # 3*2389 = 7167 < 7168
        ("rk3566", "A", "Convolution", (1, 1), 1, 7, 4096),  # 7167 capped by width <= 4096
        ("rk3566", "A", "Convolution", (11, 12), 1, 6, 558),  # 132/128 -> 2; 11*558 = 6138 < 6144
        ("rk3566", "A", "Convolution", (29, 29), 1, 1, 35),  # 841/128 -> 7; 29*35 = 1015 < 1024
        ("rk3566", "A", "Convolution", (30, 30), 1, 0, 0),  # 900/128 -> 8: N = 0, unsupported
        (
            "rk3566",
            "A",
            "DepthwiseConvolution",
            (64, 64),
            1,
            7,
            111,
        ),  # 4096/4096 -> 1; 64*111 < 7168
        ("rk3566", "A", "DepthwiseConvolution", (64, 65), 1, 6, 95),  # 4160/4096 -> 2; 64*95 = 6080
        # RK3588 A: N = 12 - MAX(CEIL(kh*kw/128), 3): small kernels give N = 9 (outside 1..7).
        ("rk3588", "A", "Convolution", (3, 3), 1, 9, 0),
        ("rk3588", "A", "Convolution", (23, 23), 1, 7, 623),  # 529/128 -> 5; 23*623 = 14329
        # RK3562 A: N = 8 - MAX(CEIL(kh*kw/128), 2); width*kh <= 2048*N.
        ("rk3562", "A", "Convolution", (3, 3), 2, 6, 2457),  # dilated 5x5; 5*2457 = 12285
        ("rk3562", "A", "Convolution", (33, 32), 1, -1, 0),  # 1056/128 -> 9: N = -1
        # RK3576 B: ConvTranspose N = 12 - MAX(..., 2) = 10; Depthwise 8 - MAX(..., 3) = 5.
        ("rk3576", "B", "ConvTranspose", (1, 1), 1, 10, 0),
        ("rv1126b", "B", "DepthwiseConvolution", (3, 3), 1, 5, 3413),  # 3*3413 = 10239 <= 10240
    ],
)
def test_n_and_max_width_by_hand(
    target: str,
    condition: str,
    conv_type: str,
    kernel: tuple[int, int],
    dilation: int,
    n: int,
    max_width: int,
) -> None:
    group = MODEL.group(target)
    dilated = tuple(dilated_kernel(k, dilation) for k in kernel)
    rule = WidthRule(group.id, group.conditions[condition], conv_type, dilated)
    assert rule.n == n
    if max_width:
        assert rule.largest()[0] == max_width
        assert not rule.broken(max_width) and rule.broken(max_width + 1)
    else:
        assert "outside 1..7" in rule.describe(1)


def test_dilated_kernel_by_hand() -> None:
    assert dilated_kernel(3, 2) == 5  # taps at 0, 2, 4
    assert dilated_kernel(1, 5) == 1
    assert dilated_kernel(11, 1) == 11
    with pytest.raises(ValueError, match="dilation"):
        dilated_kernel(3, 0)


def test_other_types_and_unrestricted_rows() -> None:
    other = MODEL.input_rule("rk3588", "int8", "float32", 3)
    assert other.id == "rk3588/input/int8/other/4d" and other.backend == "CPU"
    assert other.width_align == 16
    any_dims = MODEL.input_rule("rk3588", "float16", "int16", 3, ndim=3)
    assert any_dims.width_align == 1 and any_dims.width_limit is None


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: MODEL.input_rule("rk9999", "int8", "uint8", 3), ModelIOError, "rk3588"),
        (lambda: MODEL.input_rule("rv1106", "float16", "uint8", 3), ModelIOError, "float16"),
        (lambda: MODEL.input_rule("rv1106", "int8", "int8", 3), ModelIOError, "'int8'"),
        (lambda: MODEL.input_rule("rk2118", "int8", "float16", 3), ModelIOError, "RK2118"),
        (lambda: MODEL.input_rule("rk3588", "int4", "uint8", 3), ValueError, "int4"),
        (lambda: MODEL.input_rule("rk3588", "int8", "unit8", 3), ValueError, "unit8"),
        (lambda: MODEL.input_rule("rk3588", "int8", "uint8", 0), ValueError, "channels"),
        (lambda: MODEL.output_rule("rv1106", "float16", "NCHW"), ModelIOError, "float16"),
        (lambda: MODEL.output_rule("rk3588", "int8", "NCWH"), ModelIOError, "NCWH"),
    ],
)
def test_lookup_errors_name_the_value(call: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_every_toolkit_target_in_exactly_one_group() -> None:
    # The targets rknn-toolkit2 2.5.0 accepts (measured; docs/rknn.md).
    accepted = "rk3562 rk3566 rk3568 rk3576 rk3588 rv1103 rv1106 rv1103b rv1106b rk2118 rv1126b"
    assert sorted(MODEL.targets) == sorted(accepted.split())


# --- counting ---------------------------------------------------------------------------------


def seed_counts() -> Counter[tuple[str | None, str]]:
    """(platform cell or None, kind) -> count, straight from the seed's lines."""
    counts: Counter[tuple[str | None, str]] = Counter()
    for kind in ("input", "output"):
        for _, row in seed_rows(kind):
            counts[row[0], kind] += 1
    for _, body in INPUT_SECTIONS:
        platform = next(cells(line)[0] for line in body if is_row(line) and len(cells(line)) == 9)
        for line in body:
            if is_row(line) and len(cells(line)) == 2:
                label = cells(line)[0]
                counts[platform, "n_formula" if "/" in label else "condition"] += 1
            counts[platform, "n_range"] += "N must be an integer" in line
            counts[platform, "remark"] += "Note 9 was not found" in line
    for title, (heading, _) in (
        ("Model Input Limitations", INPUT_SECTIONS[0]),
        (LINES[OUT_AT], OUTPUT_SECTIONS[0]),
    ):
        start = LINES.index(title)
        counts[None, "note"] += sum(
            s != "-" for s in LINES[start + 1 : LINES.index(heading, start)]
        )
    counts[None, "formula"] = sum(s.startswith("dilated_kernel_") and " = " in s for s in LINES)
    return +counts


def test_limits_count_matches_the_seed() -> None:
    names = {group.id: group.name for group in MODEL.groups}
    ours = Counter((names.get(limit.group or ""), limit.kind) for limit in MODEL.limits())
    assert ours == seed_counts()
    kinds = Counter(limit.kind for limit in MODEL.limits())
    # Totals, for the report: 41 input rows, 43 output rows, 22 width conditions (A/B (1),(2)),
    # 33 N formulas, 7 N ranges, 12 general notes, 2 note-9 remarks, 2 dilated-kernel formulas.
    assert sum(kinds.values()) == 162


def test_limit_ids_stable_and_texts_from_the_seed() -> None:
    ids = [limit.id for limit in MODEL.limits()]
    assert len(ids) == len(set(ids))
    assert {"rk3588/input/int8/uint8/4d", "rk3588/conv/A/Convolution/N"} <= set(ids)
    assert "rk3588/output/int8/NC1HWC2/4d" in ids
    text = SEED.read_text(encoding="utf-8")
    for limit in MODEL.limits():
        assert limit.text in text, limit.id
        assert limit.source.startswith(SEED.name)


# --- malformed catalogues ---------------------------------------------------------------------

RAW = yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))


def _set(doc: Any, path: list[Any], value: Any) -> None:
    for part in path[:-1]:
        doc = doc[part]
    doc[path[-1]] = value


G0 = ["groups", 0]
COND0 = [*G0, "convolution", "conditions", 0]


@pytest.mark.parametrize(
    ("path", "value", "where", "reported"),
    [
        (
            [*COND0, "n", 1, "formula"],
            "N = 8 - FLOOR((dilation_kernel_h * dilation_kernel_w) / 4096)",
            "groups[0].convolution.conditions[0].n[1].formula",
            None,
        ),
        (
            ["groups", 2, "convolution", "conditions", 0, "n", 0, "formula"],
            "N = 8 - MAX(CEIL((dilation_kernel_h * dilation_kernel_w) / 0), 2)",
            "groups[2].convolution.conditions[0].n[0].formula",
            None,
        ),
        (
            ["groups", 1, "convolution", "conditions", 1, "product"],
            "width * kernel_h <= 1024 * N",
            "groups[1].convolution.conditions[1].product",
            None,
        ),
        ([*COND0, "width"], "width =< 4096", "groups[0].convolution.conditions[0].width", None),
        ([*COND0, "n", 1, "conv_type"], "Convolution", f"{key_path(COND0)}.n[1].conv_type", None),
        (
            [*G0, "convolution", "conditions", 1, "name"],
            "A",
            "groups[0].convolution.conditions[1].name",
            None,
        ),
        (
            [*G0, "convolution", "rule"],
            "N must be an integer.",
            "groups[0].convolution.rule",
            None,
        ),
        (
            ["groups", 5, "inputs", "rows", 0, "width_limit", "channels_1_3_4"],
            "B",
            "groups[5].inputs.rows[0].width_limit.channels_1_3_4",
            None,
        ),
        (
            [*G0, "inputs", "rows", 1, "input_type"],
            "uint8",
            "groups[0].inputs.rows[1]",
            "rk3566-rk3568/input/int8/uint8/4d",
        ),
        (
            ["groups", 3, "outputs", "rows", 2, "channel_align"],
            "Aligned to sixteen",
            "groups[3].outputs.rows[2].channel_align",
            None,
        ),
        ([*G0, "inputs", "rows", 0, "backend"], "GPU", "groups[0].inputs.rows[0].backend", None),
        ([*G0, "targets"], ["rk3566", "rk3588"], "groups[1].targets[0]", "rk3588"),
        (
            ["dilated_kernel", "formulas", 1],
            "dilated_kernel_w = kernel_w * dilations_w + 1",
            "dilated_kernel.formulas[1]",
            None,
        ),
    ],
)
def test_malformed_catalogue_names_file_key_and_value(
    tmp_path: Path, path: list[Any], value: Any, where: str, reported: Any
) -> None:
    doc = copy.deepcopy(RAW)
    _set(doc, path, value)
    bad = tmp_path / "model-io.yaml"
    bad.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    with pytest.raises(DataFileError) as caught:
        load_model_io(bad)
    assert caught.value.file == str(bad)
    assert caught.value.key_path == where
    assert caught.value.value == (value if reported is None else reported)


def test_an_empty_inconsistency_reason_is_refused(tmp_path: Path) -> None:
    doc = copy.deepcopy(RAW)
    _set(doc, [*COND0, "n", 0, "inconsistent"], "")
    bad = tmp_path / "model-io.yaml"
    bad.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    with pytest.raises(DataFileError) as caught:
        load_model_io(bad)
    assert caught.value.key_path == "groups[0].convolution.conditions[0].n[0].inconsistent"


def test_marked_n_formulas_are_exactly_those_leaving_the_documents_own_n_range() -> None:
    """The document says N is 1..7; a formula is contradicted when even the smallest kernel
    (1x1) gives an N above that range. Computed from the catalogue's own numbers, so a mark
    that is dropped or invented fails here."""
    model_io = load_model_io()
    marked = model_io.inconsistencies()
    for group in model_io.groups:
        for name, condition in group.conditions.items():
            for conv_type, formula in condition.n_formulas.items():
                limit_id = f"{group.id}/conv/{name}/{conv_type}/N"
                above = formula.n(1, 1) > condition.n_range[1]
                assert (limit_id in marked) == above, limit_id
                if above:
                    assert f"N = {formula.n(1, 1)}" in marked[limit_id]


def test_the_missing_note_9_is_marked_on_its_remarks() -> None:
    marked = load_model_io().inconsistencies()
    remarks = {i for i in marked if "/remark/" in i}
    assert remarks == {"rv1103-rv1106/remark/1", "rv1103b-rv1106b/remark/1"}
    assert all("note 9" in marked[i] for i in remarks)
