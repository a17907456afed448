"""The results store: thirty synthetic nights in SQLite and in a real PostgreSQL give the
same answers; imports are idempotent; several writers lose nothing; bad input is named."""

from __future__ import annotations

import dataclasses
import itertools
import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.history_nights import (
    BREAKS,
    FLAPPING,
    KILLED,
    MAXPOOL_LIMIT,
    REDEFINED,
    REDEFINED_AT,
    SDK_CHANGE,
    STABLE,
    flapping_verdict,
    plan,
    record,
    write,
    write_all,
)

from harness.cli import main
from harness.history.importing import count_rows, write_folder
from harness.history.queries import Filters, case_history, night_counts
from harness.history.runinfo import HISTORY_KEY, history_entry
from harness.history.schema import HEAD, REVISIONS
from harness.history.store import MIGRATIONS, Store, StoreError
from harness.results.journal import Journal, read_run_metadata, write_run_metadata


def hil(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["history", *args])
    out, err = capsys.readouterr()
    return code, out, err


def answers(capsys: pytest.CaptureFixture[str], store: str) -> dict[str, Any]:
    """What hil history says of the nights, as JSON."""
    found: dict[str, Any] = {}
    for name, args in {
        "breaks": [BREAKS],
        "limit": [MAXPOOL_LIMIT],
        "glob": ["rk3562/Pow/*"],
        "flaky": ["--flaky"],
        "flaky since": ["--flaky", "--since", "2026-11-20", "--flips", "1"],
    }.items():
        code, out, err = hil(capsys, *args, "--json", "--hil-db", store)
        assert code == 0, err
        found[name] = json.loads(out)
    return found


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_all(tmp_path_factory.mktemp("nights"), timed=True)


