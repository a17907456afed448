"""Numbers that are not numbers, from options, boards, journals and run.json (hardening,
round 3): NaN, infinity, a wrong sign or an unbounded count is refused in words or becomes an
infrastructure error of its case; never a crash, never a silent "unchanged"."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from tests.fakes.sshd import SshServer
from tests.helpers.cli import hil
from tests.helpers.perf import CASES, board_with_sysfs, run_suite, timed_run
from tests.helpers.records import make_record

from harness.diskcache import cap_from_env
from harness.models.budget import size_budget
from harness.policy.perf import slower, summary_lines
from harness.policy.shards import parse_shard
from harness.results.journal import JournalError, read_records, read_run_metadata
from harness.results.latency import REGRESSION, Threshold, latency_change, timed
from harness.results.runs import read_run
from harness.results.schema import MAX_SHARDS
from harness.targets.timing import TimingError, timing_record
from harness.vendors.rknn.runners.c_runner import observation_from_run

NOT_NUMBERS = [math.nan, math.inf, -math.inf, -1.0]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1"])
@pytest.mark.parametrize("option", ["--perf-k", "--perf-percent"])
def test_hil_diff_refuses_a_threshold_that_is_not_a_finite_number(
    tmp_path: Path, option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    results = timed_run(tmp_path)  # one case 2x slower than the baseline
    capsys.readouterr()
    assert hil(["diff", str(tmp_path / "baseline"), str(results), f"{option}={value}"]) == 2
    assert "must be 0 or more, and finite" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_hil_diff_refuses_a_metric_threshold_that_is_not_a_finite_number(
    tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    results = timed_run(tmp_path)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        hil(["diff", str(tmp_path / "baseline"), str(results), f"--metric-threshold={value}"])
    assert stopped.value.code == 2
    says = "must be a number >= 0" if value == "-1" else "must be a finite number"
    assert f"{says}, got '{value}'" in capsys.readouterr().err


@given(k=st.floats(), percent=st.floats())
def test_a_threshold_is_accepted_exactly_when_both_numbers_are_finite_and_not_negative(
    k: float, percent: float
) -> None:
    usable = all(math.isfinite(x) and x >= 0 for x in (k, percent))
    try:
        Threshold(k, percent)
    except ValueError:
        assert not usable
    else:
        assert usable


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


@given(samples=st.lists(JSON_VALUES, min_size=1, max_size=6), warmup=JSON_VALUES)
@example(samples=[8.988465674311579e307, 8.98846567431158e307], warmup=0)  # their sum overflows
def test_a_boards_raw_timing_is_a_record_or_a_timing_error(samples: list, warmup: object) -> None:
    try:
        record = timing_record({"clock": "wall", "warmup": warmup, "samples_s": samples})
    except TimingError:
        return
    for key in ("min_s", "median_s", "p90_s", "mad_s"):
        assert math.isfinite(record[key]) and record[key] >= 0
    assert isinstance(record["warmup"], int) and record["warmup"] >= 0


@pytest.mark.parametrize("bad", [*NOT_NUMBERS, "0.5", None, True])
def test_a_baseline_timing_that_is_not_a_number_is_not_compared(bad: object) -> None:
    good = {"median_s": 0.01, "mad_s": 0.001}
    for broken in ({"median_s": bad, "mad_s": 0.001}, {"median_s": 0.01, "mad_s": bad}):
        assert not timed(broken)
        assert latency_change(broken, good, Threshold()).kind == "not compared"
        assert latency_change(good, broken, Threshold()).kind == "not compared"


def test_a_baseline_median_of_zero_seconds_is_a_regression_in_words() -> None:
    change = latency_change(
        {"median_s": 0, "mad_s": 0}, {"median_s": 0.004, "mad_s": 0}, Threshold()
    )
    assert change.kind == REGRESSION
    judged = {**change.to_json(), "first_median_s": 0.004, "confirmed": True}
    record = make_record(
        "rk3562/Pow/float16/values=2", perf={"median_s": 0.004, "baseline": judged}
    )
    why = slower(record)
    assert why is not None and "the baseline's was 0 s" in why
    assert any("the baseline's was 0 s" in line for line in summary_lines([record]))


def test_a_board_whose_timed_runs_are_not_numbers_gives_its_case_an_infra_error(
    sshd: SshServer, tmp_path: Path
) -> None:
    _, sysroot = board_with_sysfs(sshd, tmp_path)
    boards = tmp_path / "boards"
    sshd.board_file(boards, sysroot=str(sysroot), test_faults={CASES[1]: "nan-timing"})
    run = run_suite(tmp_path, boards, "results")
    assert "Traceback" not in run.stdout + run.stderr, run.stdout + run.stderr
    records = {r.id: r for r in read_records(tmp_path / "results")}
    assert sorted(records) == sorted(CASES)  # every case has its record
    broken = records[CASES[1]]
    assert broken.verdict == "infra-error", broken.detail
    assert "timing is not usable" in broken.detail and "nan" in broken.detail
    assert all(records[c].perf["runs"] == 9 for c in CASES if c != CASES[1])


def write_shard(folder: Path, index: int, count: int) -> Path:
    folder.mkdir()
    (folder / "run.json").write_text(
        json.dumps({"shard": {"index": index, "count": count, "selection": "s", "cases": 0}})
    )
    return folder


def test_a_shard_count_from_run_json_is_bounded(tmp_path: Path) -> None:
    folder = write_shard(tmp_path / "huge", 1, 10**12)
    with pytest.raises(JournalError, match=f"run.json: .*count.*{MAX_SHARDS}"):
        read_run_metadata(folder)
    with pytest.raises(ValueError, match=f"N from 1 to {MAX_SHARDS}"):
        parse_shard(f"1/{MAX_SHARDS + 1}")
    assert parse_shard(f"{MAX_SHARDS}/{MAX_SHARDS}").count == MAX_SHARDS


def test_a_shard_index_above_its_count_is_refused(tmp_path: Path) -> None:
    first = write_shard(tmp_path / "one", 1, 2)
    above = write_shard(tmp_path / "three", 3, 2)
    with pytest.raises(
        JournalError, match=r"three/run.json: shard: index 3 is above the shard count 2"
    ):
        read_run([first, above])


@pytest.mark.parametrize(
    "sidecar",
    [
        '{"perf": {"samples_us": [1], "clock": "wall", "warmup": Infinity, "runs": 1}}',
        '{"perf": {"samples_us": [1], "clock": "wall", "warmup": 1, "runs": -Infinity}}',
        '{"timings_us": {"run": NaN}}',
        '{"timings_us": {"init": -5}}',
        '{"timings_us": {"run": Infinity}}',
    ],
)
def test_a_c_runner_sidecar_with_numbers_that_are_not_numbers_is_an_infra_error(
    tmp_path: Path, sidecar: str
) -> None:
    (tmp_path / "result.json").write_text(sidecar)
    observation = observation_from_run("board-a", 0, "", tmp_path)
    assert observation.infra_error is not None
    assert observation.infra_error.startswith("runner sidecar malformed"), observation.infra_error


@pytest.mark.parametrize("variable", ["HIL_CACHE_MAX", "HIL_MAX_ELEMENTS"])
def test_a_size_of_hundreds_of_digits_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "9" * 400)
    with pytest.raises(ValueError, match=f"{variable}: not a size: .* is too large"):
        if variable == "HIL_CACHE_MAX":
            cap_from_env(variable)
        else:
            size_budget()
