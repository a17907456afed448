"""Conversions ahead of the board: one long-lived thread per board target runs the host
conversions, so the next batch can be converted (``prefetch``) while the board runs this one.

Conversions go through the thread in the order asked, so a batch's own ``convert`` finds what
a prefetch of it built in the cache.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from harness.targets.job import Job
from harness.text import printable
from harness.vendors.rknn.toolkit.convert import Conversion, ConversionCache

log = logging.getLogger(__name__)


class ConversionFeed:
    """The conversion thread of one board target; ``close`` stops it and its converter."""

    def __init__(self, cache: ConversionCache) -> None:
        self.cache = cache
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hil-convert")

    def convert(self, jobs: Sequence[Job]) -> Future[list[Conversion]]:
        """The conversions of ``jobs``, in order (after any prefetch asked before), to
        come: the caller can connect to the board meanwhile."""
        return self._thread.submit(self.cache.convert_many, list(jobs))

    def prefetch(self, jobs: Sequence[Job]) -> None:
        """Convert ``jobs`` into the cache in the background; trouble shows later, when
        a batch converts them for real."""
        self.convert(jobs).add_done_callback(_logged)

    def close(self) -> None:
        """Drop prefetches not started, finish the build in flight, stop the converter."""
        self._thread.shutdown(wait=True, cancel_futures=True)
        self.cache.close()


def _logged(done: Future[list[Conversion]]) -> None:
    if not done.cancelled() and done.exception() is not None:
        log.warning("prefetching conversions failed: %s", printable(str(done.exception())))
