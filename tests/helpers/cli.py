"""The ``hil`` command run in this process, and the plugin's options in a real pytest."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import ROOT, SUITE

from harness.cli import boards as cli
from harness.cli import main


def hil(argv: list[str]) -> int:
    """The ``hil`` console script's exit status, run in this process."""
    return main(argv)


def hil_boards(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hil")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["boards", *argv])
    code: int = args.handler(args)
    return code


def run_pytest(cwd: Path, *args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", str(SUITE), "-p", "no:cacheprovider"]
    command += ["--backend", "sim", "--collect-only", "-q", *args]
    # this checkout's plugin, not an installed one
    env = {**os.environ, "PYTHONPATH": str(ROOT), **variables}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def assert_usage_error(run: subprocess.CompletedProcess[str], *words: str) -> None:
    output = run.stdout + run.stderr
    assert run.returncode == 4, output
    assert "INTERNALERROR" not in output and "Traceback" not in output, output
    assert "collected" not in output, output  # stopped before collection
    for word in words:
        assert word in run.stderr, (word, output)
