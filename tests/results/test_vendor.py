"""Runs of two vendors are never compared: ``hil diff``, a ``--baseline`` folder and the
report's baseline section refuse them, naming both folders and both vendors; a run written
before runs recorded their vendor is compared only with another such run; a results folder
never takes another vendor's run, appended or resumed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers.nightly import POW_2, run_suite

from harness.cli import main
from harness.judge.verdict import FAILING_VERDICTS
from harness.policy.baseline import Baseline
from harness.report.baseline import baseline_changes
from harness.results.journal import Journal, JournalError, read_records, write_run_metadata
from harness.results.records import CaseRecord
from harness.results.runs import append_run, read_run


def _run(
    folder: Path, vendor: str | None, platform: str = "rk3562", verdict: str = "confirmed"
) -> Path:
    """A results folder of one case's record; run.json and record name ``vendor`` (None: a
    run written before runs recorded it)."""
    meta: dict[str, object] = {"started": "2026-12-01T02:00:00+00:00", "platform": platform}
    if vendor is not None:
        meta["vendor"] = vendor
    write_run_metadata(folder, meta)
    record = CaseRecord(
        f"{platform}/Pow/float16/values=2", platform, "Pow", "float16", "values", "2",
        "supported", "simulator", verdict, vendor=vendor or "",
    )  # fmt: skip
    Journal(folder).append(record)
    return folder


def _diff(capsys: pytest.CaptureFixture[str], old: Path, new: Path) -> tuple[int, str]:
    code = main(["diff", str(old), str(new)])
    return code, capsys.readouterr().err


def test_a_diff_of_two_vendors_runs_is_refused_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rknn = _run(tmp_path / "rknn", "rknn")
    horizon = _run(tmp_path / "horizon", "horizon", "J6E")
    code, err = _diff(capsys, rknn, horizon)
    assert code == 2
    assert err == (
        f"hil diff: error: {rknn} is a run of vendor rknn and {horizon} is a run of vendor "
        "horizon: runs of two vendors are never compared (their cases, SDKs and verdicts mean "
        "different things)\n"
    )
    # one vendor's runs are compared as ever
    again = _run(tmp_path / "again", "rknn", verdict="violation")
    assert _diff(capsys, rknn, again)[0] == 1


def test_a_run_that_names_no_vendor_is_compared_only_with_another_such_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    older = _run(tmp_path / "older", None)
    rknn = _run(tmp_path / "rknn", "rknn")
    code, err = _diff(capsys, older, rknn)
    assert code == 2
    assert f"{older} names no vendor (written before runs recorded theirs) and {rknn} is a" in err
    assert _diff(capsys, older, _run(tmp_path / "older-too", None))[0] == 0


def test_a_run_whose_records_name_two_vendors_is_refused(tmp_path: Path) -> None:
    mixed = _run(tmp_path / "mixed", "rknn")
    [record] = read_records(mixed)
    record.id, record.vendor = "rk3562/Pow/float16/values=3", "acme"
    Journal(mixed).append(record)
    with pytest.raises(JournalError, match=f"{mixed}: holds the runs of vendors acme, rknn"):
        read_run([mixed]).vendor()


def test_a_baseline_of_another_vendor_is_refused_by_the_run_and_the_report(
    tmp_path: Path,
) -> None:
    baseline = _run(tmp_path / "baseline", "horizon", "J6E")
    with pytest.raises(JournalError) as refused:
        Baseline(baseline, FAILING_VERDICTS, vendor="rknn")
    assert str(refused.value).startswith(
        f"{baseline} is a run of vendor horizon and this run is a run of vendor rknn: "
    )
    assert Baseline(baseline, FAILING_VERDICTS, vendor="horizon").verdicts  # its own vendor's

    run = _run(tmp_path / "run", "rknn")
    meta = {**json.loads((run / "run.json").read_text()), "baseline": str(baseline)}
    changes = baseline_changes(meta, read_records(run))
    assert changes is not None and changes.summary is None
    assert changes.problem.startswith(f"{baseline} is a run of vendor horizon and this run is")


def test_a_results_folder_never_takes_another_vendors_run(tmp_path: Path) -> None:
    folder = _run(tmp_path / "results", "rknn")
    with pytest.raises(JournalError, match="is a run of vendor rknn, this run is vendor horizon"):
        append_run(folder, {"started": "2026-12-02T02:00:00+00:00", "vendor": "horizon"})
    append_run(folder, {"started": "2026-12-02T02:00:00+00:00", "vendor": "rknn"})
    assert [run["vendor"] for run in json.loads((folder / "run.json").read_text())["appended"]] == [
        "rknn"
    ]


def test_a_resumed_run_of_another_vendor_is_refused(tmp_path: Path) -> None:
    results = _run(tmp_path / "results", "horizon", "J6E")
    done = run_suite(tmp_path, [POW_2], "--resume")  # an rk3562 case: Rockchip's
    assert done.returncode == 4, done.stdout + done.stderr  # a usage error, before any case
    assert (
        f"--resume: {results} holds a run of vendor horizon; this run's vendor is rknn: a run has "
        "one vendor" in done.stderr
    )
    assert [record.vendor for record in read_records(results)] == ["horizon"]
