"""The documentation site: it builds in strict mode (a broken link or a page outside the nav
fails), and its CLI reference, generated from the parsers, names every ``hil`` command and
every option of the commands and of the pytest plugin."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import paths

from harness.cli import build_parser

ROOT = paths.ROOT
MKDOCS = shutil.which("mkdocs", path=str(Path(sys.executable).parent))


def _reference() -> str:
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "tools/cli_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.markdown()
    return text


def _commands(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, list[str]]]:
    """(command, its option strings) for ``parser`` and every subcommand below it."""
    shown = [a for a in parser._actions if a.help != argparse.SUPPRESS]  # not old spellings
    found = [(name, [o for a in shown for o in a.option_strings])]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                found += _commands(subparser, f"{name} {sub}")
    return found


def test_the_cli_reference_names_every_command_and_option() -> None:
    text = _reference()
    commands = _commands(build_parser(), "hil")
    assert len(commands) > 20  # hil, its commands and their subcommands
    for command, options in commands:
        section = text.split(f"`{command}`\n", 1)[1]
        section = section.split("\n#", 1)[0]
        for option in options:
            if option not in ("-h", "--help"):
                assert f"`{option}" in section, (command, option)
    for option in ("--platform", "--known-issues", "--shard", "--lg-place", "--models-select"):
        assert f"| `{option}`" in text.split("## `hil`")[0]  # the pytest plugin's table
    assert not re.search(r"(?<!`)``(?!`)", text)  # help texts as plain text, no reST literals


def test_the_configuration_reference_lists_every_pytest_option() -> None:
    from _pytest.config.argparsing import Parser

    from harness.plugin import options

    parser = Parser(_ispytest=True)  # what pytest itself hands pytest_addoption
    options.pytest_addoption(parser)
    page = (ROOT / "docs/reference/configuration.md").read_text(encoding="utf-8")
    table = page.split("## pytest options", 1)[1].split("\n## ", 1)[0]
    shown = [
        option.names()[0]
        for group in parser._groups
        for option in group.options
        if option.attrs().get("help") != argparse.SUPPRESS
    ]
    assert len(shown) > 30
    assert [name for name in shown if f"`{name}" not in table] == []


def test_getting_started_counts_the_cases_the_main_job_runs(tmp_path: Path) -> None:
    """The figure of "The main job runs rk3562 (N cases ...)": the cases the suites collect
    on the default platform and tier."""
    page = (ROOT / "docs/getting-started.md").read_text(encoding="utf-8")
    (figure,) = re.findall(r"The main job runs rk3562\s+\(([\d,]+) cases", page)
    command = [sys.executable, "-m", "pytest", "suites", "--collect-only", "-q"]
    command += ["-p", "no:cacheprovider", "--results", str(tmp_path / "results")]
    collected = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert collected.returncode == 0, collected.stdout + collected.stderr
    cases = [line for line in collected.stdout.splitlines() if "[rk3562/" in line]
    assert f"{len(cases):,}" == figure


def test_the_cli_reference_shows_defaults_under_home_as_tilde(tmp_path: Path) -> None:
    """Not the home folder of the machine that built the site: a reader's differs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "HIL_"))}
    env.update(HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    made = subprocess.run(
        [sys.executable, str(ROOT / "tools/cli_reference.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert made.returncode == 0, made.stderr
    assert str(tmp_path) not in made.stdout
    assert "~/.cache/npu-hil/sim" in made.stdout and "~/.local/share/npu-hil/" in made.stdout


@pytest.mark.skipif(MKDOCS is None, reason="the docs extra is not installed")
def test_the_site_builds_strict_with_the_generated_reference(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    page = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "hil boards check" in page and "--known-issues" in page
    assert (tmp_path / "site" / "images" / "report.png").is_file()
