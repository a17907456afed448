"""Reading a large baseline: ``--baseline DIR`` (``nightly.Baseline``) and ``hil report``/``hil
diff`` (``read_records``) on a journal of many records, this checkout against another.

    python benchmarks/bench_baseline.py                       # 20000 records, against main
    python benchmarks/bench_baseline.py --records 100000 --against HEAD~3

Writes one journal of N records shaped like a suite's (ten layers of placement, checks, both
references' metrics), then, for each source tree, reads it in a fresh process and prints the
seconds (imports left out) and the peak memory (max RSS) of each reader, and the ratios of
this checkout to the other tree (``git archive REV``). Not a test: it prints numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READERS = {  # reader -> (imports, the call measured)
    "Baseline": (
        "from harness.policy.baseline import Baseline\n"
        "from harness.judge.verdict import FAILING_VERDICTS",
        "Baseline(sys.argv[1], FAILING_VERDICTS)",
    ),
    "read_records": (
        "from harness.results.journal import read_records",
        "read_records(sys.argv[1])",
    ),
}
MEASURE = """
import resource, sys, time
{imports}
started = time.perf_counter()
{call}
print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def record(index: int) -> dict[str, object]:
    """A journal line as a suite run writes it (about 3 kB)."""
    layers = [
        {"id": i, "op": "Conv", "name": f"conv_{i}", "full_name": f"Conv:conv_{i}",
         "target": "NPU", "dtype": "FLOAT16", "input_shapes": [[1, 8, 16, 16]],
         "output_shapes": [[1, 8, 16, 16]], "truncated": False, "io": False}
        for i in range(10)
    ]  # fmt: skip
    metrics = {"max_abs": 0.001, "mean_abs": 0.0001, "cosine": 0.99999, "mismatches": 0.0}
    return {
        "id": f"rk3562/Op{index % 50}/float16/value={index}", "platform": "rk3562",
        "op": f"Op{index % 50}", "dtype": "float16", "limit": f"Op{index % 50}/x/h",
        "value": str(index), "documented": "supported", "backend": "simulator",
        "verdict": ("confirmed", "violation", "doc-drift")[index % 3],
        "detail": "placement: Op: on NPU", "placement": layers, "metrics": metrics,
        "tolerance": {"atol": 0.01, "rtol": 0.01},
        "versions": {"rknn_toolkit2": "2.5.0", "numpy": "2.4.6", "onnx": "1.18.0"},
        "source": {"seed": "001", "section": "Op", "text": "h in [1,8192]"},
        "artifacts": f"cases/op-{index}", "started": "2026-01-01T00:00:00+00:00",
        "duration_s": 0.5, "seed": index, "params": {"h": index, "w": 4},
        "checks": [{"prop": "placement", "limits": ["Op/x/h"], "documented": "[1,8192]",
                    "observed": "on NPU", "status": "confirmed"}] * 2,
        "reference": {"used": "onnx.reference",
                      "metrics": {"onnx.reference": metrics},
                      "agreement": {"onnxruntime": {"agrees": True, "metrics": metrics}}},
        "sdk": "2.5.0",
    }  # fmt: skip


def source_tree(revision: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True
    )
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def measure(tree: Path, reader: str, results: Path, repeat: int) -> tuple[float, float]:
    """(seconds, peak MiB) of one reader in a fresh process on ``tree``'s harness, the best of
    ``repeat`` runs (the machine may be shared)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    imports, call = READERS[reader]
    runs = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", MEASURE.format(imports=imports, call=call), str(results)],
            capture_output=True, text=True, env=env, check=True, cwd=tree,
        )  # fmt: skip
        seconds, rss_kib = done.stdout.split()
        runs.append((float(seconds), int(rss_kib) / 1024))
    return min(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--against", default="main", help="git revision to compare with")
    parser.add_argument("--repeat", type=int, default=3, help="runs per reader and tree (best)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="npu-hil-bench-baseline-") as tmp:
        work = Path(tmp)
        results = work / "baseline"
        results.mkdir()
        with (results / "journal.jsonl").open("w") as journal:
            for index in range(args.records):
                journal.write(json.dumps(record(index)) + "\n")
        size = (results / "journal.jsonl").stat().st_size / 1024**2
        other = source_tree(args.against, work / "other")
        print(f"baseline of {args.records} records ({size:.0f} MiB journal)")
        print(f"{'reader':14}{'tree':>10}{'seconds':>10}{'peak MiB':>10}")
        for reader in READERS:
            there = measure(other, reader, results, args.repeat)
            here = measure(ROOT, reader, results, args.repeat)
            for name, (seconds, peak) in ((args.against, there), ("this", here)):
                print(f"{reader:14}{name:>10}{seconds:10.2f}{peak:10.0f}")
            print(f"{reader:14}{'ratio':>10}{here[0] / there[0]:10.3f}{here[1] / there[1]:10.3f}")


if __name__ == "__main__":
    main()
