"""Benchmark: the operator suite on the simulator against the floor of calling the toolkit.

Three runs over the same cases, each in a fresh process so import costs count alike:

- floor: one process imports rknn-toolkit2 once and, for every case's ready-made model and
  inputs, does RKNN() / config / load_onnx / build / init_runtime / inference / release;
- cold: the harness as the pytest plugin drives it (case generation, the scheduler's growing
  batches; model generation, host references, simulator worker, comparison, verdict, journal,
  artifacts) with empty simulator result, host reference, comparison and case list caches;
- warm: the same again with the caches the cold run filled;
- new-sdk: an empty simulator result cache but the case list, host references and comparisons
  cached,
  as on the first run with a new SDK release (its results are keyed by the toolkit version;
  the references depend only on the models and inputs, a comparison only on the arrays
  compared, so a new release's unchanged outputs find theirs).

The default leaves out the slow tier, as ``--tier default`` does (``--tier full`` keeps it).
Each of ``--rounds`` rounds runs all four in fresh folders; it prints every round side by
side, with how busy the machine's cores were, then the medians and the ratios cold/floor
(target <= 1.3), new-sdk/floor and cold/warm (target >= 10), in wall-clock seconds and in CPU
seconds of every process of the run (the toolkit's workers included), which a machine busy
with other work changes far less. Then the same per operator family
(the module declaring the operator's model, the vendor's ``Declarations.families``): each run
times every case from the end of the one before to the end of its own, so a family's seconds
are its share of the case loop (a case that ends the floor's process counts until it died),
and the loop's total beside the process's shows what start-up (imports, the toolkit's among
them: the floor's in its process, cold's and new-sdk's in the simulator worker, which warm
never starts; the catalogue, case generation, and the floor's fresh processes after a death)
costs. Not a test: run it by hand, e.g.

    python benchmarks/bench_suite_simulator.py                   # the rk3562 suite, 3 rounds
    python benchmarks/bench_suite_simulator.py --ops Pow Expand  # a quicker subset
    python benchmarks/bench_suite_simulator.py --family pooling  # one operator family
    python benchmarks/bench_suite_simulator.py --platform rk3588 # another platform's suite
    python benchmarks/bench_suite_simulator.py --keep runs/bench  # its journals kept, to compare
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import numpy as np
from bench_board_suite import busy_jiffies

from harness.cases.case import Case
from harness.cases.case_cache import CaseCache
from harness.cases.operators import operator_cases
from harness.judge.comparison_cache import ComparisonCache
from harness.judge.verdict import ARRAYS_DROPPED_FOR
from harness.models.reference import ReferenceCache
from harness.pipeline import CaseExecutor, job_for
from harness.policy.tiers import DEFAULT_BUDGET_S, slow_reason
from harness.scheduler import Scheduler
from harness.vendors import vendor_named
from harness.vendors.rknn.documents.operators import operator_catalogue
from harness.vendors.rknn.toolkit.calls import write_dataset
from harness.vendors.rknn.toolkit.simulator import SimCache, SimulatorPool
from harness.vendors.rknn.vendor import VENDOR
from harness.vendors.stages import default_sdk, stages_for

RUNS = ("floor", "cold", "warm", "new-sdk")
MODELS = VENDOR.declarations
FAMILIES = MODELS.families
FAMILY_OF = {op: family for family, ops in FAMILIES.items() for op in ops}
# A run's events, in its folder, one JSON line each: [case index, wall-clock time it ended],
# or [null, time] when a process is ready for its first case (the time before it is
# start-up). Appended, never rewritten: rewriting a growing file after every case cost more
# than a warm case (ext4 flushes a file truncated and written again when it is closed).
EVENTS = "events.jsonl"


def note_event(events_file: Path, index: int | None) -> None:
    with events_file.open("a") as events:
        events.write(json.dumps([index, time.time()]) + "\n")


def select(
    ops: list[str] | None, tier: str, platform: str, cache: Path | None = None
) -> list[Case]:
    """The cases of the run; generated, or from the case list cache in ``cache``."""
    catalogue = operator_catalogue(platform)
    if cache is None:
        cases = operator_cases(catalogue, MODELS, ops=ops).cases
    else:
        cases = CaseCache(cache).cases(catalogue, MODELS, ops=ops).cases
    if tier == "full":
        return cases
    return [case for case in cases if not slow_reason(case.id, DEFAULT_BUDGET_S)]


def prepare_floor(cases: list[Case], folder: Path) -> None:
    """The floor's input: each case's model, inputs and dataset, ready on disk."""
    for index, case in enumerate(cases):
        built = MODELS.build(case.op, case.params, case.seed)
        job = job_for(case, built, MODELS.specs)
        case_dir = folder / f"{index:04d}"
        case_dir.mkdir(parents=True)
        (case_dir / "model.onnx").write_bytes(built.onnx_bytes)
        for i, array in enumerate(built.inputs):
            np.save(case_dir / f"input_{i}.npy", array)
        if job.dataset:
            write_dataset(job.dataset, case_dir)
        (case_dir / "target").write_text(case.platform)


def run_floor(folder: Path, first: int) -> None:
    """The floor from the ``first`` case on, noting in ``folder/at`` which case it is at."""
    from rknn.api import RKNN

    devnull = os.open(os.devnull, os.O_WRONLY)
    case_dirs = sorted(p for p in folder.iterdir() if p.is_dir())
    events_file = folder / EVENTS  # kept across the processes of one floor run
    note_event(events_file, None)
    for index in range(first, len(case_dirs)):
        (folder / "at").write_text(str(index))
        case_dir = case_dirs[index]
        os.chdir(case_dir)
        inputs = [np.load(p) for p in sorted(case_dir.glob("input_*.npy"))]
        quantize = (case_dir / "dataset.txt").exists()
        saved = os.dup(1), os.dup(2)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        rknn = RKNN(verbose=True)
        try:  # like the harness, a case the toolkit rejects stops at the failing call
            rknn.config(target_platform=(case_dir / "target").read_text())
            if (
                rknn.load_onnx(model="model.onnx") == 0
                and rknn.build(
                    do_quantization=quantize, dataset="dataset.txt" if quantize else None
                )
                == 0
                and rknn.init_runtime() == 0
            ):
                rknn.inference(inputs=inputs, data_format="nchw")
        except ValueError:
            pass  # the toolkit raises ValueError for the models it refuses
        finally:
            rknn.release()
            for fd, saved_fd in ((1, saved[0]), (2, saved[1])):
                os.dup2(saved_fd, fd)
                os.close(saved_fd)
        note_event(events_file, index)


def run_harness(
    cases: list[Case], platform: str, results: Path, sim: Path, host: Path, start: bool = False
) -> None:
    """The cases through the harness, noting their events in ``results``; with ``start``, its
    simulator worker imports the toolkit before the case loop, as the floor's process does
    (a run whose results are all cached never starts one)."""
    references, comparisons = ReferenceCache(host / "ref"), ComparisonCache(host / "cmp")
    vendor = vendor_named("rknn")  # the benchmark measures the RKNN simulator
    stages = stages_for(
        vendor,
        [operator_catalogue(platform)],
        references=references.references,
        comparisons=comparisons.compare_references,
        drop_arrays_for=ARRAYS_DROPPED_FOR["findings"],  # the plugin's default
    )
    with SimulatorPool(workers=1, timeout_s=1200, cache=SimCache(sim)) as pool:
        executor = CaseExecutor(results, pool, stages, default_sdk(vendor))
        scheduler = Scheduler(executor.execute_many)
        results.mkdir(parents=True, exist_ok=True)
        if start:
            pool.start()
        note_event(results / EVENTS, None)
        for index, case in enumerate(cases):
            scheduler.record(case, iter(cases[index + 1 :]))
            note_event(results / EVENTS, index)
        scheduler.close()


def timed(args: list[str], resume: Path | None = None) -> tuple[float, float, float]:
    """Seconds of one run in a fresh process, the share of the machine's cores busy, and the
    CPU seconds its processes used.

    With ``resume`` (the floor's progress file), a process the toolkit ended inside a case
    (its compiler crashes on some documented values) is followed by a fresh one from the
    next case, as the harness's simulator pool replaces a dead worker.
    """
    start, (busy, total), cpu = time.perf_counter(), busy_jiffies(), _children_cpu()
    first = 0
    while True:
        run = subprocess.run([sys.executable, __file__, *args, "--first", str(first)])
        if run.returncode == 0:
            break
        died_at = int(resume.read_text()) if resume and resume.exists() else -1
        if resume is None or died_at < first:  # not inside a case: a fault of the benchmark's
            raise SystemExit(f"{' '.join(args)}: exit status {run.returncode}")
        print(f"floor: the toolkit ended its process (status {run.returncode}) at case {died_at}")
        note_event(resume.parent / EVENTS, died_at)
        first = died_at + 1
    (busy_end, total_end) = busy_jiffies()
    seconds, share = time.perf_counter() - start, (busy_end - busy) / max(total_end - total, 1)
    return seconds, share, _children_cpu() - cpu


def _children_cpu() -> float:
    """CPU seconds of this process's ended children and the descendants they waited for."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


# run: wall seconds, share of the cores busy, CPU seconds, wall seconds per family
Round = dict[str, tuple[float, float, float, dict[str, float]]]


def one_round(cases: list[Case], work: Path, args: list[str]) -> Round:
    prepare_floor(cases, work / "floor")
    floor = work / "floor"
    measured = {"floor": timed(["--mode", "floor", "--dir", str(floor)], resume=floor / "at")}
    folders = {"floor": floor}
    for run, sim in (("cold", "sim"), ("warm", "sim"), ("new-sdk", "sim-2")):
        folders[run] = work / f"results-{run}"
        harness = ["--mode", "harness", "--dir", str(work), "--sim", sim, *args]
        if run != "warm":  # warm finds every result cached: it never starts a worker
            harness.append("--start-worker")
        measured[run] = timed([*harness, "--results", folders[run].name])
    return {run: (*measured[run], by_family(cases, folders[run] / EVENTS)) for run in RUNS}


def by_family(cases: list[Case], events_file: Path) -> dict[str, float]:
    """Seconds per operator family of one run's case loop: each case from the event before."""
    families: dict[str, float] = {}
    previous = None
    for line in events_file.read_text().splitlines():
        index, at = json.loads(line)
        if index is not None and previous is not None:
            family = FAMILY_OF.get(cases[int(index)].op, "other")
            families[family] = families.get(family, 0.0) + at - previous
        previous = at
    return families


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", nargs="*", help="operators to include (default: all)")
    parser.add_argument(
        "--family", nargs="*", choices=sorted(FAMILIES), help="operator families to include"
    )
    parser.add_argument(
        "--tier", choices=("default", "full"), default="default", help="as pytest's --tier"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of all four runs (3)")
    parser.add_argument("--platform", default="rk3562", help="whose operator suite (rk3562)")
    parser.add_argument(
        "--keep",
        type=Path,
        help="keep each round's folders (results with their journals, caches) in KEEP/round-N",
    )
    parser.add_argument("--mode", choices=("floor", "harness"), help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--sim", help=argparse.SUPPRESS)
    parser.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--results", help=argparse.SUPPRESS)
    parser.add_argument("--start-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.family:
        args.ops = [*(args.ops or ()), *(op for family in args.family for op in FAMILIES[family])]
    selection = ["--tier", args.tier, "--platform", args.platform]
    selection += ["--ops", *args.ops] if args.ops else []
    if args.mode == "floor":
        run_floor(args.dir, args.first)
        return
    if args.mode == "harness":
        cases = select(args.ops, args.tier, args.platform, args.dir / "cases")
        folders = (args.dir / args.results, args.dir / args.sim, args.dir)
        run_harness(cases, args.platform, *folders, start=args.start_worker)
        return
    cases = select(args.ops, args.tier, args.platform)
    if not cases:  # the floor's folder would be empty, and nothing to time
        what = " ".join(args.ops or ())
        raise SystemExit(f"no case of the {args.platform} {args.tier} tier matches --ops {what}")
    rounds = []
    for number in range(1, args.rounds + 1):
        if args.keep:
            (args.keep / f"round-{number}").mkdir(parents=True)  # never over an earlier run
            rounds.append(one_round(cases, args.keep / f"round-{number}", selection))
            continue
        with tempfile.TemporaryDirectory(prefix="npu-hil-bench-") as tmp:
            rounds.append(one_round(cases, Path(tmp), selection))
    report(cases, args.tier, args.platform, rounds)


def report(cases: list[Case], tier: str, platform: str, rounds: list[Round]) -> None:
    n = len(cases)
    print(f"{n} cases of the {platform} operator suite on the rknn-toolkit2 simulator, {tier} tier")
    ratios = (("cold", "floor"), ("new-sdk", "floor"), ("cold", "warm"))
    head = "".join(f"{name:>9} s {'busy':>5}" for name in RUNS)
    print(f"{'round':6}{head}" + "".join(f"{a + '/' + b:>15}" for a, b in ratios))
    for number, measured in enumerate(rounds, start=1):
        cells = "".join(f"{measured[name][0]:11.1f} {measured[name][1]:5.0%}" for name in RUNS)
        cells += "".join(f"{measured[a][0] / measured[b][0]:15.2f}" for a, b in ratios)
        print(f"{number:<6}{cells}")
    middle = {name: median(r[name][0] for r in rounds) for name in RUNS}
    cells = "".join(f"{middle[name]:11.1f} {'':5}" for name in RUNS)
    print(f"{'median':6}{cells}" + "".join(f"{middle[a] / middle[b]:15.2f}" for a, b in ratios))
    print("median cases/s: " + ", ".join(f"{name} {n / middle[name]:.1f}" for name in RUNS))
    print(f"cold / floor = {middle['cold'] / middle['floor']:.2f}  (target <= 1.3)")
    print(f"new-sdk / floor = {middle['new-sdk'] / middle['floor']:.2f}")
    print(f"cold / warm  = {middle['cold'] / middle['warm']:.1f}  (target >= 10)")
    cpu = {name: median(r[name][2] for r in rounds) for name in RUNS}
    print("median CPU seconds: " + ", ".join(f"{name} {cpu[name]:.1f}" for name in RUNS))
    print(
        f"in CPU seconds: cold / floor = {cpu['cold'] / cpu['floor']:.2f}, "
        f"cold / warm = {cpu['cold'] / cpu['warm']:.1f}"
    )
    report_families(cases, rounds)
    print("load average at the end: " + " ".join(f"{load:.1f}" for load in os.getloadavg()))


def report_families(cases: list[Case], rounds: list[Round]) -> None:
    """Median seconds per family of each run's case loop, the loop in all, and start-up."""
    counts: dict[str, int] = {}
    for case in cases:
        family = FAMILY_OF.get(case.op, "other")
        counts[family] = counts.get(family, 0) + 1
    rows = {family: family for family in sorted(counts)}
    seconds = {
        run: {family: median(r[run][3].get(family, 0.0) for r in rounds) for family in rows}
        for run in RUNS
    }
    for run in RUNS:
        seconds[run]["case loop"] = median(sum(r[run][3].values()) for r in rounds)
        seconds[run]["start-up"] = median(r[run][0] - sum(r[run][3].values()) for r in rounds)
    counts["case loop"] = len(cases)
    print("\nmedian seconds per operator family (each case from the end of the one before)")
    head = "".join(f"{run:>9}" for run in RUNS)
    print(f"{'family':16}{'cases':>6}{head}{'cold/floor':>12}{'cold/warm':>11}")
    for row in [*rows, "case loop", "start-up"]:
        cells = "".join(f"{seconds[run][row]:9.1f}" for run in RUNS)
        cold, floor, warm = (seconds[run][row] for run in ("cold", "floor", "warm"))
        share = f"{cold / floor:12.2f}{cold / warm:11.1f}" if floor > 0 and warm > 0 else ""
        print(f"{row:16}{counts.get(row, ''):>6}{cells}{share}")


if __name__ == "__main__":
    main()
