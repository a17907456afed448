"""Where a pytest process runs its cases: the platform's configured board, the simulator only
when none is configured; and what happens to the remaining cases when a board goes down mid-run.

The run's first process (a plain run, or the xdist controller) chooses every process's board
once, before any case (``assign_boards``): worker ``gwN`` takes the N-th board of the platform,
round robin, so with ``-n`` equal to the number of boards every board runs exactly one case at
a time; the board lock keeps that true even across hosts. A farm board file stands for any
matching labgrid place: the first process leases one per worker (``harness.boards.farm``) and
holds the leases until the run ends, so each worker has its place from its discovery to its
last case. A configured board that is down stops the run (``BoardDown``) unless the run asked
for the simulator instead, which every record of its cases then says.
"""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.boards import trouble
from harness.boards.discovery import check
from harness.boards.farm import Lease, PlaceError, lease_held, leased_board, power_cycle
from harness.boards.inventory import Board, Runtimes, check_files, load_inventory
from harness.boards.settings import FarmSettings
from harness.targets.job import Job
from harness.targets.observation import Observation
from harness.targets.target import BoardTarget, Target, observe
from harness.text import printable
from harness.timeouts import timeout_problem

log = logging.getLogger(__name__)


def platform_boards(directory: Path, platform: str, runtimes: Runtimes) -> list[Board]:
    """The inventory's boards of ``platform`` (``runtimes``: those board files may name), their
    key and known_hosts files there (``check_files``); the inventory is a folder of board files
    or one board file, and none there means no boards."""
    if not directory.exists():
        return []
    boards = [board for board in load_inventory(directory, runtimes) if board.platform == platform]
    for board in boards:
        check_files(board)
    return boards


def worker_index(worker_id: str | None) -> int:
    """N of xdist's ``gwN``; 0 for a run without workers."""
    return int(worker_id[2:]) if worker_id and worker_id.startswith("gw") else 0


@dataclass(frozen=True)
class Assignment:
    """One pytest process's target for one platform, as the run's first process chose it
    before any case (plain data: xdist workers receive it in their ``workerinput``)."""

    board: str | None  # the board file's name; None: the simulator
    why: str  # one line for the run's log: which board, or why the simulator
    # a leased labgrid place: {"name", "service": {"address", "port", "username"}, "token"}
    place: dict[str, Any] | None = None
    # the configured board that was down, its cases sent to the simulator (fallback):
    # {"board", "address", "status", "problem"}
    down: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Assignment:
        return cls(**data)

    @property
    def backend_name(self) -> str:
        """ "simulator", or the board's (a leased place's) name."""
        if self.place is not None:
            return str(self.place["name"])
        return self.board or "simulator"


class BoardDown(RuntimeError):
    """A configured board could not be reached, leased or passed by the version check, and the
    run asked for no fallback: the run stops before any case (``down``: board, address,
    status, problem; ``reports``: what was checked up to then, for run.json)."""

    def __init__(self, down: dict[str, str], reports: list[dict[str, Any]]) -> None:
        super().__init__(down_text(down))
        self.down = down
        self.reports = reports


def down_text(down: dict[str, str]) -> str:
    """'board loopback (user@host:22) is unreachable: why'."""
    return printable(
        f"board {down['board']} ({down['address']}) is {down['status']}: {down['problem']}"
    )


def fallback_note(down: dict[str, str]) -> str:
    """What a record, the summary and the report say of a case sent to the simulator because
    its board was down."""
    return f"{down_text(down)}; ran on the simulator instead (--board-fallback simulator)"


