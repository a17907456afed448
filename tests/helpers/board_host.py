"""The host side of one batch on a (hostile) loopback board, as its own process so that a test
can measure its peak memory: ``python board_host.py BOARD_FILE TIMEOUT_S`` opens a runner
session, ships one dummy case and prints what happened as JSON (error or result statuses, and
the seconds the batch took) and its peak resident memory, ``VmHWM`` of its own address space:
what the kernel's rusage says includes the memory of the process it was forked from."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from harness.boards import BoardError
from harness.boards.inventory import load_board
from harness.vendors.rknn.runners.runner_session import RunnerJob
from harness.vendors.rknn.runtimes import RUNTIMES, rknn_runtime

HOST_GRACE_S = 1.0


def main(board_file: str, timeout_s: str) -> dict[str, object]:
    board = load_board(Path(board_file), RUNTIMES)
    session = rknn_runtime(board).session(board, "hostile-test", host_grace_s=HOST_GRACE_S)
    job = RunnerJob("c0", {"model.rknn": b"not a model"}, [], "nchw", float(timeout_s), "auto")
    outcome: dict[str, object] = {}
    try:
        session.open()
        started = time.monotonic()
        try:
            outcome["statuses"] = [result.status for result in session.run([job])]
        finally:
            outcome["seconds"] = time.monotonic() - started
    except BoardError as exc:
        outcome["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        session.close()
    outcome["peak_rss"] = _peak_rss()
    return outcome


def _peak_rss() -> int:
    """Bytes at the peak of this program's resident memory (since its exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:])))
