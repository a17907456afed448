"""Nightly runs: known issues, a baseline, the slow tier, per-case timeouts and progress lines.

Each end-to-end test starts a real ``pytest suites/...`` process on a few Pow cases on the
simulator (rknn-toolkit2 2.5.0: exponent 0 is documented but runs on the CPU, a violation;
exponent 2 is confirmed) with real known-issues files and results folders.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import paths
from tests.helpers.marks import needs_toolkit
from tests.helpers.nightly import (
    POW_0,
    POW_0_ENTRY,
    POW_2,
    STALE_ENTRY,
    _record,
    known_file,
    run_suite,
)

from harness.judge.verdict import FAILING_VERDICTS, VERDICTS
from harness.policy.baseline import Baseline
from harness.policy.known_issues import (
    PERF_REGRESSION,
    KnownIssuesError,
    load_known_issues,
    schema,
)
from harness.policy.progress import Progress
from harness.policy.tiers import estimated_cost, slow_reason
from harness.report.diff import diff_records, summarize
from harness.results.journal import Journal, read_records, read_run_metadata
from harness.results.records import CaseRecord

ROOT = paths.ROOT
GRU_SLOW = ["rk3562/GRU/float16/seq_length=8192", "rk3562/GRU/float16/seq_length=8193"]
SHIPPED = ROOT / "harness/vendors/rknn/data/known-issues"  # one file per platform group


# -- known issues


def test_a_folder_of_known_issues_files_is_read_as_one_list_named_by_file(tmp_path: Path) -> None:
    folder = tmp_path / "known"
    folder.mkdir()
    known_file(folder, [POW_0_ENTRY], "rk3562.yaml")
    known_file(folder, [STALE_ENTRY], "rk3588.yaml")
    (folder / "README.txt").write_text("not a known-issues file")
    known = load_known_issues(folder)
    assert known.path == str(folder)
    assert [(entry.file, entry.reference) for entry in known.entries] == [
        ("rk3562.yaml", "RKNN-123"),
        ("rk3588.yaml", "X-1"),
    ]
    assert known.entries[1].label().startswith("rk3588.yaml: known_issues[0] (X-1:")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(KnownIssuesError, match="a folder with no known-issues"):
        load_known_issues(empty)
    broken = known_file(folder, [{"cases": []}], "zz.yaml")
    with pytest.raises(KnownIssuesError, match=str(broken)):
        load_known_issues(folder)


@needs_toolkit
def test_known_issue_as_expected_passes_and_its_removal_fails(tmp_path: Path) -> None:
    known = known_file(tmp_path, [POW_0_ENTRY, STALE_ENTRY])
    run = run_suite(tmp_path, [POW_0, POW_2], "--known-issues", str(known))
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "1 passed, 1 xfailed" in output
    assert "known issue RKNN-123" in output
    assert "1 as expected, 0 changed, 1 stale entry" in output
    assert "stale (matched no case of this run): known_issues[1] (X-1: rk3562/NoSuchOp/*)" in output
    records = {r.id: r for r in read_records(tmp_path / "results")}
    assert records[POW_0].verdict == "violation"  # the verdict stays; the mark is beside it
    assert records[POW_0].known == {
        "reference": "RKNN-123",
        "note": "exponent 0 on the CPU",
        "status": "as-expected",
        "expected": "violation",
    }
    assert records[POW_2].known is None
    assert read_run_metadata(tmp_path / "results")["known_issues"] == str(known)

    without = known_file(tmp_path, [STALE_ENTRY], "without.yaml")
    run = run_suite(tmp_path, [POW_0, POW_2], "--known-issues", str(without), results="again")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAILED " in run.stdout and f"test_documented_limit[{POW_0}]" in run.stdout
    assert "0 as expected, 0 changed, 1 stale entry" in run.stdout


@needs_toolkit
def test_changed_known_issue_warns_and_fails_under_strict_known(tmp_path: Path) -> None:
    fixed = {**POW_0_ENTRY, "cases": [POW_2], "reference": "RKNN-9"}  # POW_2 is confirmed
    known = known_file(tmp_path, [fixed])
    run = run_suite(tmp_path, [POW_2], "--known-issues", str(known))
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert f"known issue changed: {POW_2} is confirmed, violation expected (RKNN-9)" in output
    assert "0 as expected, 1 changed, 0 stale entries" in output
    assert read_records(tmp_path / "results")[0].known["status"] == "changed"  # type: ignore[index]

    run = run_suite(tmp_path, [POW_2], "--known-issues", str(known), "--strict-known")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "(--strict-known)" in run.stdout


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({**POW_0_ENTRY, "verdict": "violatoin"}, ["known_issues[1].verdict", "'violatoin'"]),
        ({**POW_0_ENTRY, "cases": "rk3562/*"}, ["known_issues[1].cases", "'rk3562/*'"]),
        ({k: v for k, v in POW_0_ENTRY.items() if k != "reference"}, ["reference", "[1]"]),
        ({**POW_0_ENTRY, "versions": {"rknn_toolkit2": "2.5.0"}}, ["rknn_toolkit2", "'2.5.0'"]),
        ({**POW_0_ENTRY, "ticket": "T-1"}, ["known_issues[1]", "unknown field 'ticket'"]),
        (
            {**{k: v for k, v in POW_0_ENTRY.items() if k != "note"}, "nte": ""},
            ["missing field(s) note in 'known_issues[1]'", "'nte' is not a field"],
        ),
        ({**POW_0_ENTRY, "verdict": "violatoin"}, ["did you mean violation?"]),
    ],
)
def test_invalid_known_issues_file_names_file_entry_field_and_value(
    tmp_path: Path, entry: dict[str, object], words: list[str]
) -> None:
    path = known_file(tmp_path, [POW_0_ENTRY, entry])
    with pytest.raises(KnownIssuesError) as error:
        load_known_issues(path)
    for word in [str(path), *words]:
        assert word in str(error.value)


def test_unreadable_known_issues_files(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("known_issues: [\n")
    with pytest.raises(KnownIssuesError, match=r"bad\.yaml: not valid YAML"):
        load_known_issues(tmp_path / "bad.yaml")
    with pytest.raises(KnownIssuesError, match=r"missing\.yaml: cannot read"):
        load_known_issues(tmp_path / "missing.yaml")


@needs_toolkit
def test_known_issues_vendor_is_the_file_the_vendor_ships(tmp_path: Path) -> None:
    """``--known-issues vendor`` (the main job's default) loads the vendor's own files."""
    run = run_suite(tmp_path, [POW_2], "--known-issues", "vendor")
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert read_run_metadata(tmp_path / "results")["known_issues"] == str(SHIPPED)
    entries = load_known_issues(SHIPPED).entries
    # a run of one rk3562 case: the rk3562 file's entries could have matched and did not;
    # the other platform groups' files say nothing about it
    mine = sum(entry.file == "rk3562-simulator.yaml" for entry in entries)
    others = len(entries) - mine
    assert f"0 as expected, 0 changed, {mine} stale entries, {others} for other platforms" in output


def test_bad_known_issues_option_is_a_usage_error(tmp_path: Path) -> None:
    path = known_file(tmp_path, [{**POW_0_ENTRY, "verdict": "fine"}])
    run = run_suite(tmp_path, [POW_2], "--known-issues", str(path), "--collect-only")
    assert run.returncode == 4, run.stdout + run.stderr
    assert f"--known-issues: {path}: field 'known_issues[0].verdict'" in run.stderr
    assert "Traceback" not in run.stdout + run.stderr


def test_known_issue_patterns_are_literal_but_for_star_and_question_mark(tmp_path: Path) -> None:
    expand = "rk3562/Expand/float16/[b,c,1,w]:h=8193"
    entries = [{**POW_0_ENTRY, "cases": [expand], "versions": {"rknn_toolkit2": ["2.5.?"]}}]
    known = load_known_issues(known_file(tmp_path, entries))
    record = _record(expand, "violation", rknn_toolkit2="2.5.0")
    assert known.mark(record).known["status"] == "as-expected"  # type: ignore[index]
    assert known.entry_for(_record("rk3562/Expand/float16/b:h=8193", "violation")) is None
    assert known.entry_for(_record(expand, "violation", rknn_toolkit2="2.6.0")) is None


def test_schema_verdicts_are_the_judge_verdicts_but_infra_error_and_bad_input() -> None:
    listed = schema()["properties"]["known_issues"]["items"]["properties"]["verdict"]["enum"]
    # and perf-regression, which covers a case's slowdown (--perf), never its verdict
    assert listed == [
        *(v for v in VERDICTS if v not in ("infra-error", "bad-input")),
        PERF_REGRESSION,
    ]


def test_shipped_known_issues_file_is_valid_and_pinned_to_the_sdk() -> None:
    known = load_known_issues(SHIPPED)
    assert known.entries
    for entry in known.entries:
        assert dict(entry.versions) == {"rknn_toolkit2": ("2.5.0",)}
        assert entry.verdict in FAILING_VERDICTS


@needs_toolkit
def test_known_issues_init_writes_a_file_that_makes_the_same_run_pass(tmp_path: Path) -> None:
    first = run_suite(tmp_path, [POW_0, POW_2])
    assert first.returncode == 1, first.stdout + first.stderr
    hil = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    output = tmp_path / "known.yaml"
    init = [*hil, "known-issues", "init", str(tmp_path / "results"), "-o", str(output)]
    done = subprocess.run(init, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    entries = load_known_issues(output).entries
    assert [(e.cases, e.verdict, dict(e.versions)) for e in entries] == [
        ((POW_0,), "violation", {"rknn_toolkit2": ("2.5.0",)})
    ]
    again = subprocess.run(init, capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 2 and "--force" in again.stderr  # no silent overwrite
    run = run_suite(tmp_path, [POW_0, POW_2], "--known-issues", str(output), results="r2")
    assert run.returncode == 0, run.stdout + run.stderr
    bad = subprocess.run(
        [*hil, "known-issues", "init", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 2 and "nothing" in bad.stderr
    other = subprocess.run(
        [*init, "--platform", "rk3588", "--force"], capture_output=True, text=True, env=env
    )
    assert other.returncode == 2 and "no record of platform rk3588" in other.stderr
    mine = subprocess.run(
        [*init, "--platform", "RK3562", "--force"], capture_output=True, text=True, env=env
    )
    assert mine.returncode == 0 and len(load_known_issues(output).entries) == 1


# -- baseline


@needs_toolkit
def test_run_against_its_own_results_passes_and_a_regression_fails(tmp_path: Path) -> None:
    first = run_suite(tmp_path, [POW_0, POW_2])
    assert first.returncode == 1, first.stdout + first.stderr
    baseline = tmp_path / "results"
    run = run_suite(tmp_path, [POW_0, POW_2], "--baseline", str(baseline), results="second")
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "new 0, fixed 0, changed 0, unchanged 2, not in baseline 0" in output
    assert "violation in the baseline too" in output
    assert read_run_metadata(tmp_path / "second")["baseline"] == str(baseline)

    # A baseline in which exponent 0 was still confirmed: the violation is a regression.
    older = tmp_path / "older"
    for record in read_records(baseline):
        confirmed = record.id == POW_0
        Journal(older).append(_with(record, "confirmed") if confirmed else record)
    run = run_suite(tmp_path, [POW_0, POW_2], "--baseline", str(older), results="third")
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"regression: {POW_0}: confirmed -> violation" in run.stdout
    assert "new 1, fixed 0, changed 0, unchanged 1" in run.stdout


def test_baseline_comparison_sorts_changes_and_the_report_counts_them_alike(
    tmp_path: Path,
) -> None:
    old = [
        _record("a", "violation"),
        _record("b", "confirmed"),
        _record("c", "doc-drift"),
        _record("d", "wrong-result"),
        _record("e", "confirmed"),
        _record("h", "wrong-result"),
    ]
    for record in old:
        Journal(tmp_path).append(record)
    new = [
        _record("a", "confirmed"),  # fixed
        _record("b", "wrong-result"),  # regression
        _record("c", "confirmed"),  # changed, neither failing
        _record("d", "wrong-result"),  # unchanged failure: excused
        _record("f", "violation"),  # new failure
        _record("g", "confirmed"),  # new case
        _record("h", "violation"),  # regression: failing another way
    ]
    baseline = Baseline(tmp_path, FAILING_VERDICTS, vendor="")
    comparison = baseline.compare(new)
    assert comparison.fixed == [("a", "violation", "confirmed")]
    assert comparison.regressions == [
        ("b", "confirmed", "wrong-result"),
        ("h", "wrong-result", "violation"),
    ]
    assert comparison.changed == [("c", "doc-drift", "confirmed")]
    assert comparison.new_failures == ["f"]
    assert comparison.counts() == {
        "new": 3,
        "fixed": 1,
        "changed": 1,
        "unchanged": 1,
        "not in baseline": 1,
    }
    assert baseline.excuse(new[3]) is not None
    for failing in (new[1], new[4], new[6]):
        assert baseline.excuse(failing) is None
    # The report's baseline section and hil diff count what fails the run as new failures
    summary = summarize(diff_records(old, new), old, new)
    assert summary.new_failures == ["b", "f", "h"]
    assert summary.fixed == ["a"] and summary.other_verdict == ["c"]


def test_bad_baseline_is_a_usage_error(tmp_path: Path) -> None:
    # every case deselected: a run that read no baseline would end with 5 (no test ran);
    # --collect-only reads none
    run = run_suite(tmp_path, [POW_2], "--baseline", str(tmp_path / "none"), "-k", "no_such")
    assert run.returncode == 4, run.stdout + run.stderr
    assert "--baseline" in run.stderr and "no journal" in run.stderr


# -- tiers, timeouts, progress


@needs_toolkit
def test_default_tier_leaves_out_the_slow_cases_and_says_so(tmp_path: Path) -> None:
    collected = run_suite(tmp_path, [*GRU_SLOW, POW_2], "--collect-only")
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert "1/3 tests collected (2 deselected)" in collected.stdout
    assert "PytestUnknownMarkWarning" not in collected.stdout  # the slow mark is registered
    assert not (tmp_path / "results" / "run.json").exists()  # --collect-only writes nothing
    run = run_suite(tmp_path, [*GRU_SLOW, POW_2], "--hil-cache", str(tmp_path / "cache"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert POW_2 in run.stdout and GRU_SLOW[0] not in run.stdout.split("npu-hil slow tier")[0]
    meta = read_run_metadata(tmp_path / "results")
    assert meta["tier"] == "default"
    assert [item["id"] for item in meta["left_out"]] == GRU_SLOW
    assert all("estimated 600 s > budget 120 s" in item["reason"] for item in meta["left_out"])

    full = run_suite(tmp_path, [*GRU_SLOW, POW_2], "--collect-only", "--tier", "full")
    assert "3 tests collected" in full.stdout, full.stdout
    # another job (its tier): a folder of its own
    cache = ["--hil-cache", str(tmp_path / "cache")]
    run = run_suite(tmp_path, [POW_2], "--tier", "full", *cache, results="full")
    assert read_run_metadata(tmp_path / "full")["left_out"] == []
    assert read_run_metadata(tmp_path / "full")["tier"] == "full"


def test_costs_and_budget() -> None:
    assert estimated_cost(GRU_SLOW[0]).seconds > estimated_cost(POW_2).seconds
    assert slow_reason(POW_2, 120) is None
    assert slow_reason(POW_2, 1) is not None  # the budget decides, not a fixed list
    assert slow_reason(GRU_SLOW[1], 1000) is None


@needs_toolkit
def test_slow_tier_timeout_is_per_case_and_timeouts_are_listed(tmp_path: Path) -> None:
    # A budget of 1 s puts every case in the slow tier; the cases hang in the simulator (its
    # test-only fault) and time out on the 2 s slow limit, not on --hil-timeout's 600 s.
    args = ["--tier", "full", "--case-budget", "1", "--slow-timeout", "2", "--hil-cache", "off"]
    hang = ",".join(f"hang:{case_id}" for case_id in (POW_2, POW_0))
    run = run_suite(
        tmp_path, [POW_2, POW_0], *args, "--progress-every", "1", NPU_HIL_SIM_FAULT=hang
    )
    output = run.stdout + run.stderr
    assert "npu-hil timeouts" in output
    for record in read_records(tmp_path / "results"):
        assert record.verdict == "infra-error", output
        assert f"{record.id}: {record.duration_s:.0f} s elapsed: timed out after 2 s" in output
    assert "npu-hil [1/2] elapsed" in output and "npu-hil [2/2] elapsed" in output


def test_progress_line_estimates_from_costs() -> None:
    progress = Progress({"a": 2.0, "b": 2.0, "slow": 600.0})
    assert progress.line(0.0, "a") == "npu-hil [0/3] elapsed 0:00: a"
    progress.finished("a")
    progress.finished("unknown")  # not a case of this run: ignored
    # 4 s for 2 estimated seconds: 2 s per estimated second, 602 estimated left
    assert progress.line(4.0) == "npu-hil [1/3] elapsed 0:04, about 20:04 left"
    assert Progress({"a": 1.0}).line(7300.0) == "npu-hil [0/1] elapsed 2:01:40"


def _with(record: CaseRecord, verdict: str) -> CaseRecord:
    return CaseRecord.from_json({**record.to_json(), "verdict": verdict})


def test_the_main_jobs_selection_collects_every_suite_with_the_model_folder_suite_empty(
    tmp_path: Path,
) -> None:
    """``pytest suites`` as the main job runs it: the model-folder suite without --models is
    an empty parametrization, which the slow-tier selection must pass over."""
    command = [sys.executable, "-m", "pytest", str(ROOT / "suites"), "--collect-only", "-q"]
    command += ["-p", "no:cacheprovider", "--backend", "sim", "--results", str(tmp_path / "r")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "INTERNALERROR" not in run.stdout
    assert "test_models.py::test_model[NOTSET]" in run.stdout
    assert "test_documented_limit[rk3562/GRU/float16/seq_length=8192]" not in run.stdout
    assert "2 deselected" in run.stdout  # the slow tier, said in the summary


RAN = [(POW_0, "violation"), (POW_2, "confirmed")]


def test_an_entry_is_stale_only_when_its_cases_could_have_matched(tmp_path: Path) -> None:
    """Stale: a case it names ran and it matched none (here: pinned to another SDK), or it
    names no case of the collection at all. An entry naming only cases that ``-k`` left out
    is not stale, only counted."""
    entries = [
        {**POW_0_ENTRY, "cases": [POW_0], "versions": {"rknn_toolkit2": ["2.3.2"]}},
        {**POW_0_ENTRY, "cases": ["rk3562/Expand/*"]},
        STALE_ENTRY,
        {**POW_0_ENTRY, "cases": [POW_2]},  # matches: not stale
    ]
    known = load_known_issues(known_file(tmp_path, entries))
    ran = [_record(case, verdict, rknn_toolkit2="2.5.0") for case, verdict in RAN]
    left_out = {"rk3562/Expand/float16/[b,c,1,w]:h=8193"}
    assert [e.index for e in known.stale(ran, left_out)] == [0, 2]
    assert known.not_selected(ran, left_out) == 1
    assert [e.index for e in known.stale(ran)] == [0, 1, 2]  # nothing left out: all three


@needs_toolkit
def test_a_k_selection_calls_no_entry_of_the_shipped_file_stale(tmp_path: Path) -> None:
    """The README's first example: ``-m float16 -k Pow`` picks 15 cases out of the suite, and
    the shipped entries for the cases it left out are counted, not listed as stale."""
    command = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q"]
    command += ["-m", "float16", "-k", "Pow", "--backend", "sim"]
    command += ["--results", str(tmp_path / "results"), "--known-issues", "vendor"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CI", None)
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    shown = SHIPPED.relative_to(ROOT)
    assert f"{shown}: 2 as expected, 0 changed, 0 stale entries, " in output
    assert " for cases not selected" in output
    assert "stale (matched no case" not in output
