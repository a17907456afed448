"""The session's scheduler: batches of cases in collection order, records streamed back.

pytest runs one test at a time; the test of a case asks ``Scheduler.record(case, upcoming)``.
When the case is not in flight yet, the scheduler starts a batch with it and the next cases
``upcoming`` names (those this process will run next), and returns as soon as the case's own
record arrives; the batch goes on while pytest reports, and the following tests find their
records ready or in flight. Records are journaled as they arrive (by the executor), so a
crash loses at most the cases of the batch still running.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice

from harness.cases.case import Case
from harness.results.records import CaseRecord

# Batches double from FIRST_BATCH up to the configured size: the first result shows at once,
# later batches amortise shipping; after infrastructure trouble they start small again.
FIRST_BATCH = 2
DEFAULT_BATCH = 32

RunMany = Callable[[Sequence[Case]], Iterator[CaseRecord]]  # e.g. CaseExecutor.execute_many
Prefetch = Callable[[Sequence[Case]], None]  # e.g. CaseExecutor.prefetch


class BatchSizes:
    """How many cases the next batch takes: ``first``, doubling up to ``largest``."""

    def __init__(self, largest: int = DEFAULT_BATCH, first: int = FIRST_BATCH) -> None:
        if largest < 1:
            raise ValueError(f"batch size must be at least 1, got {largest}")
        self.largest = largest
        self.first = min(first, largest)
        self._next = self.first

    def peek(self) -> int:
        """The size the next batch will take."""
        return self._next

    def take(self) -> int:
        """The size of the batch starting now."""
        size = self._next
        self._next = min(size * 2, self.largest)
        return size

    def trouble(self) -> None:
        """A batch hit infrastructure trouble: the next one starts small again."""
        self._next = self.first


class Scheduler:
    """Hands out each case's record, running cases in batches through ``run_many``.

    Once a batch's first record is in, the cases of the batch after it go to ``prefetch``
    (a board converts their models while it runs this batch). For one thread (pytest's). A
    case whose run raised raises when its record is asked for; the cases after it in the same
    batch run again in a new batch.
    """

    def __init__(
        self, run_many: RunMany, sizes: BatchSizes | None = None, prefetch: Prefetch | None = None
    ) -> None:
        self.run_many = run_many
        self.sizes = sizes or BatchSizes()
        self.prefetch = prefetch
        self._next_batch: list[Case] = []  # to prefetch once the batch in flight has begun
        self.batches: list[int] = []  # the size of every batch started, in order
        self._ready: dict[str, CaseRecord] = {}
        self._failed: dict[str, Exception] = {}
        self._in_flight: deque[Case] = deque()  # the current batch's cases not yet received
        self._stream: Iterator[CaseRecord] = iter(())

    def record(self, case: Case, upcoming: Iterable[Case] = ()) -> CaseRecord:
        """The record of ``case``, running it now (with the next of ``upcoming``) if need be."""
        if case.id not in self._ready and case.id not in self._failed:
            if all(queued.id != case.id for queued in self._in_flight):
                self._drain()  # a case out of the expected order: finish what is in flight
                rest = self._unseen(upcoming, case)
                self._start([case, *islice(rest, self.sizes.take() - 1)])
                self._next_batch = list(islice(rest, self.sizes.peek()))
            while case.id not in self._ready and case.id not in self._failed:
                self._receive()
            if self._next_batch and self.prefetch is not None:
                self.prefetch(self._next_batch)
            self._next_batch = []
        if case.id in self._failed:
            raise self._failed.pop(case.id)
        return self._ready.pop(case.id)

    def rerun(self, case: Case) -> CaseRecord:
        """``case`` run again, alone, once the batch in flight is done (a timing to confirm);
        its record."""
        self._drain()
        self._start([case])
        self._receive()
        if case.id in self._failed:
            raise self._failed.pop(case.id)
        return self._ready.pop(case.id)

    def _unseen(self, upcoming: Iterable[Case], case: Case) -> Iterator[Case]:
        """``upcoming`` without ``case`` and the cases that already have a record."""
        for other in upcoming:
            if other.id != case.id and other.id not in self._ready:
                yield other

    def _start(self, batch: list[Case]) -> None:
        self.batches.append(len(batch))
        self._in_flight = deque(batch)
        self._stream = self.run_many(batch)

    def _receive(self) -> None:
        """Take the next record of the batch in flight (or the failure of its next case)."""
        expected = self._in_flight.popleft()
        try:
            record = next(self._stream)
        except StopIteration:
            self._failed[expected.id] = RuntimeError(f"no record came back for {expected.id}")
            self._restart()
            return
        except Exception as exc:  # that case's failure; the rest of its batch runs again
            self._failed[expected.id] = exc
            self.sizes.trouble()
            self._restart()
            return
        if record.id != expected.id:  # the executor yields in order; anything else is a bug
            raise RuntimeError(f"expected the record of {expected.id}, got {record.id}")
        if record.verdict == "infra-error":
            self.sizes.trouble()
        self._ready[record.id] = record

    def _restart(self) -> None:
        rest = list(self._in_flight)
        self.close()
        if rest:
            self._start(rest)

    def close(self) -> None:
        """Stop the batch in flight (its cases without a record are not run)."""
        self._in_flight.clear()
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()
        self._stream = iter(())

    def _drain(self) -> None:
        while self._in_flight:
            self._receive()
