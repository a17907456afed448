"""Escape sequences from outside reaching a terminal (hardening, round 3): the repro bundle's
script, pytest's usage errors and the harness's log lines show record, file and board text
without its escapes, as ``hil`` does."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.helpers.bundles import template
from tests.helpers.paths import SUITE

from harness.boards.inventory import Board
from harness.boards.lock import BoardLock
from harness.boards.transport import open_transport
from harness.text import printable

ESCAPES = "\x1b[2J\x1b]0;owned\x07\x9b31m"


def test_a_bundles_script_prints_the_record_without_its_escapes(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    (bundle / "inputs").mkdir(parents=True)
    (bundle / "reference").mkdir()
    (bundle / "reproduce.py").write_text(template(), encoding="utf-8")
    (bundle / "toolkit.json").write_text(json.dumps({"target_platform": "rk3562"}))
    case = {
        "id": f"rk3562/models/{ESCAPES}evil/float16",
        "op": f"models:{ESCAPES}evil",
        "dtype": "float16",
        "documented": "supported",
        "limit": "model",
        "value": f"{ESCAPES}evil",
        "verdict": "infra-error",  # the script stops after printing the record
        "backend": f"board{ESCAPES}",
        "detail": f"runner said {ESCAPES}",
    }
    (bundle / "case.json").write_text(json.dumps(case))
    run = subprocess.run(
        [sys.executable, str(bundle / "reproduce.py")], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "case rk3562/models/evil/float16: models:evil float16" in run.stdout
    assert "\x1b" not in run.stdout and "\x9b" not in run.stdout and "\x07" not in run.stdout


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=60))
def test_the_bundles_script_cleans_text_exactly_as_the_harness_does(text: str) -> None:
    scope: dict[str, object] = {"__name__": "reproduce", "__file__": "reproduce.py"}
    exec(compile(template(), "reproduce.py", "exec"), scope)  # it imports only the stdlib, numpy
    assert scope["printable"](text) == printable(text)  # type: ignore[operator]


def test_a_baseline_path_with_escapes_is_a_usage_error_without_them(tmp_path: Path) -> None:
    baseline = tmp_path / f"base{ESCAPES}line"
    baseline.mkdir()
    command = [sys.executable, "-m", "pytest", str(SUITE), "-p", "no:cacheprovider"]
    # every case deselected (--collect-only reads no baseline): still a usage error
    command += ["--baseline", str(baseline), "--results", str(tmp_path / "r"), "-k", "no_such"]
    run = subprocess.run(
        command,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(SUITE.parents[1]), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 4, run.stdout + run.stderr
    assert "--baseline" in run.stderr and "baseline" in run.stderr
    assert "\x1b" not in run.stderr + run.stdout and "\x07" not in run.stderr + run.stdout


def test_a_takeover_logged_from_board_text_carries_no_escapes(
    loopback_board: Board, caplog: pytest.LogCaptureFixture
) -> None:
    lock = Path(loopback_board.workdir) / ".hil-lock"
    lock.mkdir(parents=True)
    (lock / "token").write_text("someone\n")
    (lock / "session").write_text(f"{ESCAPES}\n")  # what a hostile board holds
    client = open_transport(loopback_board)
    try:
        with caplog.at_level(logging.WARNING, logger="harness.boards.lock"):
            how = BoardLock(client, loopback_board, "mine").acquire()
    finally:
        client.close()
    assert how.startswith("took over: the holder's SSH session")
    [message] = [record.getMessage() for record in caplog.records]
    assert "took over" in message and "\x1b" not in message and "\x07" not in message
