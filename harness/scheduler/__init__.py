"""Feeding cases to a backend in batches while pytest reports them one by one.

``Scheduler`` (``batches``) runs the case pytest asks for together with the cases this process
will ask for next, in growing batches, and hands out each record when its test runs;
``pytest_queue`` knows which cases come next, in a plain run and under pytest-xdist.
"""

from harness.scheduler.batches import DEFAULT_BATCH, BatchSizes, Scheduler
from harness.scheduler.pytest_queue import upcoming_cases

__all__ = ["DEFAULT_BATCH", "BatchSizes", "Scheduler", "upcoming_cases"]
