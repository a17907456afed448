"""Damaged results directories: wrong-typed journal fields and run.json entries, fuzzed journal
lines, and case ids or artifact paths that try to leave the bundle folder."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.helpers.bundles import _failing, write_case
from tests.helpers.cli import hil
from tests.helpers.declared import MODELS
from tests.helpers.records import make_record

from harness.cases.operators import operator_cases
from harness.documented.properties import RESULT
from harness.models.reference import host_references
from harness.pipeline import CaseExecutor, Stages
from harness.report.bundle import BundleError, bundle_dir, make_bundle, tarball_path
from harness.results.journal import (
    JOURNAL_NAME,
    RUN_META_NAME,
    Journal,
    JournalError,
    read_records,
    read_run_metadata,
)
from harness.results.records import CaseRecord
from harness.targets.job import Job
from harness.targets.observation import Observation
from harness.vendors.rknn.documents.operators import seed_catalogue
from harness.vendors.rknn.vendor import VENDOR as RKNN

RKNN_FILES = RKNN.bundle_files  # what the RKNN recipe writes into a case folder

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


@settings(max_examples=200, deadline=None)
@given(
    content=st.one_of(
        st.binary(max_size=40),
        _JSON.map(json.dumps).map(str.encode),
        st.dictionaries(st.sampled_from(["unprobed", "model_io", "started"]), _JSON)
        .map(json.dumps)
        .map(str.encode),
    )
)
def test_fuzzed_run_metadata_raises_only_journal_errors(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / RUN_META_NAME).write_bytes(content)
        try:
            meta = read_run_metadata(scratch)
        except JournalError:
            return
        Journal(scratch).append(make_record("x"))
        assert isinstance(meta, dict) and hil(["report", scratch]) == 0


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


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_bundles_leave_out_symbolic_links_and_say_so(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "private.txt").write_text("not for the vendor")
    (outside / "dir" / "0_a.npy").write_text("not for the vendor either")
    results = tmp_path / "results"
    record = write_case(results, _failing(), int8=True)
    case_dir = results / record.artifacts
    (case_dir / "build.log").unlink()
    (case_dir / "build.log").symlink_to(outside / "private.txt")
    shutil.rmtree(case_dir / "dataset")
    (case_dir / "dataset").symlink_to(outside / "dir", target_is_directory=True)
    (case_dir / "inputs" / "2_c.npy").symlink_to(outside / "private.txt")

    folder = make_bundle(results, record.id, files=RKNN_FILES)
    assert "build.log" not in _tree(folder) and "inputs/2_c.npy" not in _tree(folder)
    assert not any(name.startswith("dataset/") for name in _tree(folder))
    assert not any(p.is_symlink() for p in folder.rglob("*"))
    with tarfile.open(tarball_path(folder)) as tar:
        assert not any(
            "not for the vendor"
            in (tar.extractfile(m) or io.BytesIO()).read().decode(errors="replace")
            for m in tar.getmembers()
            if m.isfile()
        )
    readme = (folder / "README.md").read_text()
    assert "Left out" in readme
    for name in ("build.log", "dataset", "inputs/2_c.npy"):
        assert name.replace("_", "\\_") in readme or name in readme


def test_a_required_file_or_case_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    results = tmp_path / "results"
    record = write_case(results, _failing("linked-model"))
    case_dir = results / record.artifacts
    (case_dir / "model.onnx").rename(tmp_path / "model.onnx")
    (case_dir / "model.onnx").symlink_to(tmp_path / "model.onnx")
    with pytest.raises(BundleError, match=r"model\.onnx"):
        make_bundle(results, record.id, files=RKNN_FILES)

    record = write_case(results, _failing("linked-folder"))
    moved = tmp_path / "elsewhere"
    (results / record.artifacts).rename(moved)
    (results / record.artifacts).symlink_to(moved, target_is_directory=True)
    with pytest.raises(BundleError, match="outside the results directory"):
        make_bundle(results, record.id, files=RKNN_FILES)


ROUNDS = 8


def test_concurrent_repro_of_one_case_publishes_one_whole_bundle(tmp_path: Path) -> None:
    results = tmp_path / "results"
    record = write_case(results, _failing(), int8=True)
    for index in range(400):  # a longer copy widens the window in which the two overlap
        (results / record.artifacts / "dataset" / f"{index}_x.npy").write_bytes(b"x" * 4096)
    whole = _tree(make_bundle(results, record.id, files=RKNN_FILES))
    code = "import sys; from harness.cli import main; sys.exit(main())"
    for _ in range(ROUNDS):
        runs = [
            subprocess.Popen(
                [sys.executable, "-c", code, "repro", str(results), record.id],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        for run in runs:
            err = run.communicate(timeout=120)[1]
            assert run.returncode == 0, err
        folder = bundle_dir(results, record.id)
        assert _tree(folder) == whole
        with tarfile.open(tarball_path(folder)) as tar:
            members = sorted(m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile())
        assert members == whole
        assert sorted(p.name for p in (results / "bundles").iterdir()) == [
            folder.name,
            tarball_path(folder).name,
        ]


_PARTS = st.sampled_from(["cases", "..", ".", "", "/", "x", "cases/..", "~", "\x00", "bundles"])
_ARTIFACTS = st.one_of(
    st.lists(_PARTS, max_size=4).map("/".join),
    st.text(max_size=20),
    st.just("cases/{slug}"),
    st.just("cases/./{slug}/"),
)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(root.rglob("*"))
    }


@settings(max_examples=60, deadline=None)
@given(case_id=st.text(min_size=1, max_size=30), artifacts=_ARTIFACTS)
def test_bundles_write_nothing_outside_their_folder_and_publish_whole(
    case_id: str, artifacts: str
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        results = Path(scratch) / "results"
        real = write_case(results, _failing("real"))
        whole = _tree(make_bundle(results, real.id, files=RKNN_FILES))
        Journal(results).append(
            _failing(case_id, artifacts=artifacts.replace("{slug}", Path(real.artifacts).name))
        )
        before = _snapshot(Path(scratch))
        try:
            folder: Path | None = make_bundle(results, case_id, files=RKNN_FILES)
        except BundleError:
            folder = None
        after = _snapshot(Path(scratch))
        target = bundle_dir(results, case_id)
        allowed = {target, tarball_path(target)}
        changed = {
            Path(scratch) / name
            for name in before.keys() | after.keys()
            if before.get(name) != after.get(name)
        }
        assert {path for path in changed if path not in allowed and target not in path.parents} == (
            set()
        )
        if folder is not None:
            assert folder == target and _tree(folder) == whole
            with tarfile.open(tarball_path(folder)) as tar:
                packed = sorted(m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile())
            assert packed == whole


class _Replay:
    """A target that answers with prepared observations, one per run: the first run's
    outputs, then a build failure that produces none."""

    observes = frozenset({RESULT})

    def __init__(self, observations: list[Observation]) -> None:
        self.observations = observations

    def run(self, job: Job) -> Observation:
        return self.observations.pop(0)


def test_a_rerun_that_fails_early_leaves_nothing_of_the_previous_run(tmp_path: Path) -> None:
    case = next(c for c in operator_cases(seed_catalogue(), MODELS).cases if c.dtype == "float16")
    built = MODELS.build(case.op, case.params, case.seed)
    outputs = host_references(built).outputs
    target = _Replay(
        [
            Observation(
                "simulator",
                outputs=next(iter(outputs.values())),
                log="built",
                observes=_Replay.observes,
            ),
            Observation(
                "simulator",
                failed_stage="build",
                error="E unsupported",
                log="failed",
                observes=_Replay.observes,
            ),
        ]
    )
    executor = CaseExecutor(tmp_path, target, Stages(recipe=lambda job: {"dataset.txt": b"old\n"}))
    first = executor.execute(case)
    folder = tmp_path / first.artifacts
    assert (folder / "observed").is_dir() and (folder / "dataset.txt").is_file()
    (folder / "left-by-hand.txt").write_text("stale")

    executor.stages = Stages()
    second = executor.execute(case)
    assert second.artifacts == first.artifacts and second.verdict != first.verdict
    assert not (folder / "observed").exists()
    assert not (folder / "dataset.txt").exists() and not (folder / "left-by-hand.txt").exists()
    assert (folder / "build.log").read_text() == "failed"
