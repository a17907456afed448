"""Connection trouble said at once and in words, and a board file whose key or known_hosts
file is not there refused as bad input, on a real loopback sshd (tests/fakes/sshd.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.fakes.sshd import SshServer, onnx_model, write_sysroot
from tests.helpers import paths

from harness.boards.inventory import Board
from harness.boards.ssh import connect
from harness.boards.transport import BoardConnectionError
from harness.cli import main

ROOT = paths.ROOT


def test_a_refused_connection_is_named_in_words(loopback_board: Board, sshd: SshServer) -> None:
    sshd.stop()
    with pytest.raises(BoardConnectionError) as info:
        connect(loopback_board, timeout=3)
    assert str(info.value) == (
        f"board loopback ({sshd.user}@127.0.0.1:{sshd.port}): cannot connect: "
        "connection refused (nothing listens on that port)"
    )


def hil(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("hil")), *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_hil_run_on_a_refusing_board_says_so_at_once_and_each_retry(
    sshd: SshServer, tmp_path: Path
) -> None:
    board = sshd.board_file(tmp_path / "boards", sysroot=str(write_sysroot(tmp_path / "sys")))
    (tmp_path / "relu.onnx").write_bytes(onnx_model("Relu"))
    sshd.stop()
    started = time.monotonic()
    run = hil(tmp_path, "run", "relu.onnx", "--boards", str(board), "--results", "results")
    assert run.stderr is not None
    first = run.stderr.readline()
    said_at = time.monotonic() - started
    still_running = run.poll() is None  # the retries go on for 30 s after the first line
    out, rest = run.communicate(timeout=300)
    took = time.monotonic() - started
    where = f"board loopback ({sshd.user}@127.0.0.1:{sshd.port})"
    assert first.startswith(f"{where}: cannot connect: connection refused"), first + rest
    assert still_running, first + rest
    retries = [line for line in (first + rest).splitlines() if "attempt" in line]
    assert retries[0].endswith("attempt 1 failed, next in 0.5 s (gives up 30 s after the first)")
    assert retries[1].endswith("attempt 2 failed, next in 1 s (gives up 30 s after the first)")
    assert all(line.startswith(f"{where}: cannot connect: connection refused") for line in retries)
    assert "Errno" not in first + rest + out and "Unable to connect" not in rest + out
    assert run.returncode == 3, out + rest  # infrastructure trouble
    assert "infra-error" in out and "connection refused" in out
    # the case never reached the board: no layer table
    assert not re.search(r"^\s*layer\s+op\s+target", out, re.M), out
    print(f"first line after {said_at:.1f} s, {len(retries)} retry lines, exit after {took:.1f} s")


@pytest.mark.parametrize("key", ["auth.key_file", "known_hosts"])
def test_a_missing_key_or_known_hosts_file_is_bad_input(
    sshd: SshServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    missing = tmp_path / "no such file"
    fields = {"auth": {"key_file": str(missing)}} if key == "auth.key_file" else {}
    fields |= {"known_hosts": str(missing)} if key == "known_hosts" else {}
    board = sshd.board_file(tmp_path / "boards", **fields)
    (tmp_path / "relu.onnx").write_bytes(onnx_model("Relu"))
    model = str(tmp_path / "relu.onnx")
    results = ["--results", str(tmp_path / "results")]
    assert main(["run", model, "--boards", str(board), *results]) == 2
    err = capsys.readouterr().err
    assert str(board) in err and key in err and f"{missing} does not exist" in err, err

    with pytest.raises(SystemExit) as exited:
        main(["boards", "check", "--boards", str(tmp_path / "boards")])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert str(board) in err and key in err and f"{missing} does not exist" in err, err


def test_a_suite_with_a_missing_key_file_is_a_usage_error(sshd: SshServer, tmp_path: Path) -> None:
    board = sshd.board_file(tmp_path / "boards", auth={"key_file": "gone_ed25519"})
    suite = ROOT / "suites" / "test_operators.py"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", f"{suite}::test_documented_limit", "-p",
         "no:cacheprovider", "--boards", str(tmp_path / "boards"), "--results",
         str(tmp_path / "results")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 4, run.stdout + run.stderr  # pytest's usage error
    assert str(board) in run.stderr and "auth.key_file" in run.stderr
    assert f"{tmp_path / 'boards' / 'gone_ed25519'} does not exist" in run.stderr
