"""The names a user types: platforms in any case and ``all`` only where it is valid, versions
in either spelling, the ONNX name of an operator, "did you mean" for commands and options
under the subcommand's own usage, one spelling per option (old ones warn), plain help."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import paths

from harness.cli import build_parser, main
from harness.cli.names import command_vendor
from harness.names import document_version, sdk_version, suggestion

ROOT = paths.ROOT


def hil(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_run_platform_all_is_a_usage_error_with_no_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The harness knows "all" is not one platform: exit 2 before anything runs, so no record,
    no report and no bundle for the vendor."""
    model = tmp_path / "model.onnx"
    model.write_bytes(b"not read: the options are refused first")
    results = tmp_path / "results"
    code, out, err = hil(capsys, "run", str(model), "--platform", "all", "--results", str(results))
    assert code == 2 and out == ""
    assert err.startswith("usage: hil run ")
    assert "argument --platform: 'all' is not a platform here: give one of " in err
    assert "rk3588" in err and not results.exists()


def test_platforms_in_any_case_and_near_misses_named(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    for argv, platform in (
        (["run", "m.onnx", "--platform", "RK3588"], "rk3588"),
        (["probe", "--platform", "Rv1106B"], "rv1106b"),
    ):
        args = parser.parse_args(argv)
        assert command_vendor(args).name == "rknn"  # the repository's pin
        assert args.platform == platform
    code, _, err = hil(capsys, "run", "m.onnx", "--platform", "rk3855")
    assert code == 2
    assert "unknown platform 'rk3855'; known: rk2118, " in err
    assert err.rstrip().endswith("; did you mean rk3588?")
    assert "or all" not in err  # hil run takes one platform


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("rk356x", "rk3562, rk3566 or rk3568"),  # a family as the vendor writes it
        ("RV110X", "rv1103 or rv1106"),
        ("rk356", "rk3568"),  # as close to rk3576 as to the rk356* names: these start alike
    ],
)
def test_a_family_or_a_near_miss_of_platforms_is_named(
    capsys: pytest.CaptureFixture[str], typed: str, meant: str
) -> None:
    code, _, err = hil(capsys, "run", "m.onnx", "--platform", typed)
    assert code == 2
    assert err.rstrip().endswith(f"; did you mean {meant}?")


