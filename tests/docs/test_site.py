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
