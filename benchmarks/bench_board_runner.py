"""Per-case cost of the batched board runner against the naive way, on a loopback board.

    python benchmarks/bench_board_runner.py [--cases 50]

Starts its own OpenSSH server on 127.0.0.1 (tests/fakes/sshd.py) as an RK3562 board whose runner
uses the simulator stand-in, converts one tiny model, then runs N cases two ways:

- batched: one RknnBoardTarget, one SSH connection, one persistent runner, one tar per batch;
- naive: per case a new SSH connection (host key check, key auth) and a fresh Python runner
  process (interpreter start and runtime import), one case, exit.

Both include shipping inputs and outputs; conversion is cached beforehand and excluded. On a
real board the runtime import is cheaper than the toolkit's here, and SSH round trips dearer.
Not a timed test: it prints numbers.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.sshd import SshServer, onnx_model, write_sysroot  # noqa: E402

from harness.boards.inventory import Board, load_board  # noqa: E402
from harness.boards.transport import Stream, open_transport, shell_command  # noqa: E402
from harness.targets.job import Job  # noqa: E402
from harness.vendors.rknn.board import RknnBoardTarget, case_job  # noqa: E402
from harness.vendors.rknn.runners.runner_session import (  # noqa: E402
    RUNNER_NAME,
    RUNNER_PATH,
    batch_frame,
    runner_module,
)
from harness.vendors.rknn.runtimes import RUNTIMES  # noqa: E402
from harness.vendors.rknn.toolkit.convert import ConversionCache  # noqa: E402


def requests(count: int) -> list[Job]:
    rng = np.random.default_rng(0)
    model = onnx_model("Relu", (1, 3, 8, 8))
    return [
        Job(
            model=model,
            inputs=[rng.standard_normal((1, 3, 8, 8)).astype(np.float32)],
            target_platform="rk3562",
            case_id=f"case {i}",
        )
        for i in range(count)
    ]


def batched(board: Board, cache: ConversionCache, cases: list[Job]) -> tuple[float, float]:
    """(seconds to open the session with a first case, seconds for all ``cases``)."""
    with RknnBoardTarget(board, cache=cache) as target:
        started = time.perf_counter()
        assert target.run(cases[0]).infra_error is None
        opened = time.perf_counter() - started
        started = time.perf_counter()
        observations = target.run_batch(cases)
        elapsed = time.perf_counter() - started
    failed = [o.infra_error or o.error for o in observations if o.outputs is None]
    assert not failed, failed
    return opened, elapsed


class StdoutReader:
    """A stream's stdout as the file object the runner's ``read_frame`` reads."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream

    def read(self, size: int) -> bytes:
        return self.stream.recv(size, timeout=60)


def naive(board: Board, cache: ConversionCache, cases: list[Job]) -> float:
    """Seconds for ``cases`` with a new connection and a fresh runner process each."""
    module = runner_module()
    folder = f"{board.workdir}/naive"
    setup = open_transport(board)
    setup.run(shell_command(["mkdir", "-p", folder]))
    command = f"cat > {shell_command([f'{folder}/{RUNNER_NAME}'])}"
    setup.run(command, stdin=RUNNER_PATH.read_bytes())
    setup.close()
    argv = [
        "exec", board.python, "-u", f"{folder}/{RUNNER_NAME}", "--workdir", folder,
        "--runtime", board.runtime.name,
    ]  # fmt: skip
    started = time.perf_counter()
    for request in cases:
        job = case_job("c0", request, cache.convert(request), board, timeout_s=60)
        transport = open_transport(board)
        stream = transport.open_stream(shell_command(argv))
        replies = StdoutReader(stream)
        assert module.read_frame(replies)[0]["type"] == "hello"
        stream.send(batch_frame([job]), timeout=60)
        frames = [module.read_frame(replies)[0] for _ in range(3)]  # started, result, done
        assert frames[1]["status"] == "ok", frames[1]
        stream.send(module.encode_frame({"type": "exit"}), timeout=60)
        stream.wait(60)
        transport.close()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50, help="cases per way (default: 50)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-board-") as tmp:
        root = Path(tmp)
        server = SshServer(root / "sshd")
        server.start()
        try:
            sysroot = write_sysroot(root / "sysroot")
            board = load_board(server.board_file(root / "boards", sysroot=str(sysroot)), RUNTIMES)
            cache = ConversionCache(root / "cache")
            cases = requests(args.cases)
            cache.convert(cases[0])  # every case shares the model: conversion is excluded
            opened, many = batched(board, cache, cases)
            slow = naive(board, cache, cases)
        finally:
            server.stop()
    per_batched, per_naive = many / args.cases, slow / args.cases
    print(f"loopback board, simulator stand-in runtime, {args.cases} cases of Relu 1x3x8x8")
    print(f"{'':28}{'per case':>12}{'total':>10}")
    print(f"{'batched runner':28}{per_batched * 1000:>10.1f}ms{many:>9.2f}s")
    print(f"{'naive (ssh + python/case)':28}{per_naive * 1000:>10.1f}ms{slow:>9.2f}s")
    print(f"{'ratio naive/batched':28}{per_naive / per_batched:>11.1f}x")
    print(f"(opening the batched session with its first case took {opened:.2f}s, once)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
