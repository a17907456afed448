"""The version check before any case: the host's toolkit against the board's librknnrt, NPU
driver and rknn_server, on loopback boards whose fake runtime reports the versions under test."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from tests.fakes.sshd import (
    SshServer,
    onnx_model,
    runner_processes,
    write_rknn_server,
    write_sysroot,
)
from tests.helpers.cli import hil_boards
from tests.helpers.paths import SUITE

from harness.boards.discovery import check
from harness.boards.inventory import Board
from harness.plugin import BOARD_DOWN_EXIT
from harness.report.matrix import run_header
from harness.results.journal import read_records, read_run_metadata
from harness.targets.job import Job
from harness.vendors.rknn.board import RknnBoardTarget
from harness.vendors.rknn.documents.compatibility import check_versions, rules
from harness.vendors.rknn.toolkit.calls import toolkit_version
from harness.vendors.rknn.toolkit.convert import ConversionCache

OLD_RUNTIME = "1.6.0 (9a7b5d24c@2023-12-13T17:31:11)"


@pytest.mark.parametrize(
    ("toolkit", "facts", "errors", "warnings"),
    [
        ("2.5.0", {"runtime_library": "2.5.0 (x)", "npu_driver": "0.9.8"}, 0, 0),
        ("2.5.0", {"runtime_library": "1.6.0 (x)"}, 1, 1),  # major below: refused
        ("1.6.0", {"runtime_library": "2.3.2 (x)"}, 0, 1),  # a newer runtime loads older models
        ("2.5.0", {"runtime_library": "2.5.0", "rknn_server": "2.3.2 (y)"}, 1, 0),
        ("2.5.0", {"runtime_library": "2.5.0", "rknn_server": "2.5.1"}, 0, 0),
        ("2.5.0", {"runtime_library": "2.5.0", "npu_driver": "0.8.2"}, 0, 1),
        (
            "2.5.0",
            {"runtime_library": "2.5.0", "runtime_library_mtime": 200, "rknn_server_started": 100},
            1,
            0,
        ),
        (
            "2.5.0",
            {"runtime_library": "2.5.0", "runtime_library_mtime": 100, "rknn_server_started": 200},
            0,
            0,
        ),
        ("2.5.0", {"runtime_library": "unknown", "rknn_server": "unknown"}, 0, 0),
    ],
)
def test_the_rules_sort_combinations_into_errors_and_warnings(
    toolkit: str, facts: dict[str, object], errors: int, warnings: int
) -> None:
    found = check_versions(toolkit, facts)
    assert (len(found.errors), len(found.warnings)) == (errors, warnings), found
    assert found.host == {"rknn_toolkit2": toolkit}


def test_every_rule_names_a_fix() -> None:
    assert {rule["severity"] for rule in rules()} == {"error", "warning"}
    for rule in rules():
        text = check_versions("9.9.9", {rule["board"]: "0.0.1"})
        assert all("; fix: " in line for line in [*text.errors, *text.warnings])


def old_runtime_board(loopback_board: Board, tmp_path: Path) -> Board:
    sysroot = write_sysroot(tmp_path / "old-sysroot", runtime=OLD_RUNTIME)
    return dataclasses.replace(loopback_board, sysroot=str(sysroot))


def test_an_older_runtime_major_is_incompatible_naming_both_versions(
    loopback_board: Board, tmp_path: Path
) -> None:
    report = check(old_runtime_board(loopback_board, tmp_path))
    assert report["status"] == "incompatible"
    (problem,) = report["problems"]
    assert f"rknn-toolkit2 {toolkit_version()}" in problem and "librknnrt 1.6.0" in problem
    assert "Invalid RKNN model version 6" in problem and "fix: install librknnrt.so" in problem
    assert report["host_versions"] == {"rknn_toolkit2": toolkit_version()}


def test_a_stale_rknn_server_is_incompatible(loopback_board: Board, tmp_path: Path) -> None:
    sysroot = write_sysroot(tmp_path / "sysroot-server")
    library = sysroot / "usr/lib/librknnrt.so"
    updated = int(library.stat().st_mtime)
    write_rknn_server(sysroot, "2.3.2 (aaaa@2025-04-09)", started=updated - 3600)
    report = check(dataclasses.replace(loopback_board, sysroot=str(sysroot)))
    assert report["rknn_server"] == "2.3.2 (aaaa@2025-04-09)"
    assert report["rknn_server_started"] == updated - 3600
    assert report["status"] == "incompatible"
    assert "restart rknn_server" in report["problems"][0]

    write_rknn_server(sysroot, "2.3.2 (aaaa@2025-04-09)", started=int(time.time()) + 60)
    assert check(dataclasses.replace(loopback_board, sysroot=str(sysroot)))["status"] == "ok"


def test_the_board_is_refused_before_any_case_runs(
    loopback_board: Board, board_cache: ConversionCache, tmp_path: Path
) -> None:
    board = old_runtime_board(loopback_board, tmp_path)
    x = np.ones((1, 3, 4, 4), np.float32)
    job = Job(onnx_model("Relu"), [x], "rk3562", case_id="relu")
    with RknnBoardTarget(board, cache=board_cache, reconnect_s=1) as target:
        (observation,) = target.run_batch([job])
        assert runner_processes(board.workdir) == []  # no runner was ever started
        assert not list(Path(board.workdir).glob("session-*"))
    assert target.down is not None and "librknnrt 1.6.0" in target.down
    assert observation.infra_error is not None
    assert f"rknn-toolkit2 {board_cache.toolkit}" in observation.infra_error
    assert "librknnrt 1.6.0" in observation.infra_error


def test_check_command_prints_the_versions_and_exits_1_when_incompatible(
    sshd: SshServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "boards"
    sshd.board_file(folder, sysroot=str(write_sysroot(tmp_path / "s", runtime=OLD_RUNTIME)))
    assert hil_boards(["check", "--boards", str(folder)]) == 1
    out = capsys.readouterr().out
    header, row = out.splitlines()[:2]
    assert "librknnrt" in header and "rknn_server" in header and "driver" in header
    assert row.split()[:5] == ["loopback", "incompatible", "rk3562", "0.9.8", "1.6.0"]
    assert f"host: rknn_toolkit2 {toolkit_version()}" in out
    assert "Invalid RKNN model version 6" in out


def run_suite(
    tmp_path: Path, boards: Path, *args: str, results: str = "results"
) -> subprocess.CompletedProcess[str]:
    node = f"{SUITE}::test_documented_limit[rk3562/Pow/float16/values=2]"
    command = [sys.executable, "-m", "pytest", node, "-p", "no:cacheprovider", "-s"]
    command += ["--results", str(tmp_path / results), "--hil-cache", "off"]
    command += ["--hil-conversion-cache", str(tmp_path / "conversions")]
    command += ["--boards", str(boards), *args]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)


def test_a_run_stops_the_board_before_any_case_and_records_its_versions(
    sshd: SshServer, tmp_path: Path
) -> None:
    folder = tmp_path / "boards"
    sshd.board_file(folder, sysroot=str(write_sysroot(tmp_path / "s", runtime=OLD_RUNTIME)))
    for target in ("board", "auto"):  # a configured board that fails the check stops the run
        # each run a folder of its own: one results folder holds one run's configuration
        required = run_suite(tmp_path, folder, "--backend", target, results=target)
        assert required.returncode == BOARD_DOWN_EXIT, required.stdout + required.stderr
        assert f"board loopback ({sshd.user}@127.0.0.1:{sshd.port}) is incompatible" in (
            required.stderr
        )
        assert "librknnrt 1.6.0" in required.stderr
        assert "Invalid RKNN model version 6" in required.stderr
        assert not (tmp_path / target / "journal.jsonl").exists()  # no case ran

    fallback = run_suite(tmp_path, folder, "--board-fallback", "simulator")  # asked for
    assert fallback.returncode == 0, fallback.stdout + fallback.stderr
    assert "running on simulator: board loopback" in fallback.stdout
    assert "is incompatible" in fallback.stdout
    meta = read_run_metadata(tmp_path / "results")
    (board,) = meta["boards"]
    assert (board["status"], board["runtime_library"]) == ("incompatible", OLD_RUNTIME)
    assert board["npu_driver"] == "0.9.8" and board["rknn_server"] == "unknown"
    json.dumps(board)
    header = dict(run_header(read_records(tmp_path / "results"), meta))
    assert header["boards"] == (
        f"loopback incompatible (runtime library {OLD_RUNTIME}, driver 0.9.8), 1 version warning(s)"
    )
