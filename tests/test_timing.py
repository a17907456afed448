"""Timing statistics and the latency judgement, on plain numbers (no board)."""

from __future__ import annotations

import pytest

from harness.results.latency import Threshold, latency_change
from harness.targets.timing import PerfRequest, summarize, timing_record


def test_statistics_are_measured_values_and_robust_to_one_outlier() -> None:
    samples = [0.010, 0.011, 0.012, 0.010, 0.011, 0.013, 0.010, 0.011, 0.012, 0.500]
    stats = summarize(samples)
    assert stats["min_s"] == 0.010 and stats["median_s"] == 0.011
    assert stats["p90_s"] == 0.013  # nearest rank: the 9th of 10, never the outlier
    assert stats["mad_s"] == pytest.approx(0.001)
    assert summarize([0.02])["p90_s"] == 0.02 and summarize([0.02])["mad_s"] == 0
    with pytest.raises(ValueError, match="no timed runs"):
        summarize([])


def test_no_samples_is_no_timing_rather_than_a_crash() -> None:
    assert timing_record({"clock": "wall", "samples_s": []}) == {
        "unavailable": "the target gave no timed run"
    }
    assert timing_record({"unavailable": "board down"}) == {"unavailable": "board down"}


def perf(median: float, mad: float) -> dict[str, float]:
    return {"median_s": median, "mad_s": mad}


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        (perf(0.010, 0.0001), perf(0.0104, 0.0001), "unchanged"),  # 4% < 5%
        (perf(0.010, 0.0001), perf(0.0106, 0.0001), "regression"),  # 6% > 5% > 3 MAD
        (perf(0.010, 0.0010), perf(0.0125, 0.0002), "unchanged"),  # within 3x the larger MAD
        (perf(0.010, 0.0001), perf(0.0090, 0.0001), "improvement"),
        ({"unavailable": "simulator"}, perf(0.01, 0.0), "not compared"),
        (perf(0.01, 0.0), {}, "not compared"),
    ],
)
def test_a_median_must_move_beyond_k_mad_and_x_percent(
    old: dict[str, float], new: dict[str, float], kind: str
) -> None:
    assert latency_change(old, new, Threshold(k=3, percent=5)).kind == kind


def test_unusable_settings_are_refused_with_the_value() -> None:
    with pytest.raises(ValueError, match="got 0"):
        PerfRequest(runs=0)
    with pytest.raises(ValueError, match="'fast'"):
        PerfRequest(pin_npu="fast")
    with pytest.raises(ValueError, match="must be 0 or more"):
        Threshold(k=-1)
