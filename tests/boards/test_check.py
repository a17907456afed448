"""Discovery and ``hil boards check`` against real sshd "boards" with fake sysroots."""

from __future__ import annotations

import dataclasses
import json
import platform
import shlex
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from tests.fakes.sshd import SshServer, alive, write_sysroot
from tests.helpers.cli import hil_boards

from harness.boards.discovery import check, read_facts
from harness.boards.inventory import Board
from harness.boards.transport import open_transport


def test_discovery_reads_the_board_facts(loopback_board: Board) -> None:
    report = check(loopback_board)
    assert report["status"] == "ok" and report["problems"] == []
    assert report["soc"] == "rk3562"
    assert report["compatible"] == ["rockchip,rk3562-evb", "rockchip,rk3562"]
    assert report["npu_driver"] == "0.9.8"
    assert report["runtime_library"] == "2.3.2 (429f97ae6b@2025-04-09T09:09:27)"
    assert report["python"] == platform.python_version()
    assert report["rknn_toolkit_lite2"] == "unknown"  # not installed on this "board"
    free = shutil.disk_usage(Path(loopback_board.workdir).parent.parent).free
    assert abs(report["disk_free_bytes"] - free) < 256 * 2**20
    json.dumps(report)  # fit for run metadata


def test_missing_facts_are_unknown_not_errors(loopback_board: Board, tmp_path: Path) -> None:
    empty = tmp_path / "empty-sysroot"
    empty.mkdir()
    board = dataclasses.replace(loopback_board, sysroot=str(empty), python="/no/such/python")
    report = check(board)
    assert report["status"] == "ok"
    for key in ("soc", "npu_driver", "runtime_library", "python", "rknn_toolkit_lite2"):
        assert report[key] == "unknown", key
    assert report["compatible"] == []
    assert isinstance(report["disk_free_bytes"], int)


def test_other_driver_locations_are_probed(loopback_board: Board, tmp_path: Path) -> None:
    root = write_sysroot(tmp_path / "other")
    shutil.rmtree(root / "sys")
    (root / "proc/rknpu").mkdir(parents=True)
    (root / "proc/rknpu/driver_version").write_text("RKNPU driver: v0.8.2\n")
    client = open_transport(loopback_board)
    try:
        facts = read_facts(dataclasses.replace(loopback_board, sysroot=str(root)), client)
    finally:
        client.close()
    assert facts["npu_driver"] == "0.8.2"


def test_a_board_reporting_another_soc_is_flagged(loopback_board: Board, tmp_path: Path) -> None:
    root = write_sysroot(tmp_path / "rk3588", "rockchip,rk3588-evb1-lp4-v10\0rockchip,rk3588\0")
    report = check(dataclasses.replace(loopback_board, sysroot=str(root)))
    assert report["status"] == "mismatch"
    assert report["soc"] == "rk3588"
    assert "rk3588" in report["problems"][0] and "soc: rk3562" in report["problems"][0]


def test_hostile_paths_reach_the_board_as_data(loopback_board: Board, tmp_path: Path) -> None:
    hostile = tmp_path / "sys root; touch PWNED1 $(touch PWNED2) `touch PWNED3` 'q' \"dq\""
    root = write_sysroot(hostile)
    workdir = tmp_path / "work; touch PWNED4" / "$(touch PWNED5)"
    board = dataclasses.replace(loopback_board, sysroot=str(root), workdir=str(workdir))
    report = check(board)
    assert (report["status"], report["soc"], report["npu_driver"]) == ("ok", "rk3562", "0.9.8")
    home = Path.home()
    for n in range(1, 6):
        for folder in (tmp_path, home, Path("/")):
            assert not (folder / f"PWNED{n}").exists()


def test_unreachable_board_is_reported_not_raised(loopback_board: Board, sshd: SshServer) -> None:
    sshd.stop()
    report = check(loopback_board, timeout=3)
    assert report["status"] == "unreachable"
    assert "cannot connect" in report["problems"][0]


