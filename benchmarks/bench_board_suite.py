"""The operator suite through pytest on loopback boards against the simulator, cold and warm.

    python benchmarks/bench_board_suite.py [-k "Pow or Expand or Gather"] [--batch 32]

Starts its own OpenSSH servers on 127.0.0.1 (tests/fakes/sshd.py) as RK3562 boards whose runtime is
the simulator stand-in, and runs ``pytest suites/test_operators.py -k ...`` as a user would,
each run in fresh results and cache folders of its own:

- sim cold: ``--backend sim``, empty simulator result cache: the toolkit builds and simulates
  every case. This is the baseline: the stand-in board does the same toolkit work per case.
- sim warm: the same again with that cache filled (no toolkit at all; for reference).
- board cold: one board, empty conversion cache: every model converted on the host (one
  converter, the next batch converted while the board runs this one), then run on the board.
- board warm: one board, the conversion cache filled by the cold run.
- 2 boards -n 2: two boards under pytest-xdist, conversion cache warm.

Wall-clock seconds per run, pytest start-up and collection included (the same in every run),
the median of ``--repeat`` rounds (each round runs all five, in fresh folders), and how busy
the machine's cores were meanwhile: the loopback boards run on the host's own cores, so a
run that already keeps them busy cannot go faster with a second board. Not a timed test: it
prints numbers and the issue's ratios side by side.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.sshd import SshServer, write_sysroot  # noqa: E402

SUITE = ROOT / "suites" / "test_operators.py"


Run = tuple[float, float, str]  # seconds, share of the cores busy, pytest's summary line


def busy_jiffies() -> tuple[int, int]:
    """(busy, total) CPU time of the whole machine so far, from /proc/stat, in clock ticks."""
    fields = [int(field) for field in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return sum(fields) - idle, sum(fields)


def pytest_run(tmp: Path, name: str, k: str, *args: str) -> Run:
    """(seconds, share of the machine's cores busy, the pytest summary line) of one suite run
    in ``tmp/name``."""
    command = [sys.executable, "-m", "pytest", str(SUITE), "-k", k, "-q", "-p", "no:cacheprovider"]
    command += ["--results", str(tmp / name / "results"), *args]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    started, (busy, total) = time.perf_counter(), busy_jiffies()
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=3600)
    elapsed, (busy_end, total_end) = time.perf_counter() - started, busy_jiffies()
    lines = [line for line in run.stdout.splitlines() if " in " in line and "passed" in line]
    if run.returncode not in (0, 1) or not lines:
        raise SystemExit(
            f"{name}: pytest exited {run.returncode}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
        )
    return elapsed, (busy_end - busy) / max(total_end - total, 1), lines[-1].strip("= ")


def count_cases(k: str) -> int:
    command = [sys.executable, "-m", "pytest", str(SUITE), "-k", k, "--collect-only", "-q"]
    command += ["-p", "no:cacheprovider", "--backend", "sim"]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    return sum("::" in line for line in run.stdout.splitlines())


def one_round(tmp: Path, k: str, batch: str, one: Path, two: Path) -> dict[str, Run]:
    """The five runs in order, with fresh caches under ``tmp``."""
    common = ["--hil-batch", batch]
    sim = [*common, "--backend", "sim", "--hil-cache", str(tmp / "sim-cache")]
    board = [*common, "--backend", "board", "--hil-cache", "off"]
    board += ["--hil-conversion-cache", str(tmp / "conversions")]
    return {
        "sim cold": pytest_run(tmp, "sim-cold", k, *sim),
        "sim warm": pytest_run(tmp, "sim-warm", k, *sim),
        "board cold": pytest_run(tmp, "board-cold", k, *board, "--boards", str(one)),
        "board warm": pytest_run(tmp, "board-warm", k, *board, "--boards", str(one)),
        "2 boards -n 2": pytest_run(tmp, "two-boards", k, *board, "--boards", str(two), "-n", "2"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="Pow or Expand or Gather", help="pytest -k selection")
    parser.add_argument("--batch", default="32", help="--hil-batch for every run")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; medians are printed")
    args = parser.parse_args()
    cases = count_cases(args.k)
    print(
        f"selection -k {args.k!r}: {cases} cases, --hil-batch {args.batch}, {args.repeat} "
        f"rounds, {os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.1f}"
    )
    rounds = []
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
            for number in range(args.repeat):
                rounds.append(one_round(tmp / f"round-{number}", args.k, args.batch, one, two))
        finally:
            for server in servers:
                server.stop()
    seconds = {name: median(r[name][0] for r in rounds) for name in rounds[0]}
    print(f"\n{'run':16} {'seconds':>8} {'per case':>9} {'cores busy':>11}  pytest (last round)")
    for name, wall in seconds.items():
        busy = median(r[name][1] for r in rounds)
        spread = " ".join(f"{r[name][0]:.1f}" for r in rounds)
        print(
            f"{name:16} {wall:8.1f} {1000 * wall / cases:7.0f}ms {busy:10.0%}  "
            f"{rounds[-1][name][2]}  (rounds: {spread} s)"
        )
    sim_cold, board_cold = seconds["sim cold"], seconds["board cold"]
    board_warm, two_boards = seconds["board warm"], seconds["2 boards -n 2"]
    print("\ntarget (medians)                         measured   goal")
    print(f"board warm / sim cold (toolkit per case)  {board_warm / sim_cold:6.2f}x   <= 1.3x")
    overhead = 1000 * (board_warm - sim_cold) / cases
    print(f"board path overhead per case              {overhead:6.0f}ms   < 30 ms")
    print(f"board cold / sim cold                     {board_cold / sim_cold:6.2f}x   <= 1.5x")
    print(f"2 boards -n 2 throughput / 1 board        {board_warm / two_boards:6.2f}x   >= 1.6x")
    print(f"(sim warm / sim cold, result cache        {seconds['sim warm'] / sim_cold:6.2f}x)")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
