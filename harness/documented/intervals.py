"""Intervals written the way the vendor documents write them: ``(0,8192]``, ``[1, 8192]``,
``(0, ∞]``."""

from __future__ import annotations

import re
from dataclasses import dataclass

_INTERVAL = re.compile(
    r"^\s*(?P<lo_br>[\[(])\s*(?P<lo>-?\d+(?:\.\d+)?|-inf)\s*,\s*"
    r"(?P<hi>-?\d+(?:\.\d+)?|inf|∞)\s*(?P<hi_br>[\])])\s*$"
)


def _number(text: str) -> float:
    if text == "∞":  # the operator lists write (0, ∞]
        return float("inf")
    return float(text) if ("." in text or "inf" in text) else int(text)


@dataclass(frozen=True)
class Interval:
    """A closed, open or half-open interval; ``text`` keeps the document's spelling."""

    lo: float
    hi: float
    lo_closed: bool
    hi_closed: bool
    text: str

    @classmethod
    def parse(cls, text: str) -> Interval:
        match = _INTERVAL.match(text)
        if not match:
            raise ValueError(f"not an interval like '(0,8192]' or '[1,8192]': {text!r}")
        lo, hi = _number(match["lo"]), _number(match["hi"])
        if lo > hi:
            raise ValueError(f"interval {text!r} has its lower end above its upper end")
        return cls(lo, hi, match["lo_br"] == "[", match["hi_br"] == "]", text.strip())

    def __contains__(self, value: float) -> bool:
        above = value >= self.lo if self.lo_closed else value > self.lo
        below = value <= self.hi if self.hi_closed else value < self.hi
        return above and below

    def lowest_integer(self) -> int:
        """The smallest integer inside."""
        return int(self.lo) if self.lo_closed else int(self.lo) + 1

    def integer_bounds(self) -> tuple[int, int]:
        """Smallest and largest integers inside (for dimension sizes and integer attributes)."""
        hi = int(self.hi) if self.hi_closed else int(self.hi) - 1
        return self.lowest_integer(), hi

    def __str__(self) -> str:
        return self.text
