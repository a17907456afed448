"""Benchmark: the hand-written ``harness.diskcache`` against python-diskcache
(``library_disk_cache.py``), on the real workload and on the cache operations alone.

Workload: a main job (``python -m pytest suites --platform P -q``) cold, every cache in a fresh
folder, then warm, a second run on what the cold one stored; each with the hand-written cache
and with python-diskcache (the same job with ``-p library_disk_cache``), interleaved (the
order swapped every round) so that a machine busy with other work weighs on both alike.
Operations: the entry sizes the hand-written cold run stored (its simulator, reference,
comparison and case caches'), each cache in a fresh folder written (put), read twice in
another order (get, every entry a hit), then kept to half its size (evict: every entry older
than ``RECENT_S``, so that both may remove any); in turn, in one process.

It prints every round, then for each figure the median and the spread (min..max) and the
ratio python-diskcache / hand-written, taken round by round (its median and spread): below 1,
python-diskcache is faster. Wall-clock seconds, and for the workload the CPU seconds of the
run's processes, which other work on the machine changes less. Not a test: run it by hand,
with python-diskcache installed, e.g.

    python benchmarks/bench_disk_cache.py                  # rk3562, 3 rounds
    python benchmarks/bench_disk_cache.py --rounds 5 --operations-only --sizes-from DIR
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import numpy as np

from harness.diskcache import RECENT_S, DiskCache, entries
from harness.vendors.rknn.toolkit.simulator.cache import CACHE as SIM_FOLDER

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
VARIANTS = ("hand-written", "python-diskcache")
CACHE_VARIABLES = {  # variable -> folder, under a run's caches folder
    "HIL_CACHE": "sim",
    "HIL_REFERENCE_CACHE": "ref",
    "HIL_COMPARISON_CACHE": "cmp",
    "HIL_CASE_CACHE": "cases",
    "HIL_CONVERSION_CACHE": "rknn",
}
MEASURED = ("sim", "ref", "cmp", "cases")  # the caches a simulator job uses
SUMMARY = re.compile(r"^=*\s*(\d+ (?:failed|passed).*) in [\d.]+s")


def main_job(platform: str, variant: str, caches: Path, results: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, pytest's summary) of one main job with ``variant``'s
    cache in ``caches``."""
    command = [sys.executable, "-m", "pytest", "suites", "--platform", platform, "-q"]
    command += ["--results", str(results), "-p", "no:cacheprovider"]
    env = {**os.environ, **{var: str(caches / name) for var, name in CACHE_VARIABLES.items()}}
    if variant == "python-diskcache":
        command += ["-p", "library_disk_cache"]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    before = _children_cpu()
    start = time.perf_counter()
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    found = [m.group(1) for line in run.stdout.splitlines() if (m := SUMMARY.match(line))]
    if run.returncode not in (0, 1) or not found:
        sys.exit(f"{variant}: pytest exited {run.returncode}:\n{run.stdout[-3000:]}{run.stderr}")
    return wall, _children_cpu() - before, found[-1]


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


Rows = dict[str, dict[str, list[float]]]  # figure -> variant -> one value a round


def workload(platform: str, rounds: int, work: Path, rows: Rows) -> Path:
    """Run the rounds; the first hand-written cold run's caches folder (for ``operations``)."""
    first: Path | None = None
    for round_ in range(rounds):
        order = VARIANTS if round_ % 2 == 0 else VARIANTS[::-1]
        for phase in ("cold", "warm"):
            for variant in order:
                caches = work / f"{round_}-{variant}" / "caches"
                results = work / f"{round_}-{variant}" / f"results-{phase}"
                wall, cpu, summary = main_job(platform, variant, caches, results)
                rows.setdefault(f"{phase} wall s", {}).setdefault(variant, []).append(wall)
                rows.setdefault(f"{phase} cpu s", {}).setdefault(variant, []).append(cpu)
                print(
                    f"round {round_} {phase:4} {variant:16} {wall:7.1f} s wall "
                    f"{cpu:7.1f} s cpu  {summary}",
                    flush=True,
                )
        first = first or work / f"{round_}-hand-written" / "caches"
    assert first is not None
    return first


def entry_sizes(caches: Path) -> dict[str, list[int]]:
    """The size of every entry of each cache a simulator job filled, by cache."""
    return {name: [e.size for e in entries(caches / name)] for name in MEASURED}


