"""The operator suite on a loopback board (real sshd, real runner), and the simulator fallback.

As a user runs it: with a board file for the platform the suite runs through SSH and every
result names the board; without one the same command runs on the simulator and says so; with
the board down it stops (or, when asked, runs on the simulator, every record saying why).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest
from tests.fakes.sshd import SshServer, onnx_model, write_sysroot
from tests.helpers.declared import MODELS, platform_cases
from tests.helpers.paths import SUITE

from harness.boards.inventory import Board
from harness.diskcache import entries
from harness.plugin import BOARD_DOWN_EXIT
from harness.report.matrix import run_header
from harness.results.journal import read_records, read_run_metadata
from harness.targets.job import Job
from harness.targets.selection import BoardWithFallback
from harness.vendors.rknn.board import RknnBoardTarget
from harness.vendors.rknn.toolkit.convert import ConversionCache
from harness.vendors.rknn.toolkit.simulator import SimulatorPool

CASES = ["rk3562/Pow/float16/values=4", "rk3562/Pow/float16/values=2"]


def run_suite(
    tmp_path: Path,
    boards: Path,
    *args: str,
    env: dict[str, str] | None = None,
    capture: bool = False,
) -> subprocess.CompletedProcess[str]:
    """The suite's CASES; pytest's capture off unless ``capture``."""
    node_ids = [f"{SUITE}::test_documented_limit[{case_id}]" for case_id in CASES]
    command = [sys.executable, "-m", "pytest", *node_ids, "-p", "no:cacheprovider"]
    command += [] if capture else ["-s"]
    command += ["--results", str(tmp_path / "results"), "--hil-cache", "off"]
    command += ["--hil-conversion-cache", str(tmp_path / "conversions")]
    command += ["--boards", str(boards), *args]
    return subprocess.run(
        command,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def board_folder(sshd: SshServer, tmp_path: Path) -> Path:
    folder = tmp_path / "boards"
    sshd.board_file(folder, sysroot=str(write_sysroot(tmp_path / "sysroot")))
    return folder


def test_cases_run_on_the_board_and_name_it(sshd: SshServer, tmp_path: Path) -> None:
    run = run_suite(tmp_path, board_folder(sshd, tmp_path), "--backend", "board")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "running on loopback" in run.stdout
    records = {r.id: r for r in read_records(tmp_path / "results")}
    assert {r.backend for r in records.values()} == {"loopback"}
    assert records[CASES[0]].verdict == "limit-confirmed"  # placement from the host build
    assert records[CASES[1]].verdict == "confirmed"
    assert records[CASES[1]].versions["board_soc"] == "rk3562"
    meta = read_run_metadata(tmp_path / "results")
    assert [board["status"] for board in meta["boards"]] == ["ok"]


def test_every_results_directory_shares_one_conversion_cache(
    sshd: SshServer, tmp_path: Path
) -> None:
    boards = board_folder(sshd, tmp_path)
    first = run_suite(tmp_path, boards, "--backend", "board")
    assert first.returncode == 0, first.stdout + first.stderr
    built = {e.path: e.used for e in entries(tmp_path / "conversions")}
    # each case's model and its inside control's, which the selection leaves out (the
    # typical model's Pow is values=2's)
    by_id = {case.id: case for case in platform_cases("rk3562")}
    controls = {by_id[case_id].control.id for case_id in CASES}
    models = {
        MODELS.build("Pow", by_id[case_id].params, 0).onnx_bytes for case_id in {*CASES, *controls}
    }
    assert len(built) == len(models) == 3
    assert not list((tmp_path / "results").glob(".conversion*"))
    second = run_suite(tmp_path, boards, "--backend", "board", "--results", str(tmp_path / "r2"))
    assert second.returncode == 0, second.stdout + second.stderr
    assert {r.backend for r in read_records(tmp_path / "r2")} == {"loopback"}
    again = {e.path: e.used for e in entries(tmp_path / "conversions")}
    assert set(again) == set(built)  # nothing converted again: the entries were reused
    assert all(again[path] >= used for path, used in built.items())


def test_without_a_board_file_the_same_command_uses_the_simulator(tmp_path: Path) -> None:
    (tmp_path / "boards").mkdir()
    run = run_suite(tmp_path, tmp_path / "boards")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "running on simulator: no board configured" in run.stdout
    assert {r.backend for r in read_records(tmp_path / "results")} == {"simulator"}


@pytest.mark.parametrize(
    ("args", "env"),
    [([], {}), (["-n", "2"], {}), ([], {"PYTHONUNBUFFERED": "1"})],
    ids=["plain", "xdist", "unbuffered"],
)
def test_a_configured_board_that_does_not_answer_stops_the_run(
    sshd: SshServer, tmp_path: Path, args: list[str], env: dict[str, str]
) -> None:
    boards = board_folder(sshd, tmp_path)
    sshd.stop()
    run = run_suite(tmp_path, boards, *args, env=env, capture=True)  # --backend auto
    assert run.returncode == BOARD_DOWN_EXIT, run.stdout + run.stderr
    said = f"board loopback ({sshd.user}@127.0.0.1:{sshd.port}) is unreachable"
    assert said in run.stderr and "the run stopped before any case" in run.stderr
    assert not (tmp_path / "results" / "journal.jsonl").exists()  # no case ran
    meta = read_run_metadata(tmp_path / "results")
    (down,) = meta["board_down"]
    assert (down["board"], down["status"], down["cases"]) == ("loopback", "unreachable", "not run")
    header = dict(run_header([], meta))
    assert header["board down"].startswith(f"loopback ({sshd.user}@127.0.0.1:{sshd.port}) ")
    assert header["board down"].endswith("the run stopped before any case")
    assert next(iter(header)) == "board down"  # the report's first line

    required = run_suite(tmp_path, boards, "--require-board")
    assert required.returncode == BOARD_DOWN_EXIT
    assert "board loopback" in required.stderr


@pytest.mark.parametrize("args", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_the_simulator_fallback_is_asked_for_and_every_record_says_so(
    sshd: SshServer, tmp_path: Path, args: list[str]
) -> None:
    boards = board_folder(sshd, tmp_path)
    sshd.stop()
    run = run_suite(tmp_path, boards, "--board-fallback", "simulator", *args, capture=True)
    assert run.returncode == 0, run.stdout + run.stderr
    note = "board loopback"
    records = read_records(tmp_path / "results")
    assert {r.backend for r in records} == {"simulator"} and len(records) == len(CASES)
    for record in records:
        (said,) = [w for w in record.warnings if w.startswith(note)]
        assert "is unreachable" in said and "ran on the simulator instead" in said
    summary = run.stdout[run.stdout.index("npu-hil boards down") :]
    assert "board loopback" in summary.splitlines()[1]
    assert "running on simulator: board loopback" in run.stdout  # the header, before any case
    meta = read_run_metadata(tmp_path / "results")
    header = run_header(records, meta)
    assert header[0][0] == "board down" and "its cases ran on the simulator" in header[0][1]


def test_backend_board_without_a_board_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "boards").mkdir()
    run = run_suite(tmp_path, tmp_path / "boards", "--backend", "board")
    assert run.returncode == 4
    assert "no board file for platform rk3562" in run.stderr


def test_two_boards_under_xdist_each_run_cases(
    sshd_factory: Callable[[], SshServer], tmp_path: Path
) -> None:
    folder = tmp_path / "boards"
    sysroot = str(write_sysroot(tmp_path / "sysroot"))
    for name in ("board-a", "board-b"):
        sshd_factory().board_file(folder, name=name, sysroot=sysroot)
    run = run_suite(tmp_path, folder, "--backend", "board", "-n", "2")
    assert run.returncode == 0, run.stdout + run.stderr
    records = read_records(tmp_path / "results")
    assert len(records) == len(CASES)
    assert {r.backend for r in records} <= {"board-a", "board-b"}


def test_a_board_lost_mid_run_moves_later_cases_to_the_simulator(
    sshd: SshServer, loopback_board: Board, board_cache: ConversionCache
) -> None:
    def relu(case_id: str) -> Job:
        x = np.random.default_rng(3).standard_normal((1, 3, 4, 4)).astype(np.float32)
        return Job(onnx_model("Relu"), [x], "rk3562", case_id=case_id)

    with ExitStack() as stack:

        def simulator() -> SimulatorPool:
            return stack.enter_context(SimulatorPool())

        board = stack.enter_context(
            RknnBoardTarget(loopback_board, cache=board_cache, reconnect_s=2)
        )
        fallback = BoardWithFallback(board, simulator, to_simulator=True)
        assert fallback.run(relu("first")).backend == "loopback"
        sshd.stop()
        moved = fallback.run(relu("second"))
        assert board.down
        assert moved.backend == "simulator"
        assert moved.infra_error is None
        expected = np.maximum(relu("x").inputs[0], 0)
        np.testing.assert_allclose(moved.outputs[0], expected, rtol=1e-3)  # fp16 rounding
