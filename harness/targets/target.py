"""The one interface every place that runs cases offers: the simulator, a board, a fallback."""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Sequence
from typing import Protocol, runtime_checkable

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


@runtime_checkable
class StreamingTarget(Target, Protocol):
    """A target that takes a batch of jobs at once and hands back each observation, in job
    order, as soon as it and those before it are done (so that a caller can report and
    journal while the rest of the batch runs). It may take ``jobs`` as it goes (the caller
    prepares each when it is asked for) or all at once."""

    def stream(self, jobs: Iterable[Job]) -> Iterator[Observation]: ...


@runtime_checkable
class PrefetchingTarget(Protocol):
    """A target that can start on the next batch (a board: converting its models) while it
    runs the current one."""

    def prefetch(self, jobs: Sequence[Job]) -> None: ...


class BoardTarget(StreamingTarget, PrefetchingTarget, Protocol):
    """A target on a board, which can be lost for good mid-run."""

    down: str | None  # why the board was given up on; None while it is usable

    def close(self) -> None:
        """Stop using the board (its runner, its lock); safe to repeat."""

    def kernel_log(self, since_s: float) -> str:
        """The board's kernel log of the last ``since_s`` seconds (``board-kernel.log``), or
        why it could not be read."""


def observe(target: Target, jobs: Iterable[Job]) -> Generator[Observation, None, None]:
    """Observations of ``jobs`` in order: one batch for a streaming target, else one by one."""
    if isinstance(target, StreamingTarget):
        yield from target.stream(jobs)
    else:
        for job in jobs:
            yield target.run(job)
