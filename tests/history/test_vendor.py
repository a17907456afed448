"""The vendor in the results store: a store the previous schema made is upgraded and its rows
given the vendor of what they hold (SQLite and a real PostgreSQL); ``hil history`` shows the
vendor; the flaky list, a case's series and ``--baseline last`` never mix two vendors' runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import MetaData, create_engine, select
from tests.fakes.history_nights import BREAKS, plan, write

from harness.cli import main
from harness.history.importing import record_row, run_entry
from harness.history.queries import flip_record, last_run
from harness.history.runinfo import HISTORY_KEY, configuration
from harness.history.schema import HEAD, records, runs
from harness.history.store import MIGRATIONS, Store, store_url
from harness.results.journal import Journal, read_records, read_run_metadata, write_run_metadata
from harness.results.records import CaseRecord
from harness.vendors import platform_vendors

CASE = "rk3562/Pow/float16/values=2"
JOB = configuration("rk3562", None, "sim", "default", "")


def hil(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["history", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _folder(
    root: Path, name: str, platform: str, case_platform: str, vendor: str | None = None
) -> Path:
    """A results folder of one record on ``case_platform``, of a run on ``platform``; its
    run.json and record name ``vendor`` (None: written before runs recorded it)."""
    folder = root / name
    meta: dict[str, Any] = {
        "started": f"2026-12-{len(list(root.iterdir())) + 1:02d}T02:00:00+00:00",
        "platform": platform,
        "backend": "sim",
        "tier": "default",
        "sdks": ["1.0"],
        HISTORY_KEY: {"run": name, "revision": "r1", "configuration": JOB},
    }
    if vendor is not None:
        meta["vendor"] = vendor
    write_run_metadata(folder, meta)
    case = CaseRecord(
        f"{case_platform}/Pow/float16/values=2", case_platform, "Pow", "float16", "values",
        "2", "supported", "simulator", "confirmed", sdk="1.0", vendor=vendor or "",
        started=meta["started"],
    )  # fmt: skip
    Journal(folder).append(case)
    return folder


def _previous_store(location: str, folders: list[Path]) -> None:
    """A store as schema 0002 made it, holding ``folders`` as its code wrote them (no
    vendor column)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    engine = create_engine(store_url(location))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0002")
        tables = MetaData()
        tables.reflect(connection)
        for folder in folders:
            meta = read_run_metadata(folder)
            entry = run_entry(meta, folder, "", "import", set(), {})
            del entry["vendor"]
            inserted = connection.execute(tables.tables["runs"].insert().values(**entry))
            rows = [record_row(record, folder, {}) for record in read_records(folder)]
            for row in rows:
                del row["vendor"]
                row["run_id"] = inserted.inserted_primary_key[0]
            connection.execute(tables.tables["records"].insert(), rows)
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    return str(request.getfixturevalue("postgres_url"))


def test_a_store_of_the_previous_schema_gets_the_vendor_its_rows_hold(
    location: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    nights = [write(night, root) for night in plan()[:2]]  # rk3562: Rockchip's
    every = _folder(root, "all-j6e", "all", "J6E")  # --platform all: its records' vendor
    several = _folder(root, "several", "rv1106,rk3588", "rv1106")
    unknown = _folder(root, "unknown", "xpu9", "xpu9")  # no vendor has it: unknown
    _previous_store(location, [*nights, every, several, unknown])

    # upgraded to HEAD, as a run or hil history import opens it: with the vendors' platforms
    opened = Store.open(location, platform_vendors=platform_vendors())
    with opened, opened.reading() as connection:
        assert connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == (
            HEAD
        )
        stored_runs = dict(connection.execute(select(runs.c.uid, runs.c.vendor)).all())
        by_platform = dict(
            connection.execute(select(records.c.platform, records.c.vendor).distinct()).all()
        )
    assert stored_runs == {
        "run-00": "rknn",
        "run-01": "rknn",
        "all-j6e": "horizon",
        "several": "rknn",
        "unknown": "",
    }
    assert by_platform == {"rk3562": "rknn", "J6E": "horizon", "rv1106": "rknn", "xpu9": ""}

    code, out, err = hil(capsys, BREAKS, "--json", "--hil-db", location)
    assert code == 0, err
    [series] = json.loads(out)["cases"]
    assert (series["vendor"], series["case"], len(series["nights"])) == ("rknn", BREAKS, 2)
    # the same folders imported now are given the same vendors
    fresh = str(tmp_path / "fresh.sqlite")
    folders = [*nights, every, several, unknown]
    assert hil(capsys, "import", *map(str, folders), "--hil-db", fresh)[0] == 0
    with Store.open(fresh) as opened, opened.reading() as connection:
        assert dict(connection.execute(select(runs.c.uid, runs.c.vendor)).all()) == stored_runs


def test_two_vendors_runs_of_one_case_are_two_series_and_never_flap_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A case id and platform two vendors share (another vendor's toolkit for a Rockchip
    board, say): each vendor's verdict is steady, so mixed night by night they would flip."""
    root = tmp_path / "runs"
    root.mkdir()
    folders = []
    for night in range(10):
        vendor = "rknn" if night % 2 else "acme"
        folder = _folder(root, f"night-{night}", "rk3562", "rk3562", vendor)
        if vendor == "acme":  # acme's run of the case always fails
            [case] = read_records(folder)
            (folder / "journal.jsonl").unlink()
            case.verdict = "violation"
            Journal(folder).append(case)
        folders.append(folder)
    store = str(tmp_path / "history.sqlite")
    assert hil(capsys, "import", *map(str, folders), "--hil-db", store)[0] == 0

    code, out, err = hil(capsys, "--flaky", "--flips", "0", "--json", "--hil-db", store)
    assert code == 0, err
    assert json.loads(out)["flaky"] == []  # mixed, they would flip 9 times in 10 runs
    code, out, _ = hil(capsys, CASE, "--json", "--hil-db", store)
    series = {item["vendor"]: item for item in json.loads(out)["cases"]}
    assert {vendor: item["since"]["verdict"] for vendor, item in series.items()} == {
        "acme": "violation",
        "rknn": "confirmed",
    }
    assert {item["runs_in_state"] for item in series.values()} == {5}
    code, out, _ = hil(capsys, CASE, "--hil-db", store)
    assert f"{CASE} (vendor acme, rk3562)" in out and f"{CASE} (vendor rknn, rk3562)" in out

    with Store.open(store) as opened:
        failing = read_records(folders[0])[0]  # acme's, failing
        found = flip_record(opened, failing)
        assert found is not None and (found.vendor, found.flips, found.runs) == ("acme", 0, 5)
        # --baseline last: the latest run of the job and this run's vendor, not the latest run
        latest = last_run(opened, JOB, "acme", other_than="")
        assert latest is not None and latest.uid == "night-8"
        assert last_run(opened, JOB, "other", other_than="") is None
