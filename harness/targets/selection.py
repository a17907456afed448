"""Where a pytest process runs its cases: a board of the platform when one answers, else the
simulator; and what happens to the remaining cases when a board goes down mid-run.

Selection happens once per process. Under pytest-xdist each worker takes its own board
(worker ``gwN`` takes the N-th board of the platform, round robin), so with ``-n`` equal to the
number of boards every board runs exactly one case at a time; the board lock keeps that true
even across hosts. A farm board file stands for any matching labgrid place: each worker leases
its own (``harness.boards.farm``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from harness.boards.discovery import check
from harness.boards.farm import PlaceError, lease
from harness.boards.inventory import Board, Runtimes, load_inventory
from harness.boards.settings import FarmSettings
from harness.targets.job import Job
from harness.targets.observation import Observation
from harness.targets.target import BoardTarget, Target, observe

log = logging.getLogger(__name__)


class NoBoardError(RuntimeError):
    """A board was required (``--backend board`` or ``--require-board``) and none answered."""


def platform_boards(directory: Path, platform: str, runtimes: Runtimes) -> list[Board]:
    """The inventory's boards of ``platform`` (``runtimes``: those board files may name); the
    inventory is a folder of board files or one board file, and none there means no boards."""
    if not directory.exists():
        return []
    return [board for board in load_inventory(directory, runtimes) if board.platform == platform]


def worker_board(boards: list[Board], worker_id: str | None) -> Board:
    """The board of this pytest process: ``gwN`` takes boards[N % len(boards)]."""
    index = int(worker_id[2:]) if worker_id and worker_id.startswith("gw") else 0
    return boards[index % len(boards)]


@dataclass
class Selection:
    backend_name: str  # "simulator" or the board's name
    why: str  # one line for the run's log: which board, or why the simulator


def select_board(
    boards: list[Board],
    worker_id: str | None,
    require: bool,
    sdk: str | None = None,
    leases: ExitStack | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[Board | None, Selection]:
    """The board to use, after checking that it answers and that its versions suit the host's
    tools of release ``sdk`` (None: this environment's); None means the simulator.

    A farm board is a place leased into ``leases`` (released when it closes; ``progress``
    hears how the wait goes); a place the run does not use is released at once.
    """
    if not boards:
        if require:
            raise NoBoardError("no board file for this platform in the inventory")
        return None, Selection("simulator", "no board configured for the platform")
    board = worker_board(boards, worker_id)
    with ExitStack() as held:
        if board.farm is not None:
            assert leases is not None, "a farm board needs somewhere to keep its lease"
            try:
                board = held.enter_context(lease(board, progress or log.warning))
            except PlaceError as exc:
                report = {"status": "unreachable", "problems": [str(exc)]}
            else:
                report = check(board, sdk=sdk)
        else:
            report = check(board, sdk=sdk)
        if report["status"] == "ok":
            if leases is not None:
                leases.push(held.pop_all())
            return board, Selection(board.name, f"board {board.name} ({board.address})")
    problem = "; ".join(report["problems"]) or report["status"]
    if require:
        raise NoBoardError(f"board {board.name} is {report['status']}: {problem}")
    return None, Selection("simulator", f"board {board.name} {report['status']}: {problem}")


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
