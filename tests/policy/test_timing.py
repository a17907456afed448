"""Timing statistics and the latency judgement, on plain numbers (no board)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers.records import make_record

from harness.policy.baseline import Baseline
from harness.policy.known_issues import load_known_issues
from harness.policy.perf import PerfJudge, slower, summary_lines, suspect
from harness.results.journal import Journal
from harness.results.latency import Threshold, latency_change
from harness.results.records import CaseRecord
from harness.targets.timing import JobTiming, summarize, timing_record
from harness.triage.timing import format_timing
from harness.vendors.rknn.documents.conditions import condition_files, npu_devfreq
from harness.vendors.rknn.platforms import PLATFORMS


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
        JobTiming(runs=0)
    with pytest.raises(ValueError, match="'fast'"):
        JobTiming(pin_npu="fast")
    with pytest.raises(ValueError, match="must be 0 or more"):
        Threshold(k=-1)


def timed_record(case_id: str, median_ms: float) -> CaseRecord:
    samples = [median_ms / 1e3 * f for f in (0.99, 1.0, 1.0, 1.01)]
    return make_record(case_id, perf=timing_record({"clock": "wall", "samples_s": samples}))


def test_a_slower_case_is_a_suspect_until_its_rerun_confirms_it(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    for case_id in ("a", "b", "c"):
        journal.append(timed_record(case_id, 4.0))
    judge = PerfJudge(Baseline(tmp_path, ("violation",), vendor=""), Threshold())
    first = judge.judge(timed_record("a", 8.0))
    assert suspect(first) and slower(first) is None  # not yet a regression
    confirmed = judge.judge(timed_record("a", 8.1))
    assert not suspect(confirmed) and confirmed.perf["baseline"]["confirmed"] is True
    assert "median 8.100 ms against 4.000 ms" in str(slower(confirmed))
    assert suspect(judge.judge(timed_record("b", 8.0)))
    relieved = judge.judge(timed_record("b", 4.0))  # the re-run was not slower: unchanged
    assert relieved.perf["baseline"]["verdict"] == "unchanged" and slower(relieved) is None
    assert relieved.perf["baseline"]["first_median_s"] == pytest.approx(0.008)
    assert judge.judge(make_record("c")).perf == {}  # not timed: nothing to judge
    lines = summary_lines([confirmed, relieved, judge.judge(timed_record("c", 4.0))])
    assert lines[0] == (
        "latency: 1 regression, 0 improvement, 2 unchanged, 0 not compared "
        "(1 slower once, not confirmed by the re-run)"
    )


def test_a_perf_regression_entry_covers_only_the_slowdown(tmp_path: Path) -> None:
    path = tmp_path / "known.yaml"
    path.write_text(
        "known_issues:\n"
        "  - cases: ['rk3562/*']\n"
        "    verdict: perf-regression\n"
        "    reference: RK-77\n"
        "    note: Expand slower since 2.5.0\n"
    )
    known = load_known_issues(path)
    record = make_record("rk3562/Expand/float16/typical")
    assert known.mark(record).known is None  # the correctness verdict is not covered
    entry = known.slowdown_entry(record)
    assert entry is not None and entry.reference == "RK-77"


def test_every_platform_has_its_clocks_listed() -> None:
    for platform in PLATFORMS:
        files = condition_files(platform, "/mnt/board")
        assert {"ddr_freq", "cpu0_freq", "cpu0_governor", "soc_temp"} <= set(files), platform
        assert all(path.startswith("/mnt/board/sys/") for path in files.values())
    assert condition_files("rk3588")["npu_freq"] == "/sys/class/devfreq/fdab0000.npu/cur_freq"
    assert npu_devfreq("rk3576") == "/sys/class/devfreq/27700000.npu"
    assert npu_devfreq("rv1106") is None  # none listed: pinning says so rather than guess


def test_hil_run_prints_the_slowest_layers_with_their_placement() -> None:
    raw = {
        "clock": "rknn_perf_run",
        "samples_s": [0.004, 0.005],
        "layers": [
            {"name": "conv_1", "op": "Conv", "target": "NPU", "time_us": 812.0},
            {"name": "pow_7", "op": "Pow", "target": "CPU", "time_us": 2390.0},
        ],
    }
    text = format_timing(timing_record(raw))
    lines = text.splitlines()
    assert lines[0].startswith("timing: median 4.500 ms (min 4.000 ms, p90 5.000 ms")
    assert "clock rknn_perf_run" in lines[0]
    assert lines[1] == "  slowest layers (of 2):"
    assert lines[3].split() == ["pow_7", "Pow", "CPU", "2390", "us"]  # slowest first
    assert lines[4].split() == ["conv_1", "Conv", "NPU", "812", "us"]
    assert format_timing({"unavailable": "no board"}) == "timing: no timing: no board\n"