def assign_boards(
    boards: list[Board],
    workers: int,
    *,
    fallback: bool,
    sdk: str | None,
    leases: ExitStack,
    progress: Callable[[str], None] = log.warning,
) -> tuple[list[Assignment], list[dict[str, Any]]]:
    """The target of each process (``gwN`` takes the N-th board, round robin) and the
    discovery reports of the boards checked (run.json's ``boards``).

    Every board file's board is checked once; a farm board is a place leased into ``leases``
    per worker (held until the run ends; one place shared by every worker when the board names
    one place), checked with the lease held; a board file selecting by tags skips a place that
    fails the check for another matching one. A board that is not "ok" raises ``BoardDown``,
    unless ``fallback``: then its workers run on the simulator, the assignment saying why.
    Only the first worker of a board file selecting by tags waits for its place: a further
    worker takes one that is free (within ``FURTHER_WAIT_S``), and without one it is left out
    (fewer assignments than ``workers``: the run has fewer processes), said in ``progress``.
    """
    if not boards:
        return [Assignment(None, "no board configured for the platform")] * workers, []
    reports: dict[str, dict[str, Any]] = {
        board.name: check(board, sdk=sdk) for board in boards if board.farm is None
    }
    checked = list(reports.values())
    places: dict[str, Assignment] = {}  # a board file naming one place: its one lease
    leased: set[str] = set()  # the board files selecting by tags that have a place already
    assignments: list[Assignment] = []
    for index in range(workers):
        board = boards[index % len(boards)]
        if board.farm is None:
            report = reports[board.name]
            assignment = Assignment(board.name, f"board {board.name} ({board.address})")
        elif board.name in places:
            assignments.append(places[board.name])
            continue
        else:
            further = board.name in leased
            assignment, report = _lease(board, sdk, leases, progress, further=further)
            if further and report["status"] != "ok":
                progress(
                    f"npu-hil: no further labgrid place for board file {board.name} "
                    f"({'; '.join(report['problems'])}): the run goes on without worker "
                    f"gw{index}, on the places it has"
                )
                continue
            checked.append(report)
            if report["status"] == "ok" and set(board.farm.filters) != {"name"}:
                leased.add(board.name)
        if report["status"] != "ok":
            down = {
                "board": str(report["board"]),
                "address": str(report["address"]),
                "status": str(report["status"]),
                "problem": "; ".join(report["problems"]) or str(report["status"]),
            }
            if not fallback:
                raise BoardDown(down, checked)
            assignment = Assignment(None, fallback_note(down), down=down)
        if board.farm is not None and set(board.farm.filters) == {"name"}:
            places[board.name] = assignment
        assignments.append(assignment)
    return assignments, checked


FURTHER_WAIT_S = 30.0  # how long a further worker's lease waits for a place of its own


def _lease(
    board: Board,
    sdk: str | None,
    leases: ExitStack,
    progress: Callable[[str], None],
    *,
    further: bool,
) -> tuple[Assignment, dict[str, Any]]:
    """A place for farm ``board``, leased into ``leases`` when it checks "ok" (released at
    once otherwise), and its discovery report; ``further``: a further worker's, which waits
    ``FURTHER_WAIT_S`` at most (the run has a place: it need not wait for another)."""
    assert board.farm is not None
    farm = board.farm
    if further:
        farm = dataclasses.replace(farm, wait_s=min(farm.wait_s, FURTHER_WAIT_S))
    checked: dict[str, dict[str, Any]] = {}

    def accept(place: str, service: dict[str, Any]) -> str | None:
        """A place that fails the check is skipped for another matching one."""
        checked[place] = report = check(leased_board(board, place, service), sdk=sdk)
        return None if report["status"] == "ok" else _problem(report)

    held = Lease(farm, progress)
    try:
        service = held.acquire(None if set(farm.filters) == {"name"} else accept)
    except PlaceError as exc:
        problem = {"status": "unreachable", "problems": [printable(str(exc))]}
        return Assignment(None, ""), {"board": board.name, "address": board.address, **problem}
    assert held.place is not None and held.token is not None
    with ExitStack() as stack:
        stack.callback(held.release)
        used = leased_board(board, held.place, service)
        report = checked.get(held.place) or check(used, sdk=sdk)
        if report["status"] == "ok":
            leases.push(stack.pop_all())
    # what the workers need of the NetworkService: never its password
    reached = {"address": str(service["address"]), "port": int(service.get("port", 22)),
               "username": str(service["username"])}  # fmt: skip
    place = {"name": held.place, "service": reached, "token": held.token}
    return Assignment(board.name, f"labgrid place {used.name} ({used.address})", place), report


def _problem(report: dict[str, Any]) -> str:
    """What a discovery report that is not "ok" says was wrong."""
    return f"{report['status']}: {'; '.join(report['problems']) or report['status']}"


def assigned_board(boards: list[Board], assignment: Assignment) -> Board | None:
    """The board ``assignment`` names among the platform's ``boards`` (a leased place as
    itself); None for the simulator."""
    if assignment.board is None:
        return None
    (board,) = (board for board in boards if board.name == assignment.board)
    if assignment.place is None:
        return board
    return leased_board(board, assignment.place["name"], assignment.place["service"])


