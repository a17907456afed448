"""The RKNN operator lists: committed text -> extractor + overrides -> committed YAML.

Entry counts and each entry's lines are read from the text's own headings with plain
patterns, not through the extractor, so a parser that drops, invents or cuts short a section
fails here.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from tests.helpers.declared import MODELS

from harness.documented import documents, formulas
from harness.documented.documents import diff, stats
from harness.documented.formulas import holds
from harness.safe_yaml import DataFileError, load_yaml
from harness.vendors.rknn.documents.judged import counterpart, same_reading
from harness.vendors.rknn.documents.operator_list import chapters, reading
from harness.vendors.rknn.documents.operator_list import committed as catalogue
from harness.vendors.rknn.documents.operator_list import document as text_document
from harness.vendors.rknn.documents.operator_list.__main__ import main
from harness.vendors.rknn.documents.operator_list.extract import (
    apply_overrides,
    dump,
    extract,
    load_overrides,
    version_of,
)
from harness.vendors.rknn.documents.operators import listed_operators, seed_catalogue

TEXTS = sorted(catalogue.TEXT_DIR.glob("V*.txt"))
VERSIONS = [version_of(p.read_text(encoding="utf-8")) for p in TEXTS]
_GROUP = re.compile(r"^3\.(\d) (\S+)\s*$")
_ENTRY = re.compile(r"^3\.(\d)\.(\d+) \S")
_CPU_TOC = re.compile(r"^\s*4\.(\d+) .*\.\s+\d+\s*$")


def headings(text: str) -> dict[str, list[int]]:
    """Group name -> the entry numbers under its heading, in order."""
    names: dict[str, str] = {}
    found: dict[str, list[int]] = {}
    for line in text.splitlines():
        group = _GROUP.match(line)
        if group:
            names[group[1]] = group[2]
        entry = _ENTRY.match(line)
        if entry:
            found.setdefault(names[entry[1]], []).append(int(entry[2]))
    return found


def test_the_texts_are_committed_for_three_versions() -> None:
    assert catalogue.versions() == VERSIONS
    assert len(VERSIONS) >= 3


@pytest.mark.parametrize("path", TEXTS, ids=[p.stem for p in TEXTS])
def test_committed_yaml_is_what_the_extractor_makes(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    made = extract(text, load_overrides(catalogue.OVERRIDES))
    folder = catalogue.DATA_DIR / version_of(text)
    assert sorted(made) == sorted(p.name for p in folder.glob("*.yaml"))
    for name, document in made.items():
        assert (folder / name).read_text(encoding="utf-8") == dump(document), name


def test_check_mode_reports_a_stale_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--check", str(TEXTS[-1])]) == 0
    edited = tmp_path / TEXTS[-1].name
    edited.write_text(
        TEXTS[-1]
        .read_text(encoding="utf-8")
        .replace("dilations_h ∈ [1, 31]", "dilations_h ∈ [1, 30]", 1),
        encoding="utf-8",
    )
    assert main(["--check", str(edited)]) == 1
    assert "3.1-rk3566-rk3568.yaml: differs" in capsys.readouterr().err


@pytest.mark.parametrize("path", TEXTS, ids=[p.stem for p in TEXTS])
def test_entry_counts_are_the_headings(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    expected = headings(text)
    doc = catalogue.load(version_of(text))
    assert [g.name for g in doc.groups] == list(expected)
    for group in doc.groups:
        numbers = expected[group.name]
        assert numbers == list(range(1, len(numbers) + 1)), group.name  # none skipped
        assert len(group.entries) == len(numbers), group.name
        assert [e.section for e in group.entries] == [f"{group.section}.{n}" for n in numbers]
    toc = [int(m[1]) for line in text.splitlines() if (m := _CPU_TOC.match(line))]
    assert len(doc.cpu.entries) == len(toc) - 1  # 4.1 is the note on which targets have them


@pytest.mark.parametrize("version", VERSIONS)
def test_one_platforms_group_is_read_from_its_own_file_alone(version: str) -> None:
    catalogue.load.cache_clear()
    catalogue._group.cache_clear()
    mine = catalogue.group(version, "RV1106")
    assert catalogue._group.cache_info().currsize == 1  # one of the seven files parsed
    assert "rv1106" in mine.targets
    targets = [t for one in catalogue.load(version).groups for t in one.targets]
    assert len(set(targets)) == len(targets) > 1  # each platform in one group
    for platform in targets:
        assert catalogue.group(version, platform) is catalogue.load(version).group(platform)
    with pytest.raises(LookupError, match="no section for platform 'rk9999'; known: rk3566"):
        catalogue.group(version, "rk9999")


@pytest.mark.parametrize("version", VERSIONS)
def test_at_least_nine_in_ten_limits_are_structured_per_platform(version: str) -> None:
    for group in catalogue.load(version).groups:
        counts = stats(group)
        assert counts.limits > 5 * counts.entries, group.name
        assert counts.share >= 0.9, (group.name, counts)


def test_every_limit_keeps_its_verbatim_text_and_page() -> None:
    doc = catalogue.load(VERSIONS[-1])
    text = TEXTS[-1].read_text(encoding="utf-8")
    for group in doc.groups:
        for entry in group.entries:
            for limit in entry.limits:
                assert limit.page and limit.page >= entry.page, limit.id
                for line in limit.text.splitlines():
                    assert line in text, (limit.id, line)


def test_transpose_p_and_q_differ_between_rk3588_and_rk3562() -> None:
    doc = catalogue.load(VERSIONS[-1])
    found = {}
    for platform in ("rk3588", "rk3562"):
        entry = doc.group(platform).entry("Transpose")
        assert entry is not None
        products = [lim for lim in entry.limits if lim.kind == "product"]
        found[platform] = {
            lim.rule["constants"]["p"] for lim in products if "p" in lim.rule.get("constants", {})
        }
        assert all("p=" in lim.text for lim in products if "p" in lim.rule.get("constants", {}))
    assert len(found["rk3588"]) == len(found["rk3562"]) == 1
    assert found["rk3588"] != found["rk3562"]


def test_rk3588_convolution_dilation_changes_from_v220_to_v232() -> None:
    old, new = catalogue.load("V2.2.0"), catalogue.load("V2.3.2")
    changes = {c.key: c for c in diff(old.group("rk3588"), new.group("rk3588"))}
    change = changes["Convolution/attr/dilations_h"]
    assert change.kind == "changed"
    assert change.old is not None and change.new is not None
    assert (change.old.interval.hi, change.new.interval.hi) == (32, 31)  # type: ignore[union-attr]


def test_fused_entries_name_what_they_fuse() -> None:
    group = catalogue.load(VERSIONS[-1]).group("rk3588")
    add_relu = group.entry("ConvolutionAddRelu")
    assert add_relu is not None and add_relu.same_as == "Convolution"
    assert add_relu.fuses == ("Convolution", "Add", "Relu")
    prelu = group.entry("ConvolutionPRelu/LeakyRelu")
    assert prelu is not None and prelu.fuses == ("Convolution", "PRelu/LeakyRelu")


def test_an_operator_missing_from_a_group_is_listed_absent() -> None:
    doc = catalogue.load(VERSIONS[-1])
    everywhere = {e.name for g in doc.groups for e in g.entries}
    for group in doc.groups:
        absent = {lim.op for lim in group.absent}
        assert absent == everywhere - {e.name for e in group.entries}, group.name


# --- readings -----------------------------------------------------------------------------


def test_a_product_reads_its_named_constants() -> None:
    found = reading.formula("h1*w1<16*p", {"p": 8192, "q": 2048})
    assert found["kind"] == "product"
    assert found["rule"]["factors"] == ["h1", "w1"]
    assert found["rule"]["less_than"] == 16 * 8192
    assert found["rule"]["constants"] == {"p": 8192}


def test_a_comparison_without_an_operator_stays_free_text() -> None:
    found = reading.formula("c1*h1*w1p", {"p": 8192})
    assert found["kind"] == "free-text"
    assert "no comparison" in found["rule"]["reason"]


@pytest.mark.parametrize(
    ("text", "kind", "values"),
    [
        ("stride_h 仅支持 1,2,4,8", "values", [1, 2, 4, 8]),
        ("axis ∈ {0, 1, 2, 3}", "values", [0, 1, 2, 3]),
        ("目前仅支持 nearest 和 linear 两种可配置", "values", ["nearest", "linear"]),
        ("使用 ceil 或 floor 的方式计算输出的 shape : 不支持", "unsupported", None),
        ("切分的起始位置: 无限制", "no-limit", None),
        ("cifg 变种的选择: 1(T) or 0(F) 目前限定 0，即尚不支持", "fixed", [0]),
    ],
)
def test_statements(text: str, kind: str, values: list[object] | None) -> None:
    found = reading.ranges(text) or [reading.statement(text, "x")]
    assert found[0] is not None
    assert found[0]["kind"] == kind
    assert found[0].get("values") == values


def test_a_range_with_a_multiple_of_rule_is_two_limits() -> None:
    found = reading.ranges("batchsize ∈ (0, 8192] , 大于 1 时仅支持 4 的倍数")
    assert found is not None
    assert [f["kind"] for f in found] == ["range", "multiple-of"]
    assert found[0]["interval"] == "(0, 8192]"
    assert found[1]["rule"] == {"when_greater_than": 1, "multiple_of": 4}


def test_multi_core_per_target() -> None:
    found = reading.multi_core(
        "多核联合: RK3576 支持/RV1126B 不支持", {"rk3576": "", "rv1126b": ""}
    )
    assert found == {
        "kind": "multi-core",
        "values": ["not-supported", "supported"],
        "rule": {"rk3576": "supported", "rv1126b": "not-supported"},
    }


# --- overrides ----------------------------------------------------------------------------


def test_an_override_must_cite_every_place_it_matches() -> None:
    text = TEXTS[-1].read_text(encoding="utf-8")
    overrides = load_overrides(catalogue.OVERRIDES)
    version = version_of(text)
    first = dict(overrides[0])
    first["at"] = [at for at in first["at"] if at["version"] == version][1:]  # one left out
    with pytest.raises(ValueError, match="cites"):
        extract(text, [first])
    wrong_page = dict(overrides[0])
    wrong_page["at"] = [{**at, "page": at["page"] + 1} for at in overrides[0]["at"]]
    with pytest.raises(ValueError, match="cites"):
        extract(text, [wrong_page])


def test_an_override_without_a_reason_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "overrides.yaml"
    path.write_text("overrides:\n  - {text: x, at: [], read_as: 'a<b'}\n", encoding="utf-8")
    with pytest.raises(DataFileError, match=r"overrides\[0\].*reason"):
        load_overrides(path)


def test_overrides_mark_what_they_reinterpret_inconsistent() -> None:
    group = catalogue.load(VERSIONS[-1]).group("rk3588")
    typo = [lim for lim in group.limits() if "c1*h1*w1p" in lim.text and lim.subject == "c1*h1*w1"]
    assert typo and all(lim.inconsistent and lim.kind == "product" for lim in typo)
    entry = group.entry("ConvTranposeHardSigmoid")
    assert entry is not None and entry.same_as == "ConvTranspose" and entry.inconsistent
    assert apply_overrides({}, VERSIONS[-1], []) is None


# --- chapter 5 ----------------------------------------------------------------------------


def test_an_output_row_that_disagrees_with_seed_003_is_inconsistent() -> None:
    seed_rows = chapters._seed_rows(["rk3588"])
    row = {
        "precision": "int8",
        "dims": "4",
        "layout": "NHWC",
        "cells": ["32 对齐", "无"],
        "columns": [0, 10],
        "lines": [chapters.Line(1, 333, "NHWC       32 对齐          无")],
    }
    found = chapters._row_limit("RK3588", row, seed_rows)
    assert found["rule"]["channel_align"] == 32
    assert "seed 003" in found["inconsistent"]
    row["cells"] = ["16 对齐", "无"]
    assert "inconsistent" not in chapters._row_limit("RK3588", row, seed_rows)


def test_every_output_table_row_is_read() -> None:
    doc = catalogue.load(VERSIONS[-1])
    for group in doc.model_io:
        rows = [
            lim for lim in group.limits() if lim.id.split("/")[-3] in ("int8", "float16", "无限制")
        ]
        assert rows and all(lim.kind == "output" for lim in rows), group.name


def test_a_rule_for_one_attribute_value_carries_it_as_a_condition() -> None:
    pad = catalogue.load(VERSIONS[-1]).group("rk3562").entry("Pad")
    assert pad is not None
    reflect = {lim.subject: lim for lim in pad.limits if lim.condition.get("mode") == ("reflect",)}
    assert sorted(reflect) == ["channel", "height", "width"]
    assert all(lim.kind == "range" for lim in reflect.values())
    assert "reflect channel ∈" in reflect["width"].text
    constant = [lim for lim in pad.limits if lim.condition.get("mode") == ("constant",)]
    assert [lim.kind for lim in constant] == ["no-limit"]


def test_a_word_hyphenated_across_lines_is_read_whole() -> None:
    pad = catalogue.load(VERSIONS[-1]).group("rk3562").entry("Pad")
    assert pad is not None
    shape = next(lim for lim in pad.limits if lim.id == "Pad/pads/shape")
    assert "channel_end" in shape.rule["dims"]
    assert "chan‑\nnel_end" in shape.text  # the verbatim text keeps the document's lines


@pytest.mark.parametrize("pair", [VERSIONS[i : i + 2] for i in range(len(VERSIONS) - 1)])
def test_lines_wrapped_differently_are_no_change(pair: list[str]) -> None:
    old, new = (catalogue.load(v) for v in pair)
    for group in new.groups:
        for change in diff(old.group(group.targets[0]), group):
            if change.kind == "changed":
                assert change.old is not None and change.new is not None
                texts = ["".join(c.text.split()) for c in (change.old, change.new)]
                assert texts[0] != texts[1], change.key


def test_broadcast_forms_listed_as_op_lines_are_read_with_their_text() -> None:
    # V2.2.0 lists Max's broadcasts as "· OP(A(N,C,H,W),B(C,1,1))" lines under a colon.
    entry = catalogue.load("V2.2.0").group("rk3562").entry("Max")
    assert entry is not None
    found = next(lim for lim in entry.limits if lim.id == "Max/B/broadcast")
    assert found.kind == "broadcast-support"
    assert found.values == ("[N,C,H,W]", "[C,1,1]", "[scalar]")
    assert "OP(A(N,C,H,W),B(C,1,1))，即 C 维度做 broadcasting" in found.text


# --- what the extractor used to lose (issue 33) -------------------------------------------


def _section(*body: str) -> text_document.Section:
    lines = [text_document.Line(i + 1, 1, text) for i, text in enumerate(body)]
    return text_document.Section("3.1.1", "Op", 1, 0, lines)


@pytest.mark.parametrize("heading", ["输入列表 *", "  • 输入列表"])
def test_a_block_heading_with_a_stray_mark_still_opens_the_block(heading: str) -> None:
    found = text_document.entry(_section("描述", heading, "  • input : T1", "      – c ∈ (0, 8]"))
    assert [line.text for line in found.description] == ["描述"]
    assert list(found.blocks) == ["输入列表"]


def test_rk3566_global_average_pool_keeps_its_input_ranges() -> None:
    # V2.3.2 heads RK3566's input list "输入列表 *"; RK3588's has no asterisk.
    doc = catalogue.load("V2.3.2")
    found = {}
    for platform in ("rk3566", "rk3588"):
        entry = doc.group(platform).entry("GlobalAveragePool")
        assert entry is not None and "输入列表" not in entry.description
        found[platform] = {(lim.subject, str(lim.interval)) for lim in entry.limits}
    assert ("channel", "(0, 8192]") in found["rk3566"]
    assert found["rk3566"] == found["rk3588"]


def test_a_role_typed_with_a_stray_asterisk_is_that_role() -> None:
    where = catalogue.load(VERSIONS[-1]).group("rk3588").entry("Where")
    assert where is not None
    assert "x_tensor" in {lim.role for lim in where.limits}
    assert "input" not in {lim.role for lim in where.limits}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("op", ["AveragePool", "GlobalAveragePool"])
def test_an_entry_that_only_says_unsupported_is_an_unsupported_operator(
    version: str, op: str
) -> None:
    group = catalogue.load(version).group("rk2118")
    entry = group.entry(op)
    assert entry is not None and "不支持" not in entry.description
    assert [(lim.kind, dict(lim.rule)) for lim in entry.limits] == [
        ("absent", {"unsupported": True})
    ]
    assert entry.limits[0].text.startswith("不支持")
    assert entry.limits[0].id == f"{op}/op/unsupported"  # not an operator without an entry
    assert "not supported" in documents.reading(entry.limits[0])
    listed = listed_operators(group)[op]
    assert [lim.kind for lim in listed.limits()] == ["absent"]  # its cases expect no NPU


@pytest.mark.parametrize("version", VERSIONS)
def test_pows_exponent_set_is_filed_under_the_subject_its_model_reads(version: str) -> None:
    read = MODELS.subjects("Pow", MODELS.specs["Pow"].defaults)
    for group in catalogue.load(version).groups:
        # only a set is the tensor's values: "axis=1, 无限制" under a shape stays the shape's
        assert {lim.op for lim in group.limits() if lim.subject == "values"} <= {"Pow"}
        pow_ = group.entry("Pow")
        if pow_ is None:
            continue
        sets = [lim for lim in pow_.limits if lim.kind in ("values", "fixed")]
        assert sets and all(lim.subject == "values" for lim in sets), group.name
        assert all(lim.subject in read for lim in sets)
        assert {0.5, -0.5} <= set(sets[0].values or ()), group.name


@pytest.mark.parametrize("version", VERSIONS)
def test_a_fused_entry_worded_otherwise_names_the_entry_it_follows(version: str) -> None:
    # RK3566 MulRelu: "其余说明同 Mul" instead of "说明及规格限制同Mul".
    group = catalogue.load(version).group("rk3566")
    entry = group.entry("MulRelu")
    assert entry is not None and entry.same_as == "Mul"
    mul = group.entry("Mul")
    assert mul is not None and mul.limits
    adopted = listed_operators(group)["MulRelu"].adopted
    assert [lim.id.split("/", 1)[1] for lim in adopted] == [
        lim.id.split("/", 1)[1] for lim in mul.limits
    ]


# --- rules kept in notes and words become limits (issue 33) -------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_the_softmax_familys_axes_are_a_values_limit_on_the_axis_the_models_read(
    version: str,
) -> None:
    doc = catalogue.load(version)
    axes = {}
    for op in ("Softmax", "Hardmax"):
        entry = doc.group("rk3588").entry(op)
        assert entry is not None
        found = [lim for lim in entry.limits if lim.subject == "axis" and lim.kind == "values"]
        assert len(found) == 1 and "的轴" in found[0].text, op
        assert not any("的轴" in note for note in entry.notes)
        assert "axis" in MODELS.subjects(op, MODELS.specs[op].defaults)
        axes[op] = found[0].values
    assert axes == {"Softmax": (1, 3), "Hardmax": (1, 3, -1)}


def test_a_condition_in_words_is_a_formula_the_judge_evaluates() -> None:
    hardmax = catalogue.load(VERSIONS[-1]).group("rv1106").entry("Hardmax")
    assert hardmax is not None
    rules = {
        lim.rule["expression"]: lim
        for lim in hardmax.limits
        if lim.kind in ("formula", "product") and lim.condition.get("axis") == (1,)
    }
    either = rules["height * width = 1 or height * width > 8"]
    assert "等于 1 或大于 8" in either.text
    assert [holds(either.rule, {"height": h, "width": 1}) for h in (1, 2, 8, 9)] == [
        True,
        False,
        False,
        True,
    ]
    assert rules["height * width < 16384"].kind == "product"


def test_alternatives_of_conjunctions_are_one_formula() -> None:
    found = reading.formula("(h1=w1=1, n1%4=0) or (n1=h1=1, h1%4=0)", {})
    assert found["kind"] == "formula"
    rule = found["rule"]
    assert holds(rule, {"h1": 1, "w1": 1, "n1": 8})
    assert not holds(rule, {"h1": 1, "w1": 2, "n1": 8})
    assert holds(rule, {"n1": 1, "h1": 1, "w1": 5}) is False  # h1 % 4 != 0


def test_formulas_evaluate_and_and_or_over_integers() -> None:
    assert formulas.evaluate("a = 1 or a > 8", {"a": 9}) is True
    assert formulas.evaluate("a = 1 and b = 1", {"a": 1, "b": 2}) is False
    assert formulas.evaluate("0 <= a <= b", {"a": 3, "b": 2}) is False


@pytest.mark.parametrize(
    ("text", "subject", "expected"),
    [
        ("支持 add 和 mul 可选, 表示 C 是做加法还是乘法", "c_type", ["add", "mul"]),
        (
            "支持 layer、rms 和 mean_var 三种 Normalization 模式可选",
            "mode",
            ["layer", "rms", "mean_var"],
        ),
        ("仅支持单个标量或 C 维度系数", "slope", ["scalar", "[C]"]),
        ("width : 目前支持 width = 1。", "width", [1]),
    ],
)
def test_sets_in_other_wordings(text: str, subject: str, expected: list[object]) -> None:
    found = reading.statement(text, subject)
    assert found is not None
    assert (found["subject"], found["values"]) == (subject, expected)


def test_resizes_integer_scales_are_values_on_the_scales_its_model_reads() -> None:
    resize = catalogue.load(VERSIONS[-1]).group("rk3566").entry("Resize")
    assert resize is not None
    scales = {lim.subject: lim for lim in resize.limits if lim.subject.startswith("scale_")}
    assert sorted(scales) == ["scale_h", "scale_w"]
    assert scales["scale_h"].values == (2, 3, 4, 5, 6, 7, 8)
    assert set(scales) <= set(MODELS.subjects("Resize", MODELS.specs["Resize"].defaults))


@pytest.mark.parametrize("version", VERSIONS)
def test_at_most_one_in_a_hundred_rules_is_free_text_each_with_its_reason(version: str) -> None:
    doc = catalogue.load(version)
    for group in [*doc.groups, doc.cpu]:
        counts = stats(group)
        assert counts.free_text <= 0.01 * counts.limits, (group.name, counts)
        for limit in group.limits():
            if limit.kind == "free-text":
                assert limit.rule["reason"] != "no structured reading of this wording", limit.id


# --- every line accounted for (issue 33) --------------------------------------------------

# Words that make a line a rule: a line with one of them must be (part of) a limit, never
# only note or heading. Independent of the extractor's own readings. A description restates
# the ONNX operator ("所有向量除 axis 指定的方向外大小必须相同", "f(x) = x for x >= 0"): there
# only the words the NPU's limits use count.
_LIMIT_WORDS = r"∈|仅支持|只支持|不支持|限定|无限制|\d\s*对齐|倍数|的轴\s*[:：]"
_RULE_WORDS = re.compile(rf"{_LIMIT_WORDS}|[<>≤≥]|必须|要求")
# Lines whose form states a rule: a type variable's types ("T1: int8(Tensor)"), a role and its
# type variables ("input : T1"), a shape, a quantization scheme. In a description one is a
# block the extractor lost into it (as the lines after RV1103B exGelu's formula once were).
_RULE_FORMS = (
    r"^T\w*(?:\s*,\s*T\w*)*\s*:\s*[a-z]+\d*\s*\("
    r"|^[A-Za-z_]\w*\s*(?:\(optional\)\s*)?:\s*\*?T\w*(?:\s*,\s*T\w*)*$"
    r"|^shape\s*:|^per[‑-](?:layer|channel)"
)
_DESCRIPTION_RULE_WORDS = re.compile(rf"{_LIMIT_WORDS}|{_RULE_FORMS}")
_BULLET_MARK = re.compile(r"^\s*(?:[•–*·‑]\s*)?(?:\*\*)?")


# A section's heading in chapters 3 to 5 (``3.7.55 exGelu``, ``4.1 注:``, ``5.2.1 RK3588``); a
# chapter opener ends the last. Plain patterns, not the extractor's sections: an entry the
# extractor ends early (at a formula's line, say) keeps the rest of its lines here.
_SECTION = re.compile(r"^(?P<number>[345](?:\.\d+)+) \S")
_CHAPTER = re.compile(r"^\s*CHAPTER\s+\d+\s*$")


def _sections(text: str) -> dict[str, list[text_document.Line]]:
    """Section number -> the lines of its body, headers and footers left out."""
    found: dict[str, list[text_document.Line]] = {}
    body: list[text_document.Line] | None = None
    for line in text_document.pages(text):
        heading = _SECTION.match(line.text)
        if heading:
            body = found.setdefault(heading["number"], [])
        elif _CHAPTER.match(line.text):
            body = None
        elif body is not None:
            body.append(line)
    return found


def _plain(line: str) -> str:
    return _BULLET_MARK.sub("", line).strip().strip("*").strip()


def _entry_unaccounted(entry: documents.Entry, body: list[text_document.Line]) -> list[str]:
    said = {_plain(x) for lim in entry.limits for x in lim.text.splitlines()}
    described = {_plain(x) for x in entry.description.splitlines()}
    kept = {_plain(x) for x in (*entry.notes, *entry.headings) for x in x.splitlines()}
    out = []
    for line in body:
        plain = _plain(line.text)
        if not plain or text_document.BLOCK.match(line.text) or plain in said:
            continue
        if plain in kept and not _RULE_WORDS.search(plain):
            continue
        if plain in described and not _DESCRIPTION_RULE_WORDS.search(plain):
            continue
        out.append(f"§ {entry.section} {entry.name} l. {line.number}: {plain}")
    return out


def _cpu_unaccounted(entry: documents.Entry, body: list[text_document.Line]) -> list[str]:
    said = "".join(x for lim in entry.limits for x in lim.text.split())
    kept = "".join((entry.description + "".join(entry.notes)).split())
    out = []
    for line in body:
        plain = "".join(re.sub(r"^–\s*(描述|规格约束|说明)\s*:?", "", line.text.strip()).split())
        rule = _DESCRIPTION_RULE_WORDS.search(plain)
        if plain and plain not in said and (plain not in kept or rule):
            out.append(f"§ {entry.section} {entry.name} l. {line.number}: {plain}")
    return out


def _unaccounted(text: str) -> list[str]:
    """The chapter-3 and chapter-4 entry lines that are in no limit, or that state a rule
    yet are only description, note or heading; chapter 4.1's in none of its notes."""
    doc = catalogue.load(version_of(text))
    entries = {one.section: one for group in doc.groups for one in group.entries}
    notes = "".join("".join(note.text.split()) for note in doc.notes)
    cpu = {one.section: one for one in doc.cpu.entries}  # some operators twice (Sin: 4.55, 4.89)
    out = []
    for number, body in _sections(text).items():
        if re.fullmatch(r"3\.\d+\.\d+", number):
            out += _entry_unaccounted(entries[number], body)
        elif number in cpu:
            out += _cpu_unaccounted(cpu[number], body)
        elif number.startswith("4."):  # 4.1: which targets have which CPU operators
            for line in body:
                plain = "".join(_plain(line.text).split())
                if plain and plain not in notes:
                    out.append(f"§ {number} l. {line.number}: {plain}")
    return out


