"""One way to the terminal: names from models, model file names, known-issues references and
notes, and case ids reach the terminal without escape sequences, whichever command prints them
(``hil run`` and its layer tables, ``hil reduce``'s steps, failure lines, the nightly summary
and its warning)."""

from __future__ import annotations

import re
from pathlib import Path

import onnx
import pytest
from tests.helpers import paths
from tests.helpers.marks import needs_toolkit
from tests.helpers.nightly import POW_0, POW_0_ENTRY, POW_2, STALE_ENTRY, known_file, run_suite
from tests.helpers.user_models import five_node_model

from harness.cli import main
from harness.results.journal import read_records
from harness.terminal import emit
from harness.text import printable

# set the window title (unterminated: it would run to the next BEL), clear the screen, red,
# an 8-bit CSI and a right-to-left override
ESC = "\x1b]0;owned\x1b[2J\x1b[31m\x9b1m\u202e"
VISIBLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]")


def assert_clean(text: str) -> None:
    found = VISIBLE.search(text)
    assert found is None, f"{found.group()!r} at {found.start()}: {text[found.start() - 80 :]!r}"


def hostile_model() -> onnx.ModelProto:
    """The five-node model (its AveragePool is wrong on the simulator) with every node and
    intermediate tensor name carrying escapes."""
    model = five_node_model()
    renamed = {name: f"{ESC}{name}" for name in ("a", "r", "m")}
    for node in model.graph.node:
        node.name = f"{ESC}{node.name}"
        node.input[:] = [renamed.get(name, name) for name in node.input]
        node.output[:] = [renamed.get(name, name) for name in node.output]
    for info in model.graph.value_info:
        info.name = renamed.get(info.name, info.name)
    return model


@needs_toolkit
def test_hil_run_layers_and_reduce_print_model_names_without_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"{ESC}five.onnx"  # the model file's name becomes the case's
    onnx.save(hostile_model(), path)
    results, cache = tmp_path / "results", ["--hil-cache", str(tmp_path / "cache")]
    assert main(["run", str(path), "--layers", "--results", str(results), *cache]) == 1
    out, err = capsys.readouterr()
    assert_clean(out + err)
    assert "five.float16: wrong-result" in out.replace("/", ".")  # the failure line
    assert "first layer past tolerance: pool (AveragePool, tensor pooled)" in out
    assert re.search(r"  pool +AveragePool ", out), out  # names cleaned before cut to width

    (case,) = [r.id for r in read_records(results) if r.id.startswith("rk3562/model/")]
    assert ESC in case  # shown without its escapes, kept whole in the journal
    assert main(["reduce", str(results), case, *cache]) == 1
    out, err = capsys.readouterr()
    assert_clean(out + err)
    assert "smallest failing model: 1 nodes" in out and "pool" in out


def test_a_failure_line_naming_a_model_file_has_no_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(tmp_path / f"{ESC}missing.onnx"), "--results", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert_clean(out + err)
    assert "missing.onnx" in err


@needs_toolkit
def test_the_nightly_summary_and_warning_show_known_issues_without_escapes(
    tmp_path: Path,
) -> None:
    expected = {**POW_0_ENTRY, "reference": f"RKNN-{ESC}123", "note": f"note {ESC}"}
    changed = {**POW_0_ENTRY, "cases": [POW_2], "reference": f"RKNN-{ESC}9"}
    stale = {**STALE_ENTRY, "reference": f"X-{ESC}1", "cases": [f"rk3562/{ESC}NoSuchOp/*"]}
    known = known_file(tmp_path, [expected, changed, stale])
    run = run_suite(tmp_path, [POW_0, POW_2], "--known-issues", str(known))
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert_clean(output)
    assert "known issue RKNN-123" in output  # the expected failure's reason
    assert f"known issue changed: {POW_2} is confirmed, violation expected (RKNN-9)" in output
    assert "stale (matched no case of this run): known_issues[2] (X-1: rk3562/NoSuchOp/*)" in output


@pytest.mark.parametrize("err", [False, True])
def test_emit_is_the_commands_one_way_to_the_terminal(
    err: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    emit(f"{ESC}name\ttab\nnext line\n", err=err)
    out, error = capsys.readouterr()
    assert (error if err else out) == "name\ttab\nnext line\n" and not (out if err else error)


def test_an_unterminated_sequence_does_not_swallow_the_lines_after_it() -> None:
    assert printable("a\x1b]0;title\nverdict: violation\n") == "a\nverdict: violation\n"


def test_no_command_writes_to_the_terminal_but_through_emit() -> None:
    """Every print path of the ``hil`` commands goes through ``emit``."""
    cli = paths.ROOT / "harness" / "cli"
    for path in cli.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name != "output.py":
            assert not re.search(r"\bprint\(|sys\.std(out|err)\b", text), path
