"""The history store as a nightly uses it: real suite runs (plugin, simulator, journal) write
themselves into the store at their end, under xdist too; a failure of a case the history
shows flapping is flaky (``--flaky-ok`` excuses it); ``--baseline last``; importing a main
job's and an SDK-matrix run's results folders."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import secrets
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from tests.fakes.postgres import Cluster
from tests.helpers.paths import SUITE

from harness.cli import main
from harness.history import queries
from harness.history.importing import count_rows, write_folder
from harness.history.runinfo import HISTORY_KEY
from harness.history.store import Store
from harness.results.journal import Journal, read_records, read_run_metadata, write_run_metadata

POW_2 = "rk3562/Pow/float16/values=2"
POW_4 = "rk3562/Pow/float16/values=4"
EXPAND_8193 = "rk3562/Expand/float16/[b,c,1,w]:h=8193"
MAXPOOL_8 = "rk3562/MaxPool/float16/kernel_h=8"
VIOLATION = "rk3562/Pow/float16/exponent_dtype=int8"  # a violation on the simulator

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("rknn") is None, reason="rknn-toolkit2 is not installed"
)


def run_suite(
    results: Path, store: Path | str, case_ids: list[str], *args: str, **variables: str
) -> subprocess.CompletedProcess[str]:
    node_ids = [f"{SUITE}::test_documented_limit[{case_id}]" for case_id in case_ids]
    command = [sys.executable, "-m", "pytest", *node_ids, "-p", "no:cacheprovider", "-rx"]
    command += ["--results", str(results), "--hil-cache", "off", "--hil-db", str(store), *args]
    env = {**os.environ, **variables}
    return subprocess.run(
        command, cwd=results.parent, capture_output=True, text=True, timeout=600, env=env
    )


def test_two_xdist_workers_write_every_record_once(tmp_path: Path) -> None:
    store = tmp_path / "history.sqlite"
    cases = [POW_4, POW_2, EXPAND_8193, MAXPOOL_8]
    run = run_suite(tmp_path / "results", store, cases, "-n", "2")
    assert run.returncode == 0, run.stdout + run.stderr
    run_id = read_run_metadata(tmp_path / "results")[HISTORY_KEY]["run"]
    assert f"npu-hil: history store {store}: run {run_id}, 4 records written" in run.stdout
    with Store.open(str(store)) as opened:
        assert count_rows(opened) == (1, 4)
        written = write_folder(opened, tmp_path / "results")  # importing it adds nothing
        assert (written.new_run, written.added, written.updated) == (False, 0, 0)
        [history] = queries.case_history(opened, POW_2, queries.Filters())
    assert history.since.host  # the run's own write knows its host
    assert history.since.verdict == "confirmed"


def _history_of(results: Path, store: Path, verdicts: list[str]) -> None:
    """Earlier nights of the run in ``results``: one folder per verdict, its record the real
    one with that verdict, imported into ``store``."""
    meta = read_run_metadata(results)
    [record] = read_records(results)
    with Store.open(str(store)) as opened:
        for night, verdict in enumerate(verdicts, start=1):
            folder = results.parent / f"night-{night:02d}"
            started = f"2026-11-{night:02d}T02:00:00+00:00"
            entry = {**meta[HISTORY_KEY], "run": f"earlier-{night}"}
            write_run_metadata(folder, {**meta, "started": started, HISTORY_KEY: entry})
            Journal(folder).append(dataclasses.replace(record, verdict=verdict, started=started))
            write_folder(opened, folder)


def test_a_failure_that_flaps_in_the_history_is_flaky_and_flaky_ok_excuses_it(
    tmp_path: Path,
) -> None:
    store = tmp_path / "history.sqlite"
    first = run_suite(tmp_path / "first", store, [VIOLATION])
    assert first.returncode == 1  # no history yet: an ordinary failure
    assert "npu-hil flaky" not in first.stdout
    flapping = ["confirmed", "violation"] * 5
    _history_of(tmp_path / "first", tmp_path / "flapping.sqlite", flapping)

    flapping_store = tmp_path / "flapping.sqlite"
    excused = run_suite(tmp_path / "excused", flapping_store, [VIOLATION], "--flaky-ok")
    assert excused.returncode == 0, excused.stdout + excused.stderr
    assert "1 xfailed" in excused.stdout
    flips = "flipped 9 times in its last 10 runs (100%)"
    assert "1 failing case(s) flap in the history store; they do not fail the run (--flaky-ok)" in (
        excused.stdout
    )
    assert f"  {VIOLATION} (violation): {flips}" in excused.stdout, excused.stdout
    [record] = read_records(tmp_path / "excused")
    assert record.flaky == {"flips": 9, "runs": 10, "rate": 1.0}
    assert main(["report", str(tmp_path / "excused")]) == 0
    assert f"(flaky: {flips})" in (tmp_path / "excused" / "report.md").read_text()
    assert f"(flaky: {flips})" in (tmp_path / "excused" / "report.html").read_text()

    # without --flaky-ok it is still said to be flaky, and fails
    strict = run_suite(tmp_path / "strict", flapping_store, [VIOLATION])
    assert strict.returncode == 1
    assert "they fail the run" in strict.stdout

    # a case that was stable and now fails is a failure as ever
    _history_of(tmp_path / "first", tmp_path / "stable.sqlite", ["confirmed"] * 10)
    stable = run_suite(tmp_path / "stable", tmp_path / "stable.sqlite", [VIOLATION], "--flaky-ok")
    assert stable.returncode == 1
    assert "npu-hil flaky" not in stable.stdout
    assert read_records(tmp_path / "stable")[0].flaky is None


def test_the_baseline_can_be_the_last_run_of_this_configuration(tmp_path: Path) -> None:
    store = tmp_path / "history.sqlite"
    first = run_suite(tmp_path / "night-1", store, [VIOLATION, POW_2])
    assert first.returncode == 1
    second = run_suite(tmp_path / "night-2", store, [VIOLATION, POW_2], "--baseline", "last")
    assert second.returncode == 0, second.stdout + second.stderr  # failed the same way before
    assert f"{tmp_path / 'night-1'}: new 0, fixed 0, changed 0, unchanged 2" in second.stdout
    assert read_run_metadata(tmp_path / "night-2")["baseline"] == str(tmp_path / "night-1")
    # another configuration (here: another tier) has no earlier run
    other = run_suite(tmp_path / "night-3", store, [POW_2], "--baseline", "last", "--tier", "full")
    assert other.returncode == 0, other.stdout + other.stderr
    assert "no earlier run of this configuration in" in other.stdout


def test_importing_a_main_job_and_an_sdk_matrix_run_fills_the_store_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.vendors import vendor_named

    sdks = vendor_named("rknn").sdks("all")
    if len(sdks) < 2:
        pytest.skip("needs a second SDK: hil sdk install 2.3.2")
    scratch = tmp_path / "scratch.sqlite"  # the runs' own writes go elsewhere
    main_job = run_suite(tmp_path / "main", scratch, [POW_4, POW_2])
    assert main_job.returncode == 0, main_job.stdout + main_job.stderr
    both = sdks[-2:]
    cases = [f"{case}-sdk{sdk}" for sdk in both for case in (POW_4, POW_2)]
    matrix = run_suite(tmp_path / "matrix", scratch, cases, "--sdk", ",".join(both))
    assert matrix.returncode == 0, matrix.stdout + matrix.stderr
    store = tmp_path / "history.sqlite"
    folders = [str(tmp_path / "main"), str(tmp_path / "matrix")]
    command = ["history", "import", *folders, "--hil-db", str(store)]
    capsys.readouterr()
    assert main(command) == 0
    imported = capsys.readouterr().out
    matrix_records = len(read_records(tmp_path / "matrix"))
    assert matrix_records == 4  # two cases on each SDK
    assert imported.splitlines()[-1] == f"{store}: 2 runs, {2 + matrix_records} records"
    assert main(command) == 0
    again = capsys.readouterr().out
    assert again.splitlines()[-1] == f"{store}: 2 runs, {2 + matrix_records} records"
    assert again.count(" 0 records added, 0 updated") == 2
    with Store.open(str(store)) as opened:
        histories = queries.case_history(opened, POW_2, queries.Filters())
    # one series for the main job, one per SDK of the matrix run
    assert sorted(h.lane for h in histories) == ["", *sorted(both)]


def test_a_store_that_cannot_be_written_costs_the_run_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store's folder would be\n")
    store = blocker / "history.sqlite"
    results = tmp_path / "results"
    run = run_suite(results, store, [POW_2])
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"npu-hil: history store: this run was not written ({store}: cannot create" in run.stdout
    assert f"the journal has it: hil history import {results}" in run.stdout
    with Store.open(str(tmp_path / "later.sqlite")) as later:  # and that import adds it
        assert write_folder(later, results).added == 1

    refused = run_suite(tmp_path / "other", "mysql://hil@127.0.0.1/db", [POW_2])
    assert refused.returncode == 4  # a usage error, before anything runs
    assert "the store is SQLite or PostgreSQL, not mysql" in refused.stderr


def test_the_baseline_of_a_store_with_a_password_keeps_it_out_of_the_results(
    tmp_path: Path, postgres_cluster: Cluster
) -> None:
    """``--baseline last`` names its store in run.json and so in the reports: never with the
    password, even one holding "/" and a percent-encoded "@", even one also in a variable the
    redactor knows (HIL_DB_PASSWORD)."""
    password = f"pa/ss@{secrets.token_hex(8)}"
    role = "hil_" + secrets.token_hex(4)
    with psycopg.connect(postgres_cluster.url(), autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {role} LOGIN SUPERUSER PASSWORD '{password}'")
    database = postgres_cluster.create_database().rsplit("/", 1)[1]
    quoted = password.replace("@", "%40")
    store = f"postgresql://{role}:{quoted}@127.0.0.1:{postgres_cluster.port}/{database}"
    results = tmp_path / "night-1"
    run = run_suite(results, store, [POW_2], "--baseline", "last", HIL_DB_PASSWORD=password)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "no earlier run of this configuration in" in run.stdout
    assert main(["report", str(results)]) == 0
    shown = [run.stdout, run.stderr]
    shown += [f.read_text(errors="replace") for f in results.rglob("*") if f.is_file()]
    assert "no earlier run of this configuration in" in read_run_metadata(results)["baseline"]
    for text in shown:
        assert "pa/ss" not in text and password[6:] not in text
