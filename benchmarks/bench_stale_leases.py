"""Leases left by a killed job: how long ``hil boards release-stale`` and the next lease take to
free them, for 1, 2 and 4 places, and what one labgrid-client call costs.

    python benchmarks/bench_stale_leases.py [--places 1 2 4] [--repeat 3]

Starts a real labgrid coordinator and exporter on 127.0.0.1 (tests/fakes/labgrid_farm.py) with
one place per board; the boards' NetworkServices point nowhere, since no lease here connects
to a board. Per count of places and round: a holder process leases them all (a guard per
lease), then the whole process tree is SIGKILLed as a CI runner stops a job; then

- release-stale: ``hil boards release-stale --coordinator ...``, from its start (interpreter
  and imports included) until it exits, the places free;
- the same in-process (``release_stale``), its labgrid-client calls counted;
- next lease: after another kill, a new lease of one of the places (``Lease.acquire``), which
  releases every stale lease of that coordinator first, then reserves and acquires; its calls
  counted.

One labgrid-client call: the median of ``labgrid-client places`` run ``--calls`` times. The
table gives the medians over ``--repeat`` rounds, and each time over (calls x one call's cost):
how much of it is labgrid-client's own start-up. Not a test: it prints numbers.
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
from types import SimpleNamespace

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.labgrid_farm import Farm  # noqa: E402

from harness.boards import farm as farm_module  # noqa: E402
from harness.boards.farm import Lease, release_stale  # noqa: E402
from harness.boards.leases import LEASE_DIR_ENV  # noqa: E402
from harness.boards.settings import FarmSettings  # noqa: E402

HOLD = """
import sys, time
from harness.boards.farm import Lease
from harness.boards.settings import FarmSettings
for place in sys.argv[2:]:
    Lease(FarmSettings(sys.argv[1], {"name": place}, 60)).acquire()
print("acquired", flush=True)
time.sleep(600)
"""


def killed_holder(farm: Farm, places: list[str]) -> None:
    """Lease ``places`` in a process of their own, then SIGKILL it and its guards (the guards
    first: one whose harness is gone would release its place)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, farm.address, *places],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "acquired\n"
    tree = [psutil.Process(holder.pid)]
    tree += tree[0].children(recursive=True)
    for process in reversed(tree):
        process.kill()
    psutil.wait_procs(tree, timeout=30)
    assert sorted(farm.acquired()) == sorted(places), farm.acquired()


class Counted:
    """labgrid-client calls made by this process while in use."""

    def __enter__(self) -> Counted:
        self.calls = 0
        self._client = farm_module._client

        def counted(*args: object, **kwargs: object) -> str:
            self.calls += 1
            return self._client(*args, **kwargs)  # type: ignore[arg-type]

        farm_module._client = counted
        return self

    def __exit__(self, *exc: object) -> None:
        farm_module._client = self._client


def one_call(farm: Farm, calls: int) -> float:
    """The median seconds of one ``labgrid-client places``."""
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        farm.client("places")
        times.append(time.perf_counter() - started)
    return median(times)


def round_of(farm: Farm, places: list[str]) -> dict[str, float]:
    """One round's seconds and call counts for ``places``."""
    killed_holder(farm, places)
    hil = Path(sys.executable).with_name("hil")
    started = time.perf_counter()
    subprocess.run(
        [str(hil), "boards", "release-stale", "--coordinator", farm.address],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    cli = time.perf_counter() - started
    assert farm.acquired() == [], farm.acquired()

    killed_holder(farm, places)
    with Counted() as counted:
        started = time.perf_counter()
        release_stale(farm.address)
        inside = time.perf_counter() - started
    assert farm.acquired() == [], farm.acquired()

    killed_holder(farm, places)
    lease = Lease(FarmSettings(farm.address, {"name": places[0]}, 60), progress=lambda _: None)
    with Counted() as leasing:
        started = time.perf_counter()
        lease.acquire()
        next_lease = time.perf_counter() - started
    assert farm.acquired() == [places[0]], farm.acquired()
    lease.release()
    return {
        "cli": cli,
        "inside": inside,
        "inside_calls": counted.calls,
        "next": next_lease,
        "next_calls": leasing.calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--places", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hil-bench-leases-") as tmp:
        os.environ[LEASE_DIR_ENV] = str(Path(tmp) / "leases")
        farm = Farm(Path(tmp) / "farm")
        try:
            most = max(args.places)
            nowhere = SimpleNamespace(port=22, user="hil")  # no lease here connects to it
            farm.export({f"board-{i}": nowhere for i in range(most)})  # type: ignore[misc]
            names = [f"place-{i}" for i in range(most)]
            for index, name in enumerate(names):
                farm.place(name, f"board-{index}")
            call = one_call(farm, args.calls)
            print(f"one labgrid-client call (places): {call:.2f} s (median of {args.calls})")
            print(
                f"{'places':>6}  {'release-stale':>13}  {'in-process':>10}  {'calls':>5}  "
                f"{'/ calls x call':>14}  {'next lease':>10}  {'calls':>5}  {'/ calls x call':>14}"
            )
            for count in args.places:
                rounds = [round_of(farm, names[:count]) for _ in range(args.repeat)]
                got = {key: median(r[key] for r in rounds) for key in rounds[0]}
                print(
                    f"{count:>6}  {got['cli']:>11.1f} s  {got['inside']:>8.1f} s  "
                    f"{got['inside_calls']:>5.0f}  "
                    f"{got['inside'] / (got['inside_calls'] * call):>14.2f}  "
                    f"{got['next']:>8.1f} s  {got['next_calls']:>5.0f}  "
                    f"{got['next'] / (got['next_calls'] * call):>14.2f}"
                )
        finally:
            farm.stop()


if __name__ == "__main__":
    main()
