"""Hostile input gives the same answers from SQLite and from a real PostgreSQL: names longer
than any column once allowed, NUL, lone surrogates, the store's own escape mark, brackets,
very long ids; every folder is imported or refused alike, named with its reason."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from harness.cli import main
from harness.history.location import shown
from harness.history.runinfo import HISTORY_KEY, configuration
from harness.history.schema import HEAD
from harness.history.store import MIGRATIONS, Store, store_url
from harness.results.journal import Journal, write_run_metadata
from harness.results.records import CaseRecord

LONG_NAME = ("resnet18-imagenet-int8-calibrated-" * 4)[:124]  # a 124-character file name
BRACKETS = "rk3562/Expand/float16/[b,c,1,w]:h=8193"
# A case id longer than any column once allowed (512) yet within the bound on ids
LONG_ID = "rk3562/model/" + "deep/" * 130 + "m/int8"
# An id over the bound: random, so PostgreSQL could not compress it into an index entry
TOO_LONG = "rk3562/model/" + "".join(random.Random(53).choices(string.ascii_letters, k=3000))
SDK = "2.5.0"


def user_case(name: str, dtype: str = "float16") -> str:
    return f"rk3562/model/{name}/{dtype}"


def hostile_record(case_id: str, **changes: Any) -> CaseRecord:
    """A user model's record, as ``hil run`` or ``pytest --models`` journals it."""
    name = case_id.split("/", 2)[-1].rsplit("/", 1)[0]
    fields: dict[str, Any] = {
        "id": case_id,
        "platform": "rk3562",
        "op": f"model:{name}",
        "dtype": case_id.rsplit("/", 1)[-1],
        "limit": "model",
        "value": name,
        "documented": "supported",
        "backend": "simulator",
        "verdict": "violation",
        "detail": f"placement: CPU fallback in {name}",
        "versions": {"rknn_toolkit2": SDK, "npu_hil": "0.1.0"},
        "artifacts": "cases/hostile",
        "started": "2026-12-01T02:10:00+00:00",
        "duration_s": 2.5,
        "sdk": SDK,
    }
    return CaseRecord(**{**fields, **changes})


def hostile_folder(root: Path, name: str, records: list[CaseRecord], **meta: Any) -> Path:
    """A results folder ``root/name`` holding one run of ``records``."""
    folder = root / name
    run = {
        "started": "2026-12-01T02:00:00+00:00",
        "platform": "rk3562",
        "backend": "sim",
        "tier": "default",
        "sdks": [SDK],
        "versions": {"rknn_toolkit2": SDK, "npu_hil": "0.1.0"},
        HISTORY_KEY: {
            "run": f"run-{name}",
            "revision": "abc000000001",
            "configuration": configuration("rk3562", None, "sim", "default", ""),
        },
    }
    write_run_metadata(folder, {**run, **meta})
    journal = Journal(folder)
    for record in records:
        journal.append(record, sync=False)
    return folder


# the folders, in import order; each holds the cases whose answers are compared
HOSTILE: dict[str, list[CaseRecord]] = {
    "long-name": [hostile_record(user_case(LONG_NAME))],
    "nul": [
        hostile_record(
            user_case("nul\x00name", "int8"),
            detail="stopped at \x00 in the log",
            versions={"rknn_toolkit2": "2.5.0\x00beta"},
        )
    ],
    "surrogate": [hostile_record(user_case("bad\udcffname"))],  # journalled as \udcff below
    "escape-mark": [hostile_record(user_case("\x1a{mark}"), backend='\x1a"board"')],
    "too-long": [hostile_record(TOO_LONG)],
    "brackets": [hostile_record(BRACKETS, op="Expand", limit="rk3562/Expand/h")],
    "long-id": [hostile_record(LONG_ID)],
}
LONG_RUN: dict[str, Any] = {  # a run.json whose every field is longer than its column once allowed
    "backend": "sim-" + "b" * 40,
    "platform": "rk3562," * 50,
    "sdks": ["2.5.0+" + "x" * 100],
    HISTORY_KEY: {"run": "run-long-run", "revision": "r" * 100, "configuration": "c" * 700},
}
LONG_SDK_CASE = user_case("long-run")


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("hostile")
    made = [hostile_folder(root, name, records) for name, records in HOSTILE.items()]
    # the journal writes a name's byte that is not UTF-8 as "\\xff"; a hand-made journal (or
    # an older harness) may hold the lone surrogate itself
    journal = root / "surrogate" / "journal.jsonl"
    journal.write_text(journal.read_text().replace("bad\\\\xffname", "bad\\udcffname"))
    sdk = LONG_RUN["sdks"][0]
    long_run = hostile_record(LONG_SDK_CASE, sdk=sdk, backend="board-" + "n" * 300)
    made.append(hostile_folder(root, "long-run", [long_run], **LONG_RUN))
    return made


def hil(capsys: pytest.CaptureFixture[str], store: str, *args: str) -> tuple[int, str, str]:
    """``hil history`` on ``store``; what it says with the store's name as ``STORE``."""
    code = main(["history", *args, "--hil-db", store])
    out, err = capsys.readouterr()
    return code, out.replace(shown(store), "STORE"), err.replace(shown(store), "STORE")


def stored_cases() -> list[str]:
    return [
        case_id
        for name, records in HOSTILE.items()
        for case_id in (record.id for record in records)
        if name != "too-long"
    ] + [LONG_SDK_CASE]


