"""Latency against a baseline: when a case's median time changed beyond noise.

A case is slower (a performance regression) when its median exceeds the baseline's by more
than ``max(k * MAD, percent% of the baseline median)``, the MAD being the larger of the two
runs' (a noisy run on either side widens the margin); faster by the same margin is an
improvement. A case without timing on either side is "not compared". The nightly run confirms
a regression by running the case again (``harness.policy.perf``); the report and ``hil diff``
use the same judgement on the records.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

REGRESSION = "regression"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
NOT_COMPARED = "not compared"
DEFAULT_K = 3.0
DEFAULT_PERCENT = 5.0


@dataclass(frozen=True)
class Threshold:
    """The margin a median must move by to count: ``max(k * MAD, percent% of the old)``."""

    k: float = DEFAULT_K
    percent: float = DEFAULT_PERCENT

    def __post_init__(self) -> None:
        # NaN would judge every change "unchanged" (comparisons with it are false)
        if not (_seconds(self.k) and _seconds(self.percent)):
            raise ValueError(
                f"perf threshold: k and percent must be 0 or more, and finite, got "
                f"k={self.k!r}, percent={self.percent!r}"
            )

    def margin_s(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> float:
        mad = max(float(old["mad_s"]), float(new["mad_s"]))
        return max(self.k * mad, self.percent / 100 * float(old["median_s"]))


def add_threshold_options(add: Callable[..., Any]) -> None:
    """``--perf-k`` and ``--perf-percent`` (``add``: argparse's ``add_argument`` or a pytest
    option group's ``addoption``)."""
    add(
        "--perf-k",
        type=float,
        default=DEFAULT_K,
        help=f"a median moving by more than K * MAD counts as slower or faster ({DEFAULT_K:g})",
    )
    add(
        "--perf-percent",
        type=float,
        default=DEFAULT_PERCENT,
        help=f"... and by more than this percentage of the old median ({DEFAULT_PERCENT:g})",
    )


@dataclass(frozen=True)
class LatencyChange:
    kind: str  # REGRESSION, IMPROVEMENT, UNCHANGED or NOT_COMPARED
    old_s: float | None = None  # the baseline's median
    new_s: float | None = None  # this run's median
    margin_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.kind,
            "old_median_s": self.old_s,
            "new_median_s": self.new_s,
            "margin_s": self.margin_s,
        }


def timed(perf: Mapping[str, Any] | None) -> bool:
    """Whether a record's ``perf`` holds timing statistics: a median and a MAD that are
    finite numbers of seconds, 0 or more (a journal or a baseline may hold anything)."""
    return bool(perf) and all(_seconds(perf.get(key)) for key in ("median_s", "mad_s"))  # type: ignore[union-attr]


def _seconds(value: object) -> bool:
    """Whether ``value`` is a finite number, 0 or more (a bool is not one)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def latency_change(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, threshold: Threshold
) -> LatencyChange:
    """How ``new`` (a record's ``perf``) compares with ``old`` (the baseline's)."""
    if not timed(old) or not timed(new):
        return LatencyChange(NOT_COMPARED)
    assert old is not None and new is not None
    old_s, new_s = float(old["median_s"]), float(new["median_s"])
    margin = threshold.margin_s(old, new)
    if new_s - old_s > margin:
        kind = REGRESSION
    elif old_s - new_s > margin:
        kind = IMPROVEMENT
    else:
        kind = UNCHANGED
    return LatencyChange(kind, old_s, new_s, margin)