def operations(sizes: dict[str, list[int]], rounds: int, work: Path, rows: Rows) -> None:
    """put, get and evict every entry of ``sizes``, per variant, interleaved."""
    from library_disk_cache import HAND_WRITTEN, LIBRARY, use  # installs it: undone below

    rng = np.random.default_rng(0)
    blobs = {n: rng.integers(0, 256, n, np.uint8) for ns in sizes.values() for n in set(ns)}
    for round_ in range(rounds):
        order = VARIANTS if round_ % 2 == 0 else VARIANTS[::-1]
        for variant in order:
            use(LIBRARY if variant == "python-diskcache" else HAND_WRITTEN)
            times = _operations(sizes, blobs, work / f"ops-{round_}-{variant}", round_)
            for figure, seconds in times.items():
                rows.setdefault(figure, {}).setdefault(variant, []).append(seconds)
            shown = "  ".join(f"{figure} {seconds:6.3f}" for figure, seconds in times.items())
            print(f"round {round_} {variant:16} {shown}", flush=True)
    use(HAND_WRITTEN)


def _operations(
    sizes: dict[str, list[int]], blobs: dict[int, np.ndarray], folder: Path, seed: int
) -> dict[str, float]:
    """Seconds to put, get (twice each, shuffled) and evict every entry of ``sizes``."""
    times = {"put s": 0.0, "get s": 0.0, "evict s": 0.0}
    for name, found in sizes.items():
        cache = DiskCache(folder / name, SIM_FOLDER, cap=2 * 1024**3)
        keys = [hashlib.sha256(f"{name}{i}".encode()).hexdigest() for i in range(len(found))]
        start = time.perf_counter()
        for i, (key, size) in enumerate(zip(keys, found, strict=True)):
            cache.put_packed(key, {"i": i}, [blobs[size]])
        times["put s"] += time.perf_counter() - start
        shuffled = keys * 2
        random.Random(seed).shuffle(shuffled)
        start = time.perf_counter()
        hits = [cache.get_packed(key, lambda data, arrays: data["i"]) for key in shuffled]
        times["get s"] += time.perf_counter() - start
        assert None not in hits, f"{name}: a miss"
        long_ago = time.time() - 2 * RECENT_S
        for entry in entries(folder / name):  # the hand-written one's: old enough to go
            os.utime(entry.path, (long_ago, long_ago))
        cache.cap = sum(found) // 2
        if hasattr(cache, "_store"):  # python-diskcache's: its cap is its own setting
            cache._store.reset("size_limit", cache.cap)
        start = time.perf_counter()
        cache.keep_to_cap()
        times["evict s"] += time.perf_counter() - start
    return times


def report(rows: Rows) -> None:
    print(f"\n{'':14} {'hand-written':>22} {'python-diskcache':>22} {'ratio lib/hand':>24}")
    for figure, by in rows.items():
        hand, lib = by["hand-written"], by["python-diskcache"]
        ratios = [b / a for a, b in zip(hand, lib, strict=True) if a > 0]
        print(f"{figure:14} {_spread(hand):>22} {_spread(lib):>22} {_spread(ratios, 2):>24}")


def _spread(values: list[float], digits: int = 3) -> str:
    return f"{median(values):.{digits}f} ({min(values):.{digits}f}..{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--platform", default="rk3562")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--operation-rounds", type=int, default=5)
    parser.add_argument(
        "--operations-only", action="store_true", help="skip the main jobs (needs --sizes-from)"
    )
    parser.add_argument(
        "--sizes-from", type=Path, help="a caches folder of a hand-written cold run"
    )
    args = parser.parse_args()
    rows: Rows = {}
    with tempfile.TemporaryDirectory(prefix="bench-disk-cache-") as tmp:
        work = Path(tmp)
        caches = args.sizes_from
        if not args.operations_only:
            caches = workload(args.platform, args.rounds, work, rows)
        if caches is None:
            parser.error("--operations-only needs --sizes-from")
        sizes = entry_sizes(caches)
        counts = ", ".join(
            f"{name} {len(found)} ({sum(found) / 1e6:.1f} MB)" for name, found in sizes.items()
        )
        print(f"operations on the entries of a cold run: {counts}", flush=True)
        operations(sizes, args.operation_rounds, work, rows)
        report(rows)  # before the folders' removal, which takes a while


if __name__ == "__main__":
    main()