def _model_io_unaccounted(text: str) -> list[str]:
    """Chapter 5's lines in no limit and no note, other than the tables' column headings."""
    version = version_of(text)
    said = "".join(
        "".join(lim.text.split()) for one in catalogue.model_io(version) for lim in one.limits()
    )
    raw = load_yaml(catalogue.DATA_DIR / version / "model-io.yaml")
    said += "".join(
        "".join(n["text"].split()) for k in ("input_notes", "output_notes") for n in raw[k]
    )
    out = []
    for number, body in _sections(text).items():
        for line in body if number.startswith("5.") else []:
            plain = "".join(re.sub(r"^\s*\d+\.\s+", "", line.text).split())
            if plain and plain not in said and not re.search(r"Layout|齐要求", plain):
                out.append(f"§ {number} l. {line.number}: {plain}")
    return out


@pytest.mark.parametrize("path", TEXTS, ids=[p.stem for p in TEXTS])
def test_every_line_of_every_entry_is_accounted_for(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert _unaccounted(text) == []
    assert _model_io_unaccounted(text) == []


def test_a_rule_left_in_the_description_is_unaccounted() -> None:
    # RK3566 GlobalAveragePool as read while "输入列表 *" was not seen as a block heading:
    # the input list in the description, its ranges in no limit.
    text = TEXTS[-1].read_text(encoding="utf-8")
    section = next(
        s
        for s in text_document.sections(text_document.pages(text), "3.1.")
        if s.title == "GlobalAveragePool"
    )
    entry = catalogue.load(version_of(text)).group("rk3566").entry("GlobalAveragePool")
    assert entry is not None and _entry_unaccounted(entry, section.body) == []
    inputs = [lim for lim in entry.limits if lim.role == "input"]
    lost = dataclasses.replace(
        entry,
        description="\n".join([entry.description, *(lim.text for lim in inputs)]),
        limits=tuple(lim for lim in entry.limits if lim.role != "input"),
    )
    found = _entry_unaccounted(lost, section.body)
    assert any("channel ∈ (0, 8192]" in line for line in found)


@pytest.mark.parametrize("version", VERSIONS)
def test_lines_after_a_formula_left_in_the_description_are_unaccounted(version: str) -> None:
    # RV1103B's exGelu: its formula's LaTeX over two lines ("$y=", "0.5 * x * (…) $"), then
    # the input and output lists and the type constraint. Read as description, those rules
    # must not pass for it; the formula's lines may.
    text = TEXTS[VERSIONS.index(version)].read_text(encoding="utf-8")
    entry = catalogue.load(version).group("rv1103b").entry("exGelu")
    assert entry is not None
    body = _sections(text)[entry.section]
    assert _entry_unaccounted(entry, body) == []
    assert "0.5 * x * (1 + Tanh(" in entry.description
    lost = dataclasses.replace(
        entry, description="\n".join(line.text for line in body), limits=(), headings=()
    )
    found = {line.split(": ", 1)[1] for line in _entry_unaccounted(lost, body)}
    assert found == {
        "input : T1",
        "output : T1",
        "shape : [batch, channel, height, width]",
        "per‑layer",
        "T1: int8(Tensor)",
    }


def test_a_formulas_line_is_no_section_heading() -> None:
    lines = [
        text_document.Line(i + 1, 1, t)
        for i, t in enumerate(
            ["3.7.55 exGelu", "$y=", "0.5 * x * (1 + Tanh(x)) $", "输入列表", "3.7.56 Where"]
        )
    ]
    found = text_document.sections(lines, "3.7.")
    assert [(s.number, [line.text for line in s.body]) for s in found] == [
        ("3.7.55", ["$y=", "0.5 * x * (1 + Tanh(x)) $", "输入列表"]),
        ("3.7.56", []),
    ]


def test_convtransposes_group_rule_is_read_over_the_channels_its_model_reads() -> None:
    entry = catalogue.load(VERSIONS[-1]).group("rk3588").entry("ConvTranspose")
    assert entry is not None
    (group,) = [lim for lim in entry.limits if "当且仅当" in lim.text]
    read = MODELS.subjects("ConvTranspose", MODELS.specs["ConvTranspose"].defaults)
    assert set(group.rule["names"]) <= set(read)
    depthwise = {"group": 4, "input_channel": 4, "output_channel": 4}
    assert holds(group.rule, {"group": 1, "input_channel": 4, "output_channel": 8})
    assert holds(group.rule, depthwise)
    assert not holds(group.rule, {**depthwise, "group": 2})
    assert not holds(group.rule, {**depthwise, "input_channel": 8})


@pytest.mark.parametrize("version", VERSIONS)
def test_seed_limits_once_unmatched_have_their_counterpart(version: str) -> None:
    # Pow's exponent set (once subject "shape") and Hardmax's axes (once a note).
    seed = seed_catalogue()
    group = catalogue.group(version, "rk3562")
    for op, limit_id in (("Pow", "Pow/Y/values"), ("Hardmax", "Hardmax/attr/axis")):
        (limit,) = [lim for lim in seed.operators[op].limits() if lim.id == limit_id]
        found = counterpart(limit, group)
        assert found is not None and found.id == limit_id
        assert same_reading(limit, found)


def test_flash_attention_is_a_feature_with_what_it_supports() -> None:
    entry = catalogue.load(VERSIONS[-1]).group("rk3562").entry("exSDPAttention")
    assert entry is not None
    features = {
        (lim.subject, lim.values, tuple(lim.condition.items()))
        for lim in entry.limits
        if lim.kind == "feature"
    }
    assert features == {
        ("FlashAttentionV2", ("supported",), ()),
        ("dtype", ("float16",), (("FlashAttentionV2", ("on",)),)),
    }
    mask = next(lim for lim in entry.limits if lim.id == "exSDPAttention/mask/broadcast")
    assert mask.rule["when_feature_on"] == {"FA": ["[b,c,1,1]", "[1,c,1,1]", "[1,c,h,w]"]}


def test_a_cpu_constraint_of_several_clauses_is_one_limit_each() -> None:
    tile = catalogue.load(VERSIONS[-1]).cpu.entry("Tile")
    assert tile is not None
    assert [(lim.kind, lim.subject, lim.values) for lim in tile.limits] == [
        ("values", "batchsize", (1,)),
        ("unsupported", "broadcasting", None),
    ]
    assert all(lim.text == "batchsize 仅支持 1, 不支持 broadcasting" for lim in tile.limits)


def test_an_unsatisfiable_alternative_is_marked_inconsistent() -> None:
    transpose = catalogue.load(VERSIONS[-1]).group("rk3566").entry("Transpose")
    assert transpose is not None
    marked = [
        lim for lim in transpose.limits if lim.kind == "formula" and "(n1=h1=1, h1%4=0)" in lim.text
    ]
    assert len(marked) == 2 and all(lim.kind == "formula" and lim.inconsistent for lim in marked)
    rule = marked[0].rule
    assert holds(rule, {"h1": 1, "w1": 1, "n1": 4})
    assert not any(holds(rule, {"h1": h1, "w1": 3, "n1": 1}) for h1 in (1, 4, 8))