def test_docs_show_takes_the_onnx_name_any_case_platform_and_sdk_style_version(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = hil(
        capsys, "docs", "show", "Conv", "--platform", "RK3588", "--version", "2.3.2"
    )
    assert (code, err) == (0, "")
    assert out.startswith(
        "Convolution: RKNN Compiler Support Operator List V2.3.2 § 3.2.5 (RK3588)"
    )
    headings = [line.split(":")[0] for line in out.splitlines() if line and line[0] != " "]
    assert headings[:2] == ["Convolution", "Depthwise Convolution"]
    code, _, err = hil(capsys, "docs", "show", "Cnov", "--platform", "rk3588")
    assert code == 2
    assert (
        err == "hil docs show: V2.3.2 documents no operator 'Cnov' for rk3588; did you mean Conv?\n"
    )


def test_a_misspelled_command_or_option_is_named_with_the_subcommands_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = hil(capsys, "dcos")
    assert code == 2
    assert "invalid choice: 'dcos'; did you mean docs? (choose from layout, report," in err
    code, _, err = hil(capsys, "docs", "show", "Conv", "--platfrom", "rk3588")
    assert code == 2
    lines = err.splitlines()
    assert lines[0].startswith("usage: hil docs show ")  # not the top-level "usage: hil [-h]"
    # the usage may wrap; the message is the line after it
    message = next(line for line in lines if line.startswith("hil docs show: error:"))
    assert message == (
        "hil docs show: error: unrecognized arguments: --platfrom rk3588; did you mean --platform?"
    )


@pytest.mark.parametrize(
    ("argv", "dest", "value", "old"),
    [
        (["run", "m.onnx", "--cache", "off"], "hil_cache", "off", "--cache"),
        (["reduce", "m.onnx", "--timeout", "5"], "hil_timeout", 5.0, "--timeout"),
        (["run", "m.onnx", "--board", "b.yaml"], "boards", Path("b.yaml"), "--board"),
        (["probe", "--timeout", "7"], "hil_timeout", 7.0, "--timeout"),
    ],
)
def test_old_option_spellings_still_work_with_a_warning(
    capsys: pytest.CaptureFixture[str], argv: list[str], dest: str, value: object, old: str
) -> None:
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    new = "--" + dest.replace("_", "-")
    err = capsys.readouterr().err
    assert f"{old} is deprecated and will go in the next release; use {new}" in err
    command = build_parser()._subparsers._group_actions[0].choices[argv[0]]  # type: ignore[union-attr]
    assert not re.search(rf"(?<![\w-]){old}(?![\w-])", command.format_help())  # hidden


def test_the_new_spellings_are_the_suites_and_give_no_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["run", "m.onnx", "--hil-cache", "off", "--hil-timeout", "5", "--boards", "boards"]
    args = build_parser().parse_args(argv)
    assert (args.hil_cache, args.hil_timeout, args.boards) == ("off", 5.0, Path("boards"))
    assert capsys.readouterr().err == ""


def _parsers(
    parser: argparse.ArgumentParser, name: str
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                found += _parsers(subparser, f"{name} {sub}")
    return found


def test_every_command_has_a_plain_text_description() -> None:
    parsers = _parsers(build_parser(), "hil")
    assert {"hil layout", "hil cache", "hil known-issues", "hil boards check"} <= dict(
        parsers
    ).keys()
    for name, parser in parsers:
        assert parser.description, name
        assert "``" not in parser.format_help(), name


def test_hil_help_names_the_main_job(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = hil(capsys, "--help")
    assert code == 0
    assert "The main job is the constraint suites, run by pytest: tox -- suites" in " ".join(
        out.split()
    )


def test_versions_in_either_spelling() -> None:
    assert [sdk_version(v) for v in ("2.3.2", "V2.3.2", "v2.3.2 ")] == ["2.3.2"] * 3
    assert [document_version(v) for v in ("2.3.2", "V2.3.2", "v2.3.2")] == ["V2.3.2"] * 3
    assert sdk_version("latest") == "latest"  # not a version: left for the caller to refuse
    parser = build_parser()
    args = parser.parse_args(["diff", "a", "b", "--old-sdk", "V2.3.2", "--new-sdk", "v2.5.0"])
    assert (args.old_sdk, args.new_sdk) == ("2.3.2", "2.5.0")


def test_a_suggestion_only_for_a_near_miss() -> None:
    assert suggestion("knwon_hosts", ["host", "known_hosts", "port"]) == (
        "; did you mean known_hosts?"
    )
    assert suggestion("zzz", ["host", "known_hosts", "port"]) == ""


def test_the_suites_take_a_platform_in_any_case(tmp_path: Path) -> None:
    """``pytest suites --platform RK3562`` collects the rk3562 cases; a near miss is a usage
    error naming the closest platform."""
    suite = ROOT / "suites" / "test_operators.py"
    command = [sys.executable, "-m", "pytest", str(suite), "-p", "no:cacheprovider", "-q"]
    command += ["--collect-only", "-k", "Pow and float16", "--results", str(tmp_path / "r")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [*command, "--platform", "RK3562"], capture_output=True, text=True, timeout=600, env=env
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "rk3562/Pow/float16/values=0" in run.stdout
    run = subprocess.run(
        [*command, "--platform", "rkk3562"], capture_output=True, text=True, timeout=600, env=env
    )
    assert run.returncode == 4, run.stdout + run.stderr
    assert "--platform: unknown platform 'rkk3562'" in run.stderr
    assert "did you mean rk3562?" in run.stderr
