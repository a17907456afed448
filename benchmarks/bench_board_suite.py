"""The operator suite through pytest on loopback boards against the simulator, cold and warm.

    python benchmarks/bench_board_suite.py [-k "Pow or Expand or Gather"] [--batch 32]

Starts its own OpenSSH servers on 127.0.0.1 (tests/sshd.py) as RK3562 boards whose runtime is
the simulator stand-in, and runs ``pytest suites/test_operators.py -k ...`` as a user would,
each run in fresh results and cache folders of its own:

- sim cold: ``--backend sim``, empty simulator result cache: the toolkit builds and simulates
  every case. This is the baseline: the stand-in board does the same toolkit work per case.
- sim warm: the same again with that cache filled (no toolkit at all; for reference).
- board cold: one board, empty conversion cache: every model converted on the host (one
  converter, the next batch converted while the board runs this one), then run on the board.
- board warm: one board, the conversion cache filled by the cold run.
- 2 boards -n 2: two boards under pytest-xdist, conversion cache warm.

Wall-clock seconds per run, pytest start-up and collection included (the same in every run).
Not a timed test: it prints numbers and the issue's ratios side by side.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from sshd import SshServer, write_sysroot  # noqa: E402

SUITE = ROOT / "suites" / "test_operators.py"


def pytest_run(tmp: Path, name: str, k: str, *args: str) -> tuple[float, str]:
    """(seconds, the pytest summary line) of one suite run in ``tmp/name``."""
    command = [sys.executable, "-m", "pytest", str(SUITE), "-k", k, "-q", "-p", "no:cacheprovider"]
    command += ["--results", str(tmp / name / "results"), *args]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    started = time.perf_counter()
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=3600)
    elapsed = time.perf_counter() - started
    lines = [line for line in run.stdout.splitlines() if " in " in line and "passed" in line]
    if run.returncode not in (0, 1) or not lines:
        raise SystemExit(
            f"{name}: pytest exited {run.returncode}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
        )
    return elapsed, lines[-1].strip("= ")


def count_cases(k: str) -> int:
    command = [sys.executable, "-m", "pytest", str(SUITE), "-k", k, "--collect-only", "-q"]
    command += ["-p", "no:cacheprovider", "--backend", "sim"]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    return sum("::" in line for line in run.stdout.splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="Pow or Expand or Gather", help="pytest -k selection")
    parser.add_argument("--batch", default="32", help="--hil-batch for every run")
    args = parser.parse_args()
    cases = count_cases(args.k)
    print(
        f"selection -k {args.k!r}: {cases} cases, --hil-batch {args.batch}, "
        f"{os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-board-suite-") as folder:
        tmp = Path(folder)
        servers = [SshServer(tmp / f"sshd-{i}") for i in range(2)]
        try:
            for server in servers:
                server.start()
            sysroot = str(write_sysroot(tmp / "sysroot"))
            one, two = tmp / "boards-one", tmp / "boards-two"
            servers[0].board_file(one, name="board-a", sysroot=sysroot)
            for server, name in zip(servers, ("board-a", "board-b"), strict=True):
                server.board_file(two, name=name, sysroot=sysroot)
            common = ["--hil-batch", args.batch]
            sim = [*common, "--backend", "sim", "--hil-cache", str(tmp / "sim-cache")]
            board = [*common, "--backend", "board", "--hil-cache", "off"]
            board += ["--hil-conversion-cache", str(tmp / "conversions")]
            runs = {}
            runs["sim cold"] = pytest_run(tmp, "sim-cold", args.k, *sim)
            runs["sim warm"] = pytest_run(tmp, "sim-warm", args.k, *sim)
            runs["board cold"] = pytest_run(tmp, "board-cold", args.k, *board, "--boards", str(one))
            runs["board warm"] = pytest_run(tmp, "board-warm", args.k, *board, "--boards", str(one))
            runs["2 boards -n 2"] = pytest_run(
                tmp, "two-boards", args.k, *board, "--boards", str(two), "-n", "2"
            )
        finally:
            for server in servers:
                server.stop()
    print(f"\n{'run':16} {'seconds':>8} {'per case':>9}  pytest")
    for name, (seconds, summary) in runs.items():
        print(f"{name:16} {seconds:8.1f} {1000 * seconds / cases:7.0f}ms  {summary}")
    sim_cold, board_cold = runs["sim cold"][0], runs["board cold"][0]
    board_warm, two = runs["board warm"][0], runs["2 boards -n 2"][0]
    print("\ntarget                                   measured   goal")
    print(f"board warm / sim cold (toolkit per case)  {board_warm / sim_cold:6.2f}x   <= 1.3x")
    overhead = 1000 * (board_warm - sim_cold) / cases
    print(f"board path overhead per case              {overhead:6.0f}ms   < 30 ms")
    print(f"board cold / sim cold                     {board_cold / sim_cold:6.2f}x   <= 1.5x")
    print(f"2 boards -n 2 throughput / 1 board        {board_warm / two:6.2f}x   >= 1.6x")
    print(f"(sim warm / sim cold, result cache        {runs['sim warm'][0] / sim_cold:6.2f}x)")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
