"""``hil history`` reads and never writes: an id with brackets names its case, a typo naming
another SQLite file changes nothing in it, a store on a file system or in a folder the reader
cannot write is read; an import names each bad folder and field and imports the rest."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.history_nights import FLAPPING, STABLE, plan, write

from harness.cli import main


def hil(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["history", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A store holding two nights."""
    path = tmp_path / "store" / "history.sqlite"
    folders = [str(write(night, tmp_path / "nights")) for night in plan()[:2]]
    assert main(["history", "import", *folders, "--hil-db", str(path)]) == 0
    capsys.readouterr()
    return path


def test_a_case_id_with_brackets_names_its_case(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "[" in FLAPPING
    code, out, err = hil(capsys, FLAPPING, "--json", "--hil-db", str(store))
    assert code == 0, err
    assert [item["case"] for item in json.loads(out)["cases"]] == [FLAPPING]
    code, out, _ = hil(capsys, "rk3562/Expand/*", "--json", "--hil-db", str(store))
    assert [item["case"] for item in json.loads(out)["cases"]] == [FLAPPING]  # globs still do


def test_reading_another_sqlite_file_changes_nothing_in_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "notes.sqlite"  # someone's own database, named by a typo
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE notes (text)")
    before = other.read_bytes()
    code, _, err = hil(capsys, STABLE, "--hil-db", str(other))
    assert code == 2
    assert f"{other}: not an npu-hil history store (no npu-hil tables in it)" in err
    assert other.read_bytes() == before  # no tables, no switch to WAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.sqlite"]


@pytest.fixture
def unwritable(store: Path) -> Iterator[Path]:
    """The store's file and folder made immutable: nothing can be written there, not even by
    root (a read-only file system, or a folder the reader cannot write, as root sees it)."""
    targets = [str(store), str(store.parent)]
    if shutil.which("chattr") is None:
        pytest.skip("no chattr")
    made = subprocess.run(["chattr", "+i", *targets], capture_output=True, check=False)
    if made.returncode:
        pytest.skip(f"chattr +i is refused here: {made.stderr.decode().strip()}")
    try:
        yield store
    finally:
        subprocess.run(["chattr", "-i", *targets], check=True)


def test_a_store_that_cannot_be_written_is_read(
    unwritable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = hil(capsys, STABLE, "--json", "--hil-db", str(unwritable))
    assert code == 0, err
    assert [len(item["nights"]) for item in json.loads(out)["cases"]] == [2]
    code, out, err = hil(capsys, "--flaky", "--hil-db", str(unwritable))
    assert code == 0, err


def broken(folder: Path, field: str, value: Any) -> Path:
    """``folder`` with run.json's ``field`` set to ``value``."""
    meta = json.loads((folder / "run.json").read_text())
    meta[field] = value
    (folder / "run.json").write_text(json.dumps(meta))
    return folder


def test_an_import_names_each_bad_folder_and_field_and_imports_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nights = iter(plan())
    folders = [
        broken(write(next(nights), tmp_path), "history", "run-00"),
        broken(write(next(nights), tmp_path), "sdks", "2.5.0"),
        broken(write(next(nights), tmp_path), "versions", ["2.5.0"]),
        broken(write(next(nights), tmp_path), "history", {"run": ["r"]}),
    ]
    good = write(next(nights), tmp_path)
    store = str(tmp_path / "history.sqlite")
    code, out, err = hil(capsys, "import", *map(str, [*folders, good]), "--hil-db", store)
    assert code == 2
    assert "Traceback" not in err
    said = err.splitlines()
    assert said == [
        f"hil: error: {folders[0]}/run.json: field 'history' must be a JSON object, got 'run-00'",
        f"hil: error: {folders[1]}/run.json: field 'sdks' must be an array, got '2.5.0'",
        f"hil: error: {folders[2]}/run.json: field 'versions' must be a JSON object, got ['2.5.0']",
        f"hil: error: {folders[3]}/run.json: field 'history.run' must be a string, got ['r']",
    ]
    assert out.splitlines() == [
        f"{good}: new run run-04: 4 records added, 0 updated, 0 already stored",
        f"{store}: 1 runs, 4 records",
    ]
