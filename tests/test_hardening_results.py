"""Damaged results directories: wrong-typed journal fields and run.json entries, fuzzed journal
lines, and case ids or artifact paths that try to leave the bundle folder."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_journal import make_record
from test_reporting import hil

from harness.results.journal import (
    JOURNAL_NAME,
    RUN_META_NAME,
    Journal,
    JournalError,
    read_records,
    read_run_metadata,
)
from harness.results.records import CaseRecord

# (field, wrong value, the field path the message must name)
BAD_FIELDS = [
    ("metrics", [0.1, 0.2], "metrics"),
    ("metrics", {"max_abs": "0.1"}, "metrics.max_abs"),
    ("placement", ["NPU", "CPU"], "placement[0]"),
    ("source", "rknn_ops.md", "source"),
    ("detail", 5, "detail"),
    (
        "checks",
        [{"prop": "placement", "documented": "NPU", "observed": "NPU", "status": "ok"}],
        "checks[0]",
    ),
    ("artifacts", 5, "artifacts"),
    ("seed", "7", "seed"),
    ("reference", {"agreement": {"ort": {"agrees": "no"}}}, "reference.agreement.ort.agrees"),
]


def _journal_with(results: Path, name: str, value: Any) -> None:
    """Two good records around one whose ``name`` holds ``value``: the bad one is line 2."""
    lines = [make_record("good-1").to_json(), make_record("bad").to_json(), make_record("good-2")]
    lines[1][name] = value
    lines[2] = lines[2].to_json()
    results.mkdir(exist_ok=True)
    (results / JOURNAL_NAME).write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.mark.parametrize(("name", "value", "where"), BAD_FIELDS)
@pytest.mark.parametrize("command", ["report", "diff", "repro"])
def test_wrong_typed_record_fields_are_refused_naming_file_line_and_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    name: str,
    value: Any,
    where: str,
) -> None:
    results = tmp_path / "run"
    _journal_with(results, name, value)
    argv = {
        "report": ["report", str(results)],
        "diff": ["diff", str(results), str(results)],
        "repro": ["repro", str(results), "bad"],
    }[command]
    assert hil(argv) == 2
    err = capsys.readouterr().err
    assert f"{results / JOURNAL_NAME}:2: " in err
    assert repr(where) in err or f" in {where!r}" in err
    assert not (results / "report.md").exists()


@pytest.mark.parametrize(
    ("meta", "where"),
    [
        ({"unprobed": ["conv.kernel", "pool.size"]}, "unprobed[0]"),
        ({"unprobed": [{"limit": "conv.kernel"}]}, "unprobed[0]"),
        ({"model_io": [{"group": "a", "targets": "rk3562", "rows": []}]}, "model_io[0].targets"),
        ({"model_io": {"group": "a"}}, "model_io"),
    ],
)
def test_wrong_typed_run_metadata_is_refused_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], meta: dict[str, Any], where: str
) -> None:
    Journal(tmp_path).append(make_record("good"))
    (tmp_path / RUN_META_NAME).write_text(json.dumps(meta))
    assert hil(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / RUN_META_NAME}: " in err and where in err


# Lines that are JSON objects close to a record more often than chance would make them.
_JSON = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)
_FIELD_NAMES = st.sampled_from(list(make_record("x").to_json()))
_NEAR_RECORDS = st.builds(
    lambda base, changes: json.dumps({**base, **changes}),
    st.just(make_record("x").to_json()),
    st.dictionaries(_FIELD_NAMES, _JSON, max_size=3),
)
_LINES = st.one_of(
    st.binary(max_size=60).filter(lambda b: b"\n" not in b),
    _JSON.map(json.dumps).map(str.encode),
    _NEAR_RECORDS.map(str.encode),
    st.just(b"[" * 100_000),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_LINES, min_size=1, max_size=4), newline=st.booleans())
def test_fuzzed_journal_lines_raise_only_journal_errors(
    tmp_path: Path, lines: list[bytes], newline: bool
) -> None:
    (tmp_path / JOURNAL_NAME).write_bytes(b"\n".join(lines) + (b"\n" if newline else b""))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            records = read_records(tmp_path)
        except JournalError:
            return
    # whatever is read, reports can use
    assert all(isinstance(record, CaseRecord) for record in records)
    assert hil(["report", str(tmp_path)]) == 0


_TEXT = st.text(max_size=12)
_RECORDS = st.builds(
    CaseRecord,
    id=st.text(min_size=1, max_size=20),
    platform=_TEXT,
    op=_TEXT,
    dtype=_TEXT,
    limit=_TEXT,
    value=_TEXT,
    documented=_TEXT,
    backend=_TEXT,
    verdict=st.sampled_from(["confirmed", "wrong-result", "infra-error", "doc-drift"]),
    detail=_TEXT,
    metrics=st.dictionaries(_TEXT, st.floats(allow_nan=False), max_size=3),
    versions=st.dictionaries(_TEXT, _TEXT, max_size=2),
    checks=st.lists(
        st.fixed_dictionaries(
            {
                "prop": _TEXT,
                "limits": st.lists(_TEXT, max_size=2),
                "documented": _TEXT,
                "observed": _TEXT,
                "status": _TEXT,
            }
        ),
        max_size=2,
    ),
    duration_s=st.floats(allow_nan=False),
    seed=st.integers(),
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(record=_RECORDS)
def test_valid_records_round_trip(tmp_path: Path, record: CaseRecord) -> None:
    (tmp_path / JOURNAL_NAME).unlink(missing_ok=True)
    Journal(tmp_path).append(record)
    assert read_records(tmp_path) == [record]


def test_run_metadata_that_fits_is_read_back(tmp_path: Path) -> None:
    meta = {"unprobed": [{"limit": "a", "reason": "b"}], "boards": [{"name": "x"}], "n": 1}
    (tmp_path / RUN_META_NAME).write_text(json.dumps(meta))
    assert read_run_metadata(tmp_path) == meta
