"""The results store's cost to a nightly run: the same suite selection with the store on
(the run writes itself into an SQLite store at its end, and looks up its failing cases'
history) and off (``--hil-db off``), alternating, each run a fresh pytest process.

    python benchmarks/bench_history_store.py                      # -k Pow on rk3562, 5 rounds
    python benchmarks/bench_history_store.py -k "Pow or Expand" --rounds 7

The simulator, reference and comparison caches are the benchmark's own, warmed by a first
run that is not counted, so a run is the harness's own work (the worst case for a fixed
cost such as the store's; a cold or board run is longer and the share smaller). The store
grows by one run per "on" round. Prints each round's seconds, the medians and the ratio
on/off. Not a test: it prints numbers.
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


def run(folder: Path, selection: str, platform: str, store: str, tag: str) -> float:
    results = folder / f"results-{tag}"
    command = [sys.executable, "-m", "pytest", "suites/test_operators.py", "-q", "-p",
               "no:cacheprovider", "--platform", platform, "-k", selection,
               "--results", str(results), "--hil-db", store,
               "--hil-cache", str(folder / "sim"),
               "--hil-reference-cache", str(folder / "references"),
               "--hil-comparison-cache", str(folder / "comparisons")]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if done.returncode not in (0, 1):  # 1: the selection's failing cases
        sys.exit(f"pytest exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", dest="selection", default="Pow", help="pytest -k selection")
    parser.add_argument("--platform", default="rk3562")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
        folder = Path(tmp)
        store = str(folder / "history.sqlite")
        run(folder, args.selection, args.platform, "off", "warm-up")
        times: dict[str, list[float]] = {"on": [], "off": []}
        for index in range(args.rounds):
            order = ("on", "off") if index % 2 == 0 else ("off", "on")
            for mode in order:
                location = store if mode == "on" else "off"
                times[mode].append(run(folder, args.selection, args.platform, location, mode))
            print(f"round {index + 1}: on {times['on'][-1]:.2f} s, off {times['off'][-1]:.2f} s")
        on, off = median(times["on"]), median(times["off"])
        print(f"median: on {on:.2f} s, off {off:.2f} s, on/off {on / off:.4f}")
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
