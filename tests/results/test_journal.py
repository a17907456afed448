"""The results journal: concurrent appends, damaged files, resume."""

from __future__ import annotations

import json
import multiprocessing
import warnings
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.records import make_record

from harness.results.journal import (
    JOURNAL_NAME,
    Journal,
    JournalError,
    finished_ids,
    read_records,
    read_run_metadata,
    write_run_metadata,
)
from harness.results.records import CaseRecord


def _append_many(results: str, worker: int, count: int, start: Any) -> None:
    journal = Journal(results)
    start.wait()
    for index in range(count):
        # Large lines make an interleaving visible if appends were not atomic.
        journal.append(make_record(f"w{worker}-{index}", detail="x" * 20000))


def test_concurrent_appends_from_processes_never_interleave(tmp_path: Path) -> None:
    workers, count = 4, 25
    context = multiprocessing.get_context("fork")
    start = context.Barrier(workers)
    processes = [
        context.Process(target=_append_many, args=(str(tmp_path), worker, count, start))
        for worker in range(workers)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    lines = (tmp_path / JOURNAL_NAME).read_text().splitlines()
    assert len(lines) == workers * count
    ids = [json.loads(line)["id"] for line in lines]  # every line is one whole object
    expected = {f"w{worker}-{index}" for worker in range(workers) for index in range(count)}
    assert sorted(ids) == sorted(expected)
    assert {record.id for record in read_records(tmp_path)} == expected


def _write_lines(results: Path, lines: list[str], final_newline: bool = True) -> Path:
    path = results / JOURNAL_NAME
    path.write_text("\n".join(lines) + ("\n" if final_newline else ""))
    return path


def _line(record: CaseRecord) -> str:
    return json.dumps(record.to_json())


def test_truncated_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    whole = [_line(make_record(f"case-{i}")) for i in range(3)]
    fragment = _line(make_record("case-3"))[:57]
    _write_lines(tmp_path, [*whole, fragment], final_newline=False)
    with pytest.warns(UserWarning, match=rf"{JOURNAL_NAME}:4: skipping truncated last line"):
        records = read_records(tmp_path)
    assert [record.id for record in records] == ["case-0", "case-1", "case-2"]


def test_appending_after_a_killed_run_drops_the_fragment(tmp_path: Path) -> None:
    fragment = _line(make_record("half-written"))[:40]
    _write_lines(tmp_path, [_line(make_record("a")), fragment], final_newline=False)
    with pytest.warns(UserWarning, match="dropping a truncated last line"):
        Journal(tmp_path).append(make_record("b"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [record.id for record in read_records(tmp_path)] == ["a", "b"]


def test_appending_after_a_whole_line_without_newline_keeps_it(tmp_path: Path) -> None:
    _write_lines(tmp_path, [_line(make_record("a"))], final_newline=False)
    Journal(tmp_path).append(make_record("b"))
    assert [record.id for record in read_records(tmp_path)] == ["a", "b"]


@pytest.mark.parametrize(
    ("bad_line", "problem"),
    [
        ('{"id": "x", "platform": ', "not valid JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        (json.dumps({"id": "x"}), "missing field"),
        (_line(make_record("x", verdict="passed")), "field 'verdict' has unknown value 'passed'"),
        (_line(make_record("x", op=7)), "field 'op' must be a string, got 7"),
    ],
)
def test_malformed_middle_line_names_file_and_line(
    tmp_path: Path, bad_line: str, problem: str
) -> None:
    path = _write_lines(tmp_path, [_line(make_record("a")), bad_line, _line(make_record("b"))])
    with pytest.raises(JournalError) as caught:
        read_records(tmp_path)
    assert str(caught.value).startswith(f"{path}:2: ")
    assert problem in str(caught.value)


def test_missing_or_empty_journal_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="no journal"):
        read_records(tmp_path)
    assert read_records(tmp_path, allow_empty=True) == []
    _write_lines(tmp_path, [""])
    with pytest.raises(JournalError, match="holds no records"):
        read_records(tmp_path)
    assert read_records(tmp_path, allow_empty=True) == []


def test_last_record_of_an_id_wins(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    journal.append(make_record("a", verdict="infra-error"))
    journal.append(make_record("b"))
    journal.append(make_record("a", verdict="violation"))
    records = read_records(tmp_path)
    assert [(record.id, record.verdict) for record in records] == [
        ("a", "violation"),
        ("b", "confirmed"),
    ]


def test_finished_ids_retry_only_infrastructure_errors(tmp_path: Path) -> None:
    assert finished_ids(tmp_path) == set()  # a fresh results directory
    history = [
        ("a", "confirmed"),
        ("b", "infra-error"),
        ("c", "wrong-result"),
        ("d", "infra-error"),
        ("d", "limit-confirmed"),  # retried by a resumed run, now finished
        ("e", "doc-drift"),
        ("e", "infra-error"),  # re-run and lost the board: retry again
        ("f", "violation"),
    ]
    journal = Journal(tmp_path)
    for case_id, verdict in history:
        journal.append(make_record(case_id, verdict=verdict))
    last = dict(history)
    assert finished_ids(tmp_path) == {i for i, verdict in last.items() if verdict != "infra-error"}


def test_run_metadata_round_trip_and_errors(tmp_path: Path) -> None:
    assert read_run_metadata(tmp_path) == {}
    meta = {"started": "2025-01-01T00:00:00Z", "platforms": ["rk3562"], "backend": "simulator"}
    path = write_run_metadata(tmp_path / "new", meta)
    assert path == tmp_path / "new" / "run.json"
    assert read_run_metadata(tmp_path / "new") == meta
    assert [p.name for p in path.parent.iterdir()] == ["run.json"]  # no temporary left over
    (tmp_path / "run.json").write_text("{broken")
    with pytest.raises(JournalError, match=r"run\.json: not valid JSON"):
        read_run_metadata(tmp_path)
