"""One results folder is one run: ``hil run`` and the suites refuse a folder another run
wrote, naming it and the way out; ``--append`` adds a run to it as a run of its own."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import onnx
import pytest
from tests.helpers.marks import needs_toolkit
from tests.helpers.nightly import POW_2, run_suite
from tests.helpers.user_models import five_node_model

from harness.cli import main
from harness.results.journal import read_records

RV1106_POW = "rv1106/Pow/int8/values=2"


def _run(tmp_path: Path, *args: str) -> int:
    model = tmp_path / "five.onnx"
    onnx.save(five_node_model(), model)
    cache = ["--hil-cache", str(tmp_path / "cache")]
    return main(["run", str(model), "--platform", "rk3562", *cache, *args])


@needs_toolkit
def test_hil_run_refuses_a_folder_of_another_run_and_appends_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _run(tmp_path) == 1  # the five-node model's wrong result
    results = tmp_path / "results-run-five"  # the default: the model's own, not "results"
    first = json.loads((results / "run.json").read_text())
    assert first["command"] == "hil run" and first["vendor"] == "rknn"
    recorded = [r.id for r in read_records(results)]  # the model's, and its per-layer run's
    assert {r.vendor for r in read_records(results)} == {"rknn"}
    assert "rk3562/model/five/float16" in recorded
    capsys.readouterr()

    assert _run(tmp_path) == 2
    error = capsys.readouterr().err
    assert f"{Path('results-run-five')} holds another run (hil run, platform rk3562" in error
    assert "Give a new folder (--results DIR), or --append" in error
    assert json.loads((results / "run.json").read_text()) == first  # nothing lost
    assert [r.id for r in read_records(results)] == recorded

    assert _run(tmp_path, "--append", "--name", "again") == 1
    meta = json.loads((results / "run.json").read_text())
    assert {k: v for k, v in meta.items() if k != "appended"} == first
    [appended] = meta["appended"]
    assert appended["command"] == "hil run" and appended["started"] >= first["started"]
    assert {r.id for r in read_records(results)} - set(recorded) == {
        "rk3562/model/again/float16",
        "rk3562/layers/again/float16",
    }


@needs_toolkit
def test_a_suite_run_refuses_the_folder_of_another_platforms_run(tmp_path: Path) -> None:
    store = tmp_path / "history.db"
    db = ["--hil-db", str(store)]
    first = run_suite(tmp_path, [POW_2], *db)
    assert first.returncode == 0, first.stdout + first.stderr
    results = tmp_path / "results"
    assert json.loads((results / "run.json").read_text())["vendor"] == "rknn"
    assert [r.vendor for r in read_records(results)] == ["rknn"]

    # the same job again is no other run (the README's warm rerun)
    again = run_suite(tmp_path, [POW_2], *db)
    assert again.returncode == 0, again.stdout + again.stderr
    before = (results / "run.json").read_text()

    other = run_suite(tmp_path, [RV1106_POW], "--platform", "rv1106", *db)
    output = other.stdout + other.stderr
    assert other.returncode == 4, output
    assert f"{results} holds another run (the suites, platform rk3562" in other.stderr
    assert "Give a new folder (--results DIR, or HIL_RESULTS=DIR with tox), or --append" in (
        other.stderr
    )
    assert "collected" not in output
    assert (results / "run.json").read_text() == before

    appended = run_suite(tmp_path, [RV1106_POW], "--platform", "rv1106", "--append", *db)
    assert appended.returncode == 0, appended.stdout + appended.stderr
    meta = json.loads((results / "run.json").read_text())
    assert meta["platform"] == "rk3562" and meta["appended"][0]["platform"] == "rv1106"
    assert meta["vendor"] == meta["appended"][0]["vendor"] == "rknn"
    uid = meta["appended"][0]["history"]["run"]
    assert uid != meta["history"]["run"]
    with sqlite3.connect(store) as db_connection:
        rows = db_connection.execute(
            "select runs.uid, runs.platform, runs.vendor, records.case_id, records.vendor "
            "from records join runs on runs.id = records.run_id where runs.uid = ?",
            (uid,),
        ).fetchall()
    assert rows == [(uid, "rv1106", "rknn", RV1106_POW, "rknn")]