def test_a_hanging_probe_stops_at_the_timeout_and_leaves_nothingalive(
    loopback_board: Board, tmp_path: Path
) -> None:
    pid_file = tmp_path / "python.pid"
    python = tmp_path / "hanging-python"  # the probe's Python step never returns
    python.write_text(f"#!/bin/sh\necho $$ > {shlex.quote(str(pid_file))}\nexec sleep 3600\n")
    python.chmod(0o755)
    started = time.monotonic()
    report = check(dataclasses.replace(loopback_board, python=str(python)), timeout=2)
    assert time.monotonic() - started < 8  # connect, then 2 s of probing
    assert report["status"] == "unreachable"
    assert "did not finish within 2 s" in report["problems"][0]
    pid = int(pid_file.read_text())
    give_up = time.monotonic() + 5  # the board-side deadline ticks once a second
    while alive(pid) and time.monotonic() < give_up:
        time.sleep(0.1)
    running = alive(pid)
    if running:
        psutil.Process(pid).kill()
    assert not running, "the hung probe is still running on the board"


@pytest.fixture
def two_boards(
    sshd_factory: Callable[[], SshServer], tmp_path: Path
) -> tuple[Path, SshServer, SshServer]:
    folder = tmp_path / "boards"
    first, second = sshd_factory(), sshd_factory()
    root = write_sysroot(tmp_path / "sysroot")
    first.board_file(folder, name="board-a", sysroot=str(root))
    second.board_file(folder, name="board-b", sysroot=str(root))
    second.board_file(folder / "examples", name="example-ignored", port=1)
    return folder, first, second


def test_check_command_all_healthy(
    two_boards: tuple[Path, SshServer, SshServer], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _, _ = two_boards
    assert hil_boards(["check", "--boards", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert "checking board-a (" in err and "checking board-b (" in err and "example" not in err
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["board", "status", "soc"]
    assert lines[1].split()[:5] == ["board-a", "ok", "rk3562", "0.9.8", "2.3.2"]
    assert "GiB" in lines[1]


def test_check_command_json_and_exit_1_when_a_board_is_down(
    two_boards: tuple[Path, SshServer, SshServer], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _, second = two_boards
    second.stop()
    assert hil_boards(["check", "--boards", str(folder), "--json", "--timeout", "3"]) == 1
    reports = json.loads(capsys.readouterr().out)
    assert [(r["board"], r["status"]) for r in reports] == [
        ("board-a", "ok"),
        ("board-b", "unreachable"),
    ]


def test_check_command_exit_1_on_a_soc_mismatch(
    two_boards: tuple[Path, SshServer, SshServer], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _, _ = two_boards
    path = folder / "board-b.yaml"
    path.write_text(path.read_text().replace("rk3562", "rk3566"))
    assert hil_boards(["check", "--boards", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "mismatch" in out and "board-b: board reports SoC rk3562" in out


def test_check_command_bad_input_exits_2_naming_file_and_field(
    tmp_path: Path, sshd: SshServer, capsys: pytest.CaptureFixture[str]
) -> None:
    path = sshd.board_file(tmp_path, runtime="tflite")
    with pytest.raises(SystemExit) as info:
        hil_boards(["check", "--boards", str(tmp_path)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert str(path) in err and "runtime" in err and "tflite" in err


def test_check_command_empty_folder_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        hil_boards(["check", "--boards", str(tmp_path)])
    assert info.value.code == 2
    assert "no board files" in capsys.readouterr().err


def test_check_command_takes_board_files_and_folders(
    two_boards: tuple[Path, SshServer, SshServer], capsys: pytest.CaptureFixture[str]
) -> None:
    """``hil boards check FILE``, as ``hil run --boards FILE`` takes a board; a file and the
    folder holding it check that board once."""
    folder, _, _ = two_boards
    assert hil_boards(["check", str(folder / "board-a.yaml")]) == 0
    out, err = capsys.readouterr()
    assert "checking board-a (" in err and "board-b" not in err + out
    assert hil_boards(["check", str(folder / "board-b.yaml"), str(folder)]) == 0
    out, _ = capsys.readouterr()
    assert [line.split()[0] for line in out.splitlines()[1:3]] == ["board-b", "board-a"]