def test_thirty_nights_give_the_same_answers_from_sqlite_and_postgresql(
    nights: list[Path], tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite = str(tmp_path / "history.sqlite")
    for store in (sqlite, postgres_url):
        with pytest.warns(UserWarning, match="truncated last line"):
            code, out, err = hil(capsys, "import", *map(str, nights), "--hil-db", store)
        assert code == 0, err
        assert out.splitlines()[-1].endswith(": 30 runs, 117 records")  # the killed run: 1
    assert postgres_url.split("@")[0].split(":")[-1] not in out  # no password shown
    from_sqlite, from_postgres = answers(capsys, sqlite), answers(capsys, postgres_url)
    assert from_sqlite == from_postgres

    # the case that broke when the job moved to SDK 2.5.0: since that night, and why
    [breaks] = from_sqlite["breaks"]["cases"]
    night = plan()[SDK_CHANGE].date
    assert (breaks["since"]["verdict"], breaks["since"]["night"]) == ("violation", night)
    assert breaks["previous"]["verdict"] == "doc-drift"
    assert breaks["runs_in_state"] == 30 - SDK_CHANGE - 1  # less the killed night
    changes = {c["what"]: (c["before"], c["after"]) for c in breaks["changes"]}
    assert changes == {"SDK": ("2.3.2", "2.5.0"), "rknn_toolkit2": ("2.3.2", "2.5.0")}
    assert len(breaks["nights"]) == 29  # not in the killed run
    assert plan()[KILLED].date not in [n["night"] for n in breaks["nights"]]
    assert from_sqlite["limit"] == from_sqlite["breaks"]  # the only case of that limit

    # a glob: both Pow cases; the redefined one changed because its definition did
    by_case = {item["case"]: item for item in from_sqlite["glob"]["cases"]}
    assert sorted(by_case) == [STABLE, REDEFINED]
    assert by_case[STABLE]["previous"] is None and by_case[STABLE]["runs_in_state"] == 30
    redefined = by_case[REDEFINED]
    assert redefined["since"]["night"] == plan()[REDEFINED_AT].date
    assert [c["what"] for c in redefined["changes"]] == ["case definition"]

    # the flaky list: the flapping case, once per configuration (SDK), its flips counted
    # over each one's last 10 runs (the killed night holds no record of it)
    expected = []
    for sdk, nights_of_sdk in (("2.5.0", range(SDK_CHANGE, 30)), ("2.3.2", range(SDK_CHANGE))):
        ran = [index for index in nights_of_sdk if index != KILLED][-10:]
        verdicts = [flapping_verdict(index) for index in ran]
        flips = sum(old != new for old, new in itertools.pairwise(verdicts))
        expected.append((FLAPPING, sdk, verdicts, flips, round(flips / 9, 4)))
    found = from_sqlite["flaky"]["flaky"]
    assert [(f["case"], f["sdk"], f["verdicts"], f["flips"], f["rate"]) for f in found] == sorted(
        expected, key=lambda item: (-item[4], item[1])
    )
    since = [n.index for n in plan() if n.index >= 19 and n.index != KILLED]
    assert from_sqlite["flaky since"]["flaky"][0]["runs"] == len(since)


def test_the_text_answer_names_the_night_and_what_changed(
    nights: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "history.sqlite")
    with pytest.warns(UserWarning):
        hil(capsys, "import", *map(str, nights), "--hil-db", store)
    code, out, _ = hil(capsys, BREAKS, "--hil-db", store, "--since", "2026-11-15")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"{BREAKS} (vendor rknn, rk3562)"
    assert len(lines) == 1 + 15 + 1  # nights 15..30 less the killed one, then the answer
    assert lines[1] == (
        "  2026-11-15T02:00:00+00:00  run run-14  doc-drift        SDK 2.3.2    simulator    "
        "harness abc000000002"
    )
    code, out, _ = hil(capsys, STABLE, "--hil-db", store, "--since", "2026-11-30")
    assert out.splitlines()[1].endswith("harness abc000000002  median 1.290 ms")  # --perf
    assert lines[-1] == (
        f"  violation since {plan()[SDK_CHANGE].date} (12 runs; doc-drift on "
        f"{plan()[SDK_CHANGE - 1].date}), that night changed: SDK 2.3.2 -> 2.5.0, "
        "rknn_toolkit2 2.3.2 -> 2.5.0"
    )
    code, out, _ = hil(capsys, "--flaky", "--sdk", "2.5.0", "--hil-db", store)
    assert out == (
        f"{FLAPPING} (vendor rknn, rk3562, SDK 2.5.0, simulator): flipped 6 times in its last 10 "
        "runs (67%): confirmed confirmed violation confirmed violation confirmed confirmed "
        "violation confirmed confirmed\n"
    )
    assert hil(capsys, "rk3562/Nothing/*", "--hil-db", store)[0] == 1


def test_importing_again_adds_nothing(
    nights: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "history.sqlite")
    for _attempt in range(2):
        code, out, _ = hil(capsys, "import", *map(str, nights[:5]), "--hil-db", store)
        assert code == 0
    assert all("run already stored" in line for line in out.splitlines()[:-1])
    assert all(" 0 records added, 0 updated" in line for line in out.splitlines()[:-1])
    with Store.open(store) as opened:
        assert count_rows(opened) == (5, 20)


TWO_WRITERS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from harness.history.importing import write_folder
    from harness.history.store import Store
    import warnings
    warnings.simplefilter("ignore")
    store = Store.open(sys.argv[1])
    for folder in sys.argv[2:]:
        write_folder(store, Path(folder))
    store.close()
    """
)


def _two_writers(store: str, first: list[Path], second: list[Path]) -> None:
    """Two processes writing at once, each opening the (perhaps new) store itself."""
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", TWO_WRITERS, store, *map(str, folders)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for folders in (first, second)
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err


def test_two_processes_on_one_sqlite_file_lose_no_record(
    nights: list[Path], tmp_path: Path
) -> None:
    store = str(tmp_path / "new" / "history.sqlite")  # both create it
    _two_writers(store, nights[0::2], nights[1::2])
    with Store.open(store) as opened:
        assert count_rows(opened) == (30, 117)
    _two_writers(store, nights, list(reversed(nights)))  # the same folders at once
    with Store.open(store) as opened:
        assert count_rows(opened) == (30, 117)


def test_two_processes_on_one_postgresql_lose_no_record(
    nights: list[Path], postgres_url: str
) -> None:
    _two_writers(postgres_url, nights[0::2], nights[1::2])
    _two_writers(postgres_url, nights, list(reversed(nights)))
    with Store.open(postgres_url) as opened:
        assert count_rows(opened) == (30, 117)


def test_the_migrations_shipped_are_the_revisions_the_code_knows() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    chain = [script.revision for script in ScriptDirectory.from_config(config).walk_revisions()]
    assert list(reversed(chain)) == list(REVISIONS)


def test_a_store_of_a_newer_harness_is_refused(tmp_path: Path) -> None:
    store = str(tmp_path / "history.sqlite")
    with Store.open(store) as opened, opened.writing() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(StoreError, match=f"schema revision 9999, this one knows up to {HEAD}"):
        Store.open(store)


def test_bad_input_is_named_and_the_good_folders_still_import(
    nights: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "history.sqlite")
    empty = tmp_path / "not-results"
    empty.mkdir()
    code, out, err = hil(capsys, "import", str(empty), str(nights[0]), "--hil-db", store)
    assert code == 2
    assert f"{empty}/journal.jsonl: no journal (not a results directory?)" in err
    assert out.splitlines()[-1].endswith(": 1 runs, 4 records")
    missing = tmp_path / "missing.sqlite"
    code, _, err = hil(capsys, STABLE, "--hil-db", str(missing))
    assert code == 2
    assert err.startswith(f"hil: error: {missing}: no history store there (a run writes it")
    assert not (tmp_path / "missing.sqlite").exists()  # a query creates nothing
    code, _, err = hil(capsys, STABLE, "--hil-db", "mysql://u:secret@127.0.0.1/x")
    assert code == 2 and "the store is SQLite or PostgreSQL, not mysql" in err
    assert "secret" not in err
    with pytest.raises(SystemExit) as stopped:
        hil(capsys, STABLE, "--since", "yesterday", "--hil-db", store)
    assert stopped.value.code == 2
    assert "--since 'yesterday': not a date (YYYY-MM-DD)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        hil(capsys, STABLE, "--flaky", "--hil-db", store)
    assert "give one PATTERN, or --flaky, or --html DIR" in capsys.readouterr().err


def test_a_resumed_run_continues_its_run_and_its_reruns_replace_their_records(
    tmp_path: Path,
) -> None:
    night = plan()[0]
    folder = write(night, tmp_path)
    meta = read_run_metadata(folder)
    entry = history_entry(folder, True, "job")
    assert entry["run"] == meta[HISTORY_KEY]["run"]  # --resume: the same run
    assert history_entry(folder, False, "job")["run"] != entry["run"]  # a new run
    with Store.open(str(tmp_path / "history.sqlite")) as store:
        assert write_folder(store, folder).added == 4
        rerun = dataclasses.replace(
            record(STABLE, "infra-error", night), started=f"{night.date}T03:00:00+00:00"
        )
        Journal(folder).append(rerun)  # the resumed session ran it again
        written = write_folder(store, folder)
        assert (written.new_run, written.added, written.updated) == (False, 0, 1)
        [history] = case_history(store, STABLE, Filters())
    assert [n.verdict for n in history.nights] == ["infra-error"]  # the last record wins


def test_the_shards_of_one_nights_job_are_one_bar_of_the_page(tmp_path: Path) -> None:
    night = plan()[0]
    job = "platform=rk3562 sdk=environment backend=sim tier=default"
    with Store.open(str(tmp_path / "history.sqlite")) as store:
        for index, cases in ((1, [STABLE, FLAPPING]), (2, [BREAKS])):
            folder = tmp_path / f"shard-{index}"
            shard = {"index": index, "count": 2, "selection": "abc", "cases": len(cases)}
            history = {"run": f"shard-{index}", "configuration": f"{job} shard={index}/2"}
            started = f"{night.date}T02:0{index}:00+00:00"
            meta = {"started": started, "platform": "rk3562", "sdks": [night.sdk]}
            write_run_metadata(folder, {**meta, "shard": shard, HISTORY_KEY: history})
            for case_id in cases:
                Journal(folder).append(record(case_id, night.verdicts[case_id], night))
            write_folder(store, folder)
        [bar] = night_counts(store, Filters())
    assert (bar.night, bar.run, bar.results) == (night.date, "shard-1", str(tmp_path / "shard-1"))
    assert bar.counts == dict(Counter(night.verdicts[c] for c in (STABLE, FLAPPING, BREAKS)))
