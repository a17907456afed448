"""The board's kernel log in the folder of a case lost on the board: a loopback sshd board whose
``dmesg`` (first on its PATH) prints a boot line from long ago, an NPU driver line of now and a
line holding a secret of the run."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.fakes.sshd import SshServer, write_sysroot
from tests.helpers.paths import SUITE

from harness.boards.kernel_log import MAX_LINES, kernel_log
from harness.boards.transport import open_transport
from harness.results.journal import read_records
from harness.results.records import BOARD_LOG

CASES = ["rk3562/Pow/float16/values=2", "rk3562/Pow/float16/values=4"]
SECRET = "kmsg-Secret-4711-value"


def board_with_dmesg(
    sshd_factory: Callable[..., SshServer], tmp_path: Path, lines: int
) -> SshServer:
    """A loopback board whose dmesg prints a boot line, ``lines`` NPU lines stamped now (the
    board's uptime) and a line carrying SECRET."""
    tools = tmp_path / "tools"
    tools.mkdir()
    dmesg = tools / "dmesg"
    dmesg.write_text(
        "#!/bin/sh\n"
        "echo '[    1.000000] Booting Linux on physical CPU 0x0'\n"
        f"awk '{{for (i = 0; i < {lines}; i++) printf \"[%12.6f] RKNPU fdab0000.npu: job timeout"
        " %d\\n\", $1, i}' /proc/uptime\n"
        f"awk '{{printf \"[%12.6f] usb 1-1: token {SECRET}\\n\", $1}}' /proc/uptime\n"
    )
    dmesg.chmod(0o755)
    return sshd_factory(env={"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"})


def test_the_log_keeps_the_lines_of_the_case_and_is_capped(
    sshd_factory: Callable[..., SshServer], tmp_path: Path
) -> None:
    sshd = board_with_dmesg(sshd_factory, tmp_path, lines=MAX_LINES + 50)
    from harness.boards.inventory import load_board
    from harness.vendors.rknn.runtimes import RUNTIMES

    board = load_board(sshd.board_file(tmp_path / "boards"), RUNTIMES)
    transport = open_transport(board)
    try:
        text = kernel_log(transport, since_s=30)
    finally:
        transport.close()
    lines = text.splitlines()
    assert lines[0].startswith("# board kernel log (dmesg): lines stamped since the case")
    assert f"the newest {MAX_LINES} of {MAX_LINES + 51}" in lines[0]
    assert len(lines) == MAX_LINES + 1
    assert "Booting Linux" not in text  # long before the case
    assert lines[-1].endswith(f"token {SECRET}")  # the newest are kept


def test_a_case_that_times_out_on_the_board_keeps_the_boards_kernel_log(
    sshd_factory: Callable[..., SshServer], tmp_path: Path
) -> None:
    sshd = board_with_dmesg(sshd_factory, tmp_path, lines=3)
    folder = tmp_path / "boards"
    sshd.board_file(
        folder, sysroot=str(write_sysroot(tmp_path / "sysroot")), test_faults={CASES[0]: "hang"}
    )
    node_ids = [f"{SUITE}::test_documented_limit[{case}]" for case in CASES]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *node_ids, "-p", "no:cacheprovider", "--results",
         str(tmp_path / "results"), "--hil-cache", "off", "--hil-conversion-cache",
         str(tmp_path / "conversions"), "--boards", str(folder), "--hil-timeout", "10",
         "--keep-arrays", "all"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "HIL_TEST_KMSG_TOKEN": SECRET},  # a secret of the run
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr  # the hung case: an infra error
    records = {r.id: r for r in read_records(tmp_path / "results")}
    hung, fine = records[CASES[0]], records[CASES[1]]
    assert hung.verdict == "infra-error" and "timeout" in hung.detail, hung
    log = (tmp_path / "results" / hung.artifacts / BOARD_LOG).read_text()
    assert "RKNPU fdab0000.npu: job timeout 2" in log
    assert "Booting Linux" not in log
    assert "token <redacted>" in log and SECRET not in log
    assert not (tmp_path / "results" / fine.artifacts / BOARD_LOG).exists()
