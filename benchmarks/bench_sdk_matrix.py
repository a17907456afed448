"""Benchmark: the operator suite on two SDK releases in one run against each release alone.

    python benchmarks/bench_sdk_matrix.py                         # Pow, MaxPool and Expand
    python benchmarks/bench_sdk_matrix.py --sdks 2.2.0 2.5.0 -k "GRU"

Three pytest runs of ``suites/test_operators.py`` as a user starts them, each in a fresh
process with the simulator result cache off and its own results directory: ``--sdk A``,
``--sdk B`` and ``--sdk A,B``. Prints seconds per run and the ratio of the two-SDK run to the
sum of the single runs (target <= 1.1: running the matrix costs no more than the releases
one after the other). Both SDKs must be installed (``hil sdk install VERSION``). Not a test:
it prints numbers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SELECTION = "Pow or MaxPool or Expand"


def run(sdks: list[str], selection: str, results: Path) -> tuple[float, int]:
    """(seconds, records written) of one pytest run on ``sdks``."""
    command = [
        sys.executable, "-m", "pytest", str(ROOT / "suites" / "test_operators.py"),
        "-p", "no:cacheprovider", "-q", "--hil-cache", "off", "--results", str(results),
        "--sdk", ",".join(sdks), "-k", selection,
    ]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, capture_output=True, check=False)
    seconds = time.perf_counter() - started
    journal = results / "journal.jsonl"
    lines = journal.read_text().splitlines() if journal.exists() else []
    written = {(json.loads(line)["id"], json.loads(line)["sdk"]) for line in lines}
    return seconds, len(written)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdks", nargs=2, default=["2.3.2", "2.5.0"], metavar="VERSION")
    parser.add_argument("-k", dest="selection", default=DEFAULT_SELECTION, help="pytest -k")
    args = parser.parse_args()
    a, b = args.sdks
    with tempfile.TemporaryDirectory(prefix="npu-hil-bench-sdk-") as tmp:
        work = Path(tmp)
        alone_a = run([a], args.selection, work / "a")
        alone_b = run([b], args.selection, work / "b")
        both = run([a, b], args.selection, work / "both")
    print(f"rk3562 operator suite, -k {args.selection!r}, simulator, result cache off")
    print(f"{'run':16}{'seconds':>10}{'records':>10}")
    for name, (seconds, records) in ((f"--sdk {a}", alone_a), (f"--sdk {b}", alone_b),
                                     (f"--sdk {a},{b}", both)):  # fmt: skip
        print(f"{name:16}{seconds:10.1f}{records:10d}")
    if both[1] != alone_a[1] + alone_b[1]:
        print(f"warning: the two-SDK run wrote {both[1]} records, the single runs {alone_a[1]} "
              f"+ {alone_b[1]}")  # fmt: skip
    ratio = both[0] / (alone_a[0] + alone_b[0])
    print(f"matrix / ({a} + {b}) = {ratio:.3f}  (target <= 1.1)")


if __name__ == "__main__":
    main()
