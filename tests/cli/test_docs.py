"""``hil docs show|diff|stats`` on the committed operator lists."""

from __future__ import annotations

import re

import pytest

from harness.cli import main
from harness.vendors.rknn.documents.operator_list import committed as catalogue


def hil(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["docs", *argv])
    except SystemExit as exc:  # a value an option's type refused: argparse's usage error
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_show_transpose_gives_each_platform_its_own_p_and_q(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seen = {}
    for platform in ("rk3588", "rk3562"):
        code, out, _ = hil(capsys, "show", "Transpose", "--platform", platform)
        assert code == 0
        section = catalogue.load("V2.3.2").group(platform).entry("Transpose")
        assert section is not None
        assert out.startswith(
            f"Transpose: RKNN Compiler Support Operator List V2.3.2 § {section.section}"
        )
        verbatim = set(re.findall(r"\| 不同 perm 参数限制如下：\(其中 (p=\d+, q=\d+) \)", out))
        readings = set(re.findall(r"with (p=\d+)", out))
        assert len(verbatim) == 1 and len(readings) == 1
        assert next(iter(readings)) in next(iter(verbatim))  # the reading uses the printed p
        seen[platform] = verbatim
    assert seen["rk3588"] != seen["rk3562"]


def test_show_gives_section_page_verbatim_text_and_reading(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = hil(capsys, "show", "convolution", "--platform", "rk3568", "--version", "V2.2.0")
    assert code == 0
    assert "V2.2.0 § 3.1.5 (RK3566/RK3568)" in out
    block = out.split("Convolution/attr/dilations_h")[1].split("\n  Convolution/")[0]
    assert re.search(r"\[p\. \d+\]", block)
    assert "reading: dilations_h ∈ [1, " in block
    assert "| – dilations_h ∈ [1, " in block or "| dilations_h ∈ [1, " in block


def test_rk3566_and_rk3568_name_the_same_section(capsys: pytest.CaptureFixture[str]) -> None:
    outs = [hil(capsys, "show", "Add", "--platform", p)[1] for p in ("rk3566", "rk3568")]
    assert outs[0] == outs[1] and "§ 3.1.1 " in outs[0]


def test_show_of_a_fused_entry_names_the_operators_and_the_base(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = hil(capsys, "show", "ConvolutionAddRelu", "--platform", "rk3588")
    assert code == 0
    assert "fuses: Convolution + Add + Relu" in out
    assert "limits: same as Convolution (§ 3.2.5)" in out


def test_diff_lists_the_rk3588_convolution_dilation_change(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = hil(capsys, "diff", "V2.2.0", "V2.3.2", "--platform", "rk3588")
    assert code == 1  # they differ
    lines = out.splitlines()
    at = lines.index("  changed  Convolution/attr/dilations_h")
    assert lines[at + 1].startswith("    V2.2.0: dilations_h ∈ [1, 32]  [§ 3.2.5, p. ")
    assert lines[at + 2].startswith("    V2.3.2: dilations_h ∈ [1, 31]  [§ 3.2.5, p. ")


def test_diff_of_a_version_with_itself_is_empty(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = hil(capsys, "diff", "V2.3.2", "V2.3.2", "--platform", "rk3562")
    assert code == 0
    assert out == "3.3 RK3562: V2.3.2 -> V2.3.2: 0 added, 0 removed, 0 changed\n"


def test_stats_counts_entries_per_group_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = hil(capsys, "stats")
    assert code == 0
    rows = {tuple(line.split()[:3]): line.split() for line in out.splitlines()[1:]}
    for version in catalogue.versions():
        for group in catalogue.load(version).groups:
            row = rows[(version, group.section, group.name)]
            limits, structured, free = (int(x) for x in row[4:7])
            assert int(row[3]) == len(group.entries)
            assert structured + free == limits
            assert structured / limits >= 0.9


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("show", "Transpose", "--platform", "rk9999"), "unknown platform 'rk9999'"),
        (("show", "Transpose", "--version", "V9.9.9"), "unknown document version 'V9.9.9'"),
        (("show", "NoSuchOp"), "documents no operator 'NoSuchOp'"),
        (
            ("show", "Add", "--platform", "rv1126b", "--version", "V2.2.0"),
            "no section for platform",
        ),
        (("diff", "V2.2.0", "V7"), "unknown document version 'V7'"),
    ],
)
def test_bad_input_is_exit_2_with_the_value(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    code, out, err = hil(capsys, *argv)
    assert code == 2
    assert out == ""
    # the command's own message, or argparse's for a value its type refused, under the
    # subcommand's own usage
    assert message in err and err.startswith(("hil docs ", "usage: hil docs "))


def test_show_lists_the_cpu_chapter_entry_too(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = hil(capsys, "show", "Cast")
    entry = catalogue.load("V2.3.2").cpu.entry("Cast")
    assert code == 0 and entry is not None
    assert out.startswith(
        f"Cast: RKNN Compiler Support Operator List V2.3.2 § {entry.section} (CPU)"
    )
    assert "| SRC 支持: float32/bool/int8/float16/int32/int64" in out


def test_show_softmax_gives_the_axis_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = hil(capsys, "show", "Softmax", "--platform", "rk3588")
    assert code == 0
    block = out.split("  Softmax/attr/axis")[1].split("\n  Softmax/")[0]
    assert "reading: axis ∈ {1, 3}" in block
    assert "| 做 softmax 的轴: 1,3，即 channel 和 width 方向" in block


def test_show_gives_the_whole_entry(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = hil(capsys, "show", "GRU", "--platform", "rk3588")
    assert code == 0
    entry = catalogue.load("V2.3.2").group("rk3588").entry("GRU")
    assert entry is not None and entry.notes and entry.headings
    chapter3 = out.split("\n\n")[0]
    for line in entry.description.splitlines():
        assert f"  {line}" in chapter3
    shown = {line.strip() for line in chapter3.splitlines()}
    for text in [*(lim.text for lim in entry.limits), *entry.notes, *entry.headings]:
        for line in text.splitlines():
            assert f"| {line.strip()}" in shown, line


@pytest.mark.parametrize("version", catalogue.versions())
def test_show_gives_what_follows_a_formula_line(
    capsys: pytest.CaptureFixture[str], version: str
) -> None:
    # RV1103B's exGelu writes its formula over two lines, "$y=" and "0.5 * x * (…) $"
    code, out, _ = hil(capsys, "show", "exGelu", "--platform", "rv1103b", "--version", version)
    assert code == 0
    chapter3 = out.split("\n\n")[0]
    assert "\n  0.5 * x * (1 + Tanh(" in chapter3
    for shown in ("| input : T1", "| shape : [batch, channel, height, width]", "| output : T1"):
        assert shown in chapter3
    assert "reading: T1: int8(Tensor)\n    | T1: int8(Tensor)" in chapter3


def test_show_marks_an_unsupported_entry_and_the_platforms_cpu_rule(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = hil(capsys, "show", "AveragePool", "--platform", "rk2118")
    assert code == 0
    chapter3, cpu = out.split("\n\n")[:2]
    assert "§ 3.6." in chapter3 and "UNSUPPORTED on RK2118: 不支持" in chapter3
    assert "reading: not supported" in chapter3
    for block in (chapter3, cpu):
        assert "platform-wide rule (§ 4.1; rk2118): no CPU operator runs there" in block
        assert "| RK2118 不支持所有 CPU 算子" in block
    _, elsewhere, _ = hil(capsys, "show", "AveragePool", "--platform", "rk3588")
    assert "UNSUPPORTED" not in elsewhere and "platform-wide" not in elsewhere


def test_show_says_whether_a_listed_cpu_operator_runs_on_rv1106(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rules = {
        op: [
            line
            for line in hil(capsys, "show", op, "--platform", "rv1106")[1].splitlines()
            if line.startswith("  platform-wide rule")
        ]
        for op in ("Softmax", "Transpose")
    }
    assert rules["Softmax"][0].endswith("Softmax is among the CPU operators it lists")
    assert rules["Transpose"][0].endswith("Transpose is not among the CPU operators it lists")