def answers(capsys: pytest.CaptureFixture[str], store: str, folders: list[Path]) -> dict[str, Any]:
    """Everything the store says of the hostile folders: the import, each case as JSON and
    as text, a glob over them, and the import again."""
    said: dict[str, Any] = {"import": hil(capsys, store, "import", *map(str, folders))}
    for case_id in stored_cases():
        said[case_id] = [hil(capsys, store, case_id, *form) for form in (["--json"], [])]
    said["glob"] = hil(capsys, store, "rk3562/model/*", "--json")
    said["again"] = hil(capsys, store, "import", *map(str, folders))
    return said


def test_hostile_folders_give_the_same_answers_from_sqlite_and_postgresql(
    folders: list[Path], tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from_sqlite = answers(capsys, str(tmp_path / "history.sqlite"), folders)
    from_postgres = answers(capsys, postgres_url, folders)
    assert json.dumps(from_sqlite) == json.dumps(from_postgres)  # NUL and surrogates alike

    code, out, err = from_sqlite["import"]
    too_long = folders[list(HOSTILE).index("too-long")]
    assert code == 2
    assert err == (
        f"hil: error: {too_long}/journal.jsonl: case {TOO_LONG[:60]}...: field 'case_id' is "
        f"{len(TOO_LONG)} bytes as stored: the store takes ids of at most 800 bytes\n"
    )
    good = [folder for folder in folders if folder != too_long]
    assert out.splitlines()[:-1] == [
        f"{folder}: new run run-{folder.name}: 1 records added, 0 updated, 0 already stored"
        for folder in good
    ]
    assert out.splitlines()[-1] == f"STORE: {len(good)} runs, {len(good)} records"
    code, out, err = from_sqlite["again"]
    assert code == 2 and err == from_sqlite["import"][2]
    assert all("run already stored" in line for line in out.splitlines()[:-1])

    for case_id in stored_cases():  # each case read back as it was written
        (code, out, err), (text_code, _, _) = from_sqlite[case_id]
        assert (code, text_code) == (0, 0), (case_id, err)
        [found] = json.loads(out)["cases"]
        assert found["case"] == case_id
        assert found["since"]["verdict"] == "violation"
    nul = json.loads(from_sqlite[user_case("nul\x00name", "int8")][0][1])["cases"][0]
    assert nul["since"]["versions"] == {"rknn_toolkit2": "2.5.0\x00beta"}
    mark = json.loads(from_sqlite[user_case("\x1a{mark}")][0][1])["cases"][0]
    assert mark["since"]["backend"] == '\x1a"board"'
    glob = json.loads(from_sqlite["glob"][1])["cases"]
    assert sorted(item["case"] for item in glob) == sorted(
        case_id for case_id in stored_cases() if case_id.startswith("rk3562/model/")
    )


def test_a_folder_the_database_refuses_is_named_and_the_next_still_imported(
    folders: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "history.sqlite")
    bad, good = folders[0], folders[1]
    with Store.open(store) as opened, opened.writing() as connection:  # a real refusal
        connection.exec_driver_sql(
            f"CREATE TRIGGER refuse BEFORE INSERT ON runs WHEN NEW.uid = 'run-{bad.name}' "
            "BEGIN SELECT RAISE(ABORT, 'refused by the database'); END"
        )
    code, out, err = hil(capsys, store, "import", str(bad), str(good))
    assert code == 2
    assert err == f"hil: error: {bad}: not imported: STORE: refused by the database\n"
    assert out.splitlines() == [
        f"{good}: new run run-{good.name}: 1 records added, 0 updated, 0 already stored",
        "STORE: 1 runs, 1 records",
    ]


def test_the_flaky_list_and_the_page_show_hostile_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ("bad\udcffname", "nul\x00name", "\x1a<b>")
    folders = []
    for night, verdict in enumerate(["confirmed", "violation", "confirmed", "violation"], 1):
        started = f"2026-12-0{night}T02:00:00+00:00"
        folder = hostile_folder(
            tmp_path,
            f"night-{night}",
            [hostile_record(user_case(name), verdict=verdict, started=started) for name in names],
            started=started,
        )
        journal = folder / "journal.jsonl"  # the surrogate itself, as a hand-made journal has it
        journal.write_text(journal.read_text().replace("bad\\\\xffname", "bad\\udcffname"))
        folders.append(folder)
    store = str(tmp_path / "history.sqlite")
    assert hil(capsys, store, "import", *map(str, folders))[0] == 0
    code, out, _ = hil(capsys, store, "--flaky", "--flips", "1", "--json")
    assert code == 0
    assert sorted(item["case"] for item in json.loads(out)["flaky"]) == sorted(
        map(user_case, names)
    )
    code, out, err = hil(capsys, store, "--html", str(tmp_path / "site"))
    assert code == 0, err
    page = (tmp_path / "site" / "history.html").read_text()
    assert "rk3562/model/bad\\xffname/float16" in page  # as the terminal shows it
    assert "rk3562/model/&lt;b&gt;/float16" in page and "\x00" not in page


def test_a_postgresql_store_of_the_first_schema_is_upgraded_to_take_long_names(
    folders: list[Path], postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    engine = create_engine(store_url(postgres_url))
    with engine.begin() as connection:  # the store as the first schema made it
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
    engine.dispose()
    code, out, err = hil(capsys, postgres_url, "import", str(folders[0]))
    assert code == 0, err
    assert out.startswith(f"{folders[0]}: new run run-long-name: 1 records added")
    with Store.open(postgres_url) as opened, opened.reading() as connection:
        assert (
            connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == HEAD
        )
