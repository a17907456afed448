"""The boundary search: where a documented bound really is, found one step at a time.

Pure: a ``Search`` proposes the next value to try (``proposal``) and is told how that value
behaved (``observe``: True when it behaved like the documented inside -- on the NPU as asked
and correct; False when it did not; None when the step says nothing, an infrastructure error).
Nothing here runs a model, so the algorithm is tested on synthetic targets.

The walk, for a bound ``edge`` (the last documented-inside value) and a ``direction`` (+1 for
an upper bound, -1 for a lower one):

1. try ``edge`` itself;
2. outward when it behaves (the first outside value ``edge + 1``, then each distance from
   ``edge`` twice the last plus ``edge``: 8, 16, 32, ... for an edge of 7, the value doubling),
   inward when it does not (distances 1, 2, 4, ... back toward ``floor``), until a value
   behaves differently from the last one;
3. bisect the bracket between the last good and the first bad value down to neighbours.

A value ``skip`` refuses (a model over the size budget, a hard cap) is never tried: the walk
tries the farthest value ``skip`` allows short of it instead, and stops at the cap if that one
still behaves. The step budget stops it too; either way the answer keeps the bracket found so
far. Behaviour between two tried values is not seen: a search reports a real neighbouring
pair (good, bad), which on a non-monotone target need not be the first change past ``edge``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

# Why a search stopped.
FOUND = "found"  # good and bad neighbours: the observed boundary
BUDGET = "budget"  # the step budget ran out
CAP = "cap"  # the next value is over a size budget or hard cap, and the last one behaved
FLOOR = "floor"  # inward: no value down to the smallest expressible one behaved
INFRA = "infra"  # a step said nothing (infrastructure trouble): no answer from there
# a step tested nothing: refused like its inside control (a platform that refuses the whole
# dtype), or its operator built as other layers; the bound cannot be searched in that dtype
UNTESTABLE = "untestable"
STOPS = (FOUND, BUDGET, CAP, FLOOR, INFRA, UNTESTABLE)

Skip = Callable[[int], str | None]  # value -> why it is not tried, or None


def _never(value: int) -> str | None:
    return None


@dataclass
class Search:
    """One bound's search; see the module docstring."""

    edge: int  # the last value documented inside
    direction: int  # +1: the bound is an upper bound; -1: a lower one
    budget: int  # steps at most
    floor: int = 0  # the smallest (direction +1) or largest (-1) value a model can express
    skip: Skip = _never
    tried: list[tuple[int, bool | None]] = field(default_factory=list)
    stop: str = ""  # one of STOPS once finished
    stop_detail: str = ""  # e.g. the size budget's reason
    _distance: int = 0  # the last exponential distance from ``edge``

    def __post_init__(self) -> None:
        if self.direction not in (1, -1):
            raise ValueError(f"direction must be +1 or -1, got {self.direction}")
        if self.budget < 1:
            raise ValueError(f"the step budget must be at least 1, got {self.budget}")

    # -- what is known ------------------------------------------------------------------

    @property
    def good(self) -> int | None:
        """The farthest-out value that behaved, of those tried."""
        values = [v for v, ok in self.tried if ok]
        return max(values, key=self._out) if values else None

    @property
    def bad(self) -> int | None:
        """The nearest-in value that did not behave and lies beyond ``good``."""
        good = self.good
        values = [
            v
            for v, ok in self.tried
            if ok is False and (good is None or self._out(v) > self._out(good))
        ]
        return min(values, key=self._out) if values else None

    def _out(self, value: int) -> int:
        """How far out ``value`` lies (larger: farther outside the documented range)."""
        return value * self.direction

    # -- stepping -----------------------------------------------------------------------

    def proposal(self) -> int | None:
        """The next value to try, or None once finished (``stop`` says why)."""
        if self.stop:
            return None
        if any(ok is None for _, ok in self.tried):
            return self._finish(INFRA)
        good, bad = self.good, self.bad
        if good is not None and bad is not None and abs(bad - good) <= 1:
            return self._finish(FOUND)
        if good is None and bad == self.floor:
            return self._finish(FLOOR)
        if len(self.tried) >= self.budget:
            return self._finish(BUDGET)
        if not self.tried:
            return self.edge
        if good is not None and bad is not None:  # bisect
            return (good + bad) // 2
        if good is not None:  # outward: the first outside value, then exponential
            self._distance = 1 if self._distance == 0 else 2 * self._distance + abs(self.edge)
            return self._capped(good, self.edge + self.direction * self._distance)
        # inward from a failing edge: distances 1, 2, 4, ... down to the floor
        self._distance = 1 if self._distance == 0 else 2 * self._distance
        wanted = self.edge - self.direction * self._distance
        return wanted if self._out(wanted) > self._out(self.floor) else self.floor

    def _capped(self, good: int, wanted: int) -> int | None:
        """``wanted``, or the farthest value short of it that ``skip`` allows."""
        reason = self.skip(wanted)
        if reason is None:
            return wanted
        lo, hi = self._out(good), self._out(wanted)  # allowed at lo, refused at hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.skip(mid * self.direction) is None:
                lo = mid
            else:
                hi = mid
        if lo == self._out(good):
            return self._finish(CAP, reason)
        return lo * self.direction

    def _finish(self, stop: str, detail: str = "") -> int | None:
        """End the search: no further proposal."""
        self.stop, self.stop_detail = stop, detail
        return None

    def tested_nothing(self) -> None:
        """The last step tested nothing of the bound (``UNTESTABLE``): no answer from there."""
        self._finish(UNTESTABLE)

    def observe(self, value: int, good: bool | None) -> None:
        """Record how the proposed ``value`` behaved."""
        self.tried.append((value, good))
