"""The results store's cost to a nightly run: the same suite selection with the store on
(the run writes itself into an SQLite store at its end, and looks up its failing cases'
history) and off (``--hil-db off``), alternating, each run a fresh pytest process.

    python benchmarks/bench_history_store.py                      # -k Pow on rk3562, 5 rounds
    python benchmarks/bench_history_store.py -k "Pow or Expand" --rounds 7
    python benchmarks/bench_history_store.py --main --rounds 3    # the main job (tox -- suites)

``--main`` runs what ``tox -- suites`` runs: every suite, the vendor's known issues, no -k.
``--caches DIR`` keeps the caches in DIR (warm from an earlier run, the warm-up is quick).

The simulator, reference and comparison caches are the benchmark's own, warmed by a first
run that is not counted, so a run is the harness's own work (the worst case for a fixed
cost such as the store's; a cold or board run is longer and the share smaller). The store
grows by one run per "on" round. Prints each round's wall and CPU seconds (the pytest process
and the simulator workers it waited for; CPU time moves less than wall time on a busy
machine), the medians and the ratios on/off, then the store's own cost measured alone: a
fresh process importing the database layer and writing the selection's results folder, as a
run does at its end. Not a test: it prints numbers.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]


WRITE = """
import sys, time
started = time.monotonic()
from pathlib import Path
from harness.policy.flaky import RunHistory
from harness.results.journal import read_records
history = RunHistory(sys.argv[1])
history.write(Path(sys.argv[2]), read_records(sys.argv[2]))
history.close()
print(time.monotonic() - started)
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(
    folder: Path, caches: Path, selection: list[str], platform: str, store: str, tag: str
) -> tuple[float, float]:
    """(wall, CPU) seconds of one pytest run of ``selection`` (what and how to run)."""
    results = folder / f"results-{tag}"
    command = [sys.executable, "-m", "pytest", *selection, "-q", "-p",
               "no:cacheprovider", "--platform", platform,
               "--results", str(results), "--hil-db", store,
               "--hil-cache", str(caches / "sim"),
               "--hil-reference-cache", str(caches / "references"),
               "--hil-comparison-cache", str(caches / "comparisons")]  # fmt: skip
    cpu, started = children_cpu(), time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if done.returncode not in (0, 1):  # 1: the selection's failing cases
        sys.exit(f"pytest exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return elapsed, children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", dest="selection", default="Pow", help="pytest -k selection")
    parser.add_argument("--platform", default="rk3562")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--main", action="store_true", help="the main job instead of -k")
    parser.add_argument("--caches", type=Path, help="keep the caches here (default: temporary)")
    args = parser.parse_args()
    selection = ["suites/test_operators.py", "-k", args.selection]
    if args.main:
        selection = ["suites", "--known-issues", "vendor"]
    with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
        folder = Path(tmp)
        caches = args.caches or folder
        store = str(folder / "history.sqlite")
        run(folder, caches, selection, args.platform, "off", "warm-up")
        times: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}
        for index in range(args.rounds):
            order = ("on", "off") if index % 2 == 0 else ("off", "on")
            for mode in order:
                location = store if mode == "on" else "off"
                times[mode].append(run(folder, caches, selection, args.platform, location, mode))
            (on_wall, on_cpu), (off_wall, off_cpu) = times["on"][-1], times["off"][-1]
            print(
                f"round {index + 1}: on {on_wall:.2f} s ({on_cpu:.2f} s CPU), "
                f"off {off_wall:.2f} s ({off_cpu:.2f} s CPU)"
            )
        for name, which in (("wall", 0), ("CPU", 1)):
            on = median(t[which] for t in times["on"])
            off = median(t[which] for t in times["off"])
            print(f"median {name}: on {on:.2f} s, off {off:.2f} s, on/off {on / off:.4f}")
        writes = [
            float(
                subprocess.run(
                    [sys.executable, "-c", WRITE, store, str(folder / "results-on")],
                    cwd=ROOT, capture_output=True, text=True, check=True,
                ).stdout
            )
            for _ in range(args.rounds)
        ]  # fmt: skip
        print(f"the store's own cost (import, open, write the folder): {median(writes):.3f} s")
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