def farm_options(
    coordinator: str | None, place: str | None, tags: str | None, wait_s: float
) -> FarmSettings | None:
    """``--lg-coordinator``, ``--lg-place``/``--lg-tags k=v,...`` and ``--lg-wait`` as the farm
    every board of the run comes from; None without a place or tags. ValueError if bad."""
    if place and tags:
        raise ValueError("--lg-place and --lg-tags: give one of them")
    if not (place or tags):
        if coordinator:
            raise ValueError("--lg-coordinator needs --lg-place NAME or --lg-tags k=v,...")
        return None
    problem = timeout_problem(wait_s)
    if problem is not None:
        raise ValueError(f"--lg-wait {wait_s:g}: {problem}")
    filters = {"name": place} if place else {}
    for pair in (tags or "").split(",") if tags else []:
        key, equals, value = (part.strip() for part in pair.partition("="))
        if not (equals and key and value):
            raise ValueError(f"--lg-tags {tags!r}: expected key=value[,key=value...]")
        filters[key] = value
    return FarmSettings(coordinator, filters, wait_s)


class BoardWithFallback:
    """A board target; once the board is given up on, later cases can go to the simulator.

    With ``to_simulator`` false they stay infrastructure errors (the honest default for a
    nightly board run); either way the record's backend says where each case really ran.
    """

    def __init__(
        self, board: BoardTarget, simulator: Callable[[], Target], to_simulator: bool
    ) -> None:
        self.board = board
        self.simulator = simulator
        self.to_simulator = to_simulator
        self._fallback: Target | None = None

    @property
    def observes(self) -> frozenset[str]:
        """The board's; an observation made on the fallback carries the simulator's."""
        return self.board.observes

    def run(self, job: Job) -> Observation:
        return next(self.stream([job]))

    def prefetch(self, jobs: Sequence[Job]) -> None:
        if not self.board.down:
            self.board.prefetch(jobs)

    def stream(self, jobs: Iterable[Job]) -> Iterator[Observation]:
        """The board's observations as they arrive; once the board is down (and
        ``to_simulator``), each case it could not run goes to the simulator instead."""
        batch = list(jobs)  # the board takes the whole batch at once
        for job, observation in zip(batch, self.board.stream(batch), strict=True):
            if observation.infra_error and self.board.down and self.to_simulator:
                if self._fallback is None:
                    self._fallback = self.simulator()
                yield from observe(self._fallback, [job])
            else:
                yield observation


def watch_lease(
    target_for: Callable[[Board], BoardWithFallback],
    board: Board,
    boards: list[Board],
    assignment: Assignment,
    sdk: str | None,
    leases: ExitStack,
) -> Any:
    """The target of ``board`` (``target_for`` makes it); a leased place's is a
    ``WatchedLease`` (``boards``: the platform's board files, one of them the place's)."""
    target = target_for(board)
    if assignment.place is None:
        return target
    (board_file,) = (each for each in boards if each.name == assignment.board)
    return WatchedLease(target, board, board_file, assignment.place["token"], sdk,
                        target_for, leases)  # fmt: skip


MAX_RECOVERIES = 3  # per board and run: a board that keeps falling over is given up on
CHECK_EVERY_S = 2.0  # how often a power-cycled board is checked
SAY_EVERY_S = 10.0  # how often the terminal hears that it does not answer yet


def _power_cycled(
    target: BoardTarget, board: Board, farm: FarmSettings, token: str, sdk: str | None
) -> str:
    """Power-cycle the place of ``board``, whose ``target`` is down, and wait (up to the
    farm's ``recovery_wait_s``) until it answers with versions that pass the check again; then
    the target is usable again. What happened, for the records of the cases lost."""
    down = target.down
    started = time.monotonic()
    trouble.say(
        f"board {board.name} stopped answering ({down}); power-cycling its labgrid place, then "
        f"checking it every {CHECK_EVERY_S:g} s for up to {farm.recovery_wait_s:g} s"
    )
    try:
        power_cycle(farm, token)
    except (PlaceError, subprocess.TimeoutExpired) as exc:
        note = (
            f"power cycle through labgrid place {board.name} failed ({exc}); the board stays down"
        )
        trouble.say(note)
        return note
    deadline = started + farm.recovery_wait_s
    said = started
    while True:
        report = check(board, sdk=sdk)
        waited = time.monotonic() - started
        if report["status"] == "ok":
            target.down = None
            note = (
                f"board {board.name} was power-cycled through its labgrid place and answered "
                f"again after {waited:.0f} s (versions checked); the next cases run on it"
            )
            trouble.say(note)
            return note
        problem = "; ".join(report["problems"]) or report["status"]
        if time.monotonic() > deadline:
            note = (
                f"board {board.name} was power-cycled through its labgrid place but did not "
                f"answer within {farm.recovery_wait_s:g} s ({problem}); it stays down"
            )
            trouble.say(note)
            return note
        if time.monotonic() - said >= SAY_EVERY_S:
            said = time.monotonic()
            trouble.say(
                f"board {board.name}: no answer yet after the power cycle ({problem}); "
                f"{waited:.0f} s of {farm.recovery_wait_s:g} s, next check in {CHECK_EVERY_S:g} s"
            )
        time.sleep(CHECK_EVERY_S)


