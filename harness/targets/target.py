"""The one interface every place that runs cases offers: the simulator, a board, a fallback."""

from __future__ import annotations

from typing import Protocol

from harness.targets.job import Job
from harness.targets.observation import Observation


class Target(Protocol):
    """Runs a job and says what it saw.

    ``observes`` names the documented properties its observations let a judge check (each
    observation carries the set of the target that produced it).
    """

    @property
    def observes(self) -> frozenset[str]: ...

    def run(self, job: Job) -> Observation: ...


class BoardTarget(Target, Protocol):
    """A target on a board, which can be lost for good mid-run."""

    down: str | None  # why the board was given up on; None while it is usable