class WatchedLease:
    """A leased place's target whose lease is checked once each batch has run.

    Once the coordinator no longer gives the place to the run's reservation (it restarted and
    forgot it, or someone took the place away), that batch's cases are infra errors naming
    the lost lease, the board is let go, and a place is leased again (by the board file,
    waiting up to its ``wait``) for the next cases; when none comes, every later case is an
    infra error saying so. A board that stopped answering during a batch is power-cycled
    through its place (``recovery: power-cycle``), at most ``MAX_RECOVERIES`` times; the
    batch's lost cases say how that went.
    """

    def __init__(
        self,
        target: BoardWithFallback,
        board: Board,
        board_file: Board,
        token: str,
        sdk: str | None,
        target_for: Callable[[Board], BoardWithFallback],
        leases: ExitStack,
    ) -> None:
        assert board_file.farm is not None
        self.target, self.board, self.token = target, board, token
        self.farm, self.board_file, self.sdk = board_file.farm, board_file, sdk
        self.target_for, self.leases = target_for, leases
        self.recoveries = 0
        self.lost: str | None = None

    @property
    def observes(self) -> frozenset[str]:
        return self.target.observes

    def run(self, job: Job) -> Observation:
        return next(self.stream([job]))

    def prefetch(self, jobs: Sequence[Job]) -> None:
        if self.lost is None:
            self.target.prefetch(jobs)

    def stream(self, jobs: Iterable[Job]) -> Iterator[Observation]:
        """The batch's observations once it has run and the lease still holds."""
        batch = list(jobs)
        if self.lost is not None:
            for _ in batch:
                yield self._lost(self.lost)
            return
        began = time.monotonic()
        observations = list(self.target.stream(batch))
        if lease_held(self.farm, self.token) is not False:
            yield from self._recovered(observations, began)
            return
        ran_on = self.board.name
        lost = (
            f"labgrid place {ran_on}: the lease (reservation {self.token}) was lost "
            "while this batch ran (the coordinator restarted, or the place was taken away)"
        )
        trouble.say(f"{lost}; leasing a place again (waiting up to {self.farm.wait_s:g} s)")
        self.target.board.close()
        try:
            self._lease_again()
        except PlaceError as exc:
            self.lost = f"{lost}; no place could be leased again: {exc}"
            note = self.lost
        else:
            note = f"{lost}; leased again: labgrid place {self.board.name} runs the next cases"
        trouble.say(note)
        for observation in observations:  # each on the board it ran on, with its kernel log
            yield self._lost(note, ran_on, observation.board_log)

    def _lost(self, why: str, ran_on: str | None = None, board_log: str = "") -> Observation:
        return Observation(
            backend=ran_on or self.board.name,
            infra_error=why,
            observes=self.observes,
            board_log=board_log,
        )

    def _lease_again(self) -> None:
        """A new lease by the board file, checked, held until the run ends, and its target."""
        lease = Lease(self.farm)
        service = lease.acquire()
        assert lease.place is not None and lease.token is not None
        with ExitStack() as held:
            held.callback(lease.release)
            board = leased_board(self.board_file, lease.place, service)
            report = check(board, sdk=self.sdk)
            if report["status"] != "ok":
                raise PlaceError(f"labgrid place {board.name} is {_problem(report)}")
            self.leases.push(held.pop_all())
        self.board, self.token = board, lease.token
        self.target = self.target_for(board)
        self.recoveries = 0

    def _recovered(self, observations: list[Observation], began: float) -> list[Observation]:
        """``observations`` (of a batch that ``began`` then), the lost ones saying how the
        board's recovery went, with the kernel log read once it answers again."""
        target = self.target.board
        if target.down is None or self.farm.recovery != "power-cycle":
            return observations
        if self.recoveries >= MAX_RECOVERIES:
            return observations
        self.recoveries += 1
        note = _power_cycled(target, self.board, self.farm, self.token, self.sdk)
        kernel_log = ""
        if target.down is None:  # it answers again: the log the lost cases could not get
            kernel_log = (
                f"# read once the power-cycled board answered again (a real board's log "
                f"starts again at its boot)\n{target.kernel_log(time.monotonic() - began)}"
            )
        return [
            dataclasses.replace(
                o, infra_error=f"{o.infra_error}; {note}", board_log=kernel_log or o.board_log
            )
            if o.infra_error
            else o
            for o in observations
        ]
