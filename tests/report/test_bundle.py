"""Repro bundles: contents, scrubbing, tarball, and the standalone reproduce.py for real."""

from __future__ import annotations

import json
import os
import py_compile
import re
import socket
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from tests.fakes.sshd import SshServer, write_sysroot
from tests.helpers import paths
from tests.helpers.bundles import SECRET, _failing, write_case
from tests.helpers.cli import hil
from tests.helpers.marks import needs_toolkit

from harness.report.bundle import BundleError, make_bundle, make_bundles_for_failures
from harness.results.journal import Journal
from harness.results.records import case_slug
from harness.vendors.rknn.vendor import VENDOR as RKNN

RKNN_FILES = RKNN.bundle_files  # what the RKNN recipe writes into a case folder

INT8_TOLERANCE = {"atol": 0.0, "rtol": 0.0, "atol_steps": 4.0, "min_cosine": 0.98}


def _leaks(text: str, results: Path) -> list[str]:
    """Host facts found in ``text``: absolute paths of this machine, the host name, the secret."""
    host = socket.gethostname()
    leaks = [str(p) for p in {results.resolve(), results.absolute(), Path.home()} if str(p) in text]
    if re.search(r"(?<![\w-])" + re.escape(host) + r"(?![\w-])", text):
        leaks.append(host)
    return leaks + ([SECRET] if SECRET in text else [])


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIL_BOARD_PASSWORD", SECRET)


def test_bundle_contents_are_complete_and_scrubbed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], secret_env: None
) -> None:
    results = tmp_path / "results"
    record = write_case(results, _failing(), int8=True)
    assert hil(["repro", str(results), record.id]) == 0
    folder = results / "bundles" / case_slug(record.id)
    tarball = results / "bundles" / f"{case_slug(record.id)}.tar.gz"
    assert capsys.readouterr().out.split() == [str(folder), str(tarball)]
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        "build.log",
        "case.json",
        "dataset.txt",
        "dataset/0_a.npy",
        "dataset/0_b.npy",
        "inputs/0_a.npy",
        "inputs/1_b.npy",
        "model.onnx",
        "observed/0_y.npy",
        "reference/0_y.npy",
        "reproduce.py",
        "toolkit.json",
    ]
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix not in (".npy", ".onnx"):
            assert _leaks(path.read_text(encoding="utf-8"), results) == [], path.name
    log = (folder / "build.log").read_text()
    assert "I Loading ./model.onnx" in log  # case-folder paths made relative
    assert "<results>/cache/x.rknn" in log and "~/.cache/rknn" in log and "<host>" in log

    case = json.loads((folder / "case.json").read_text())
    assert case["versions"] == record.versions and case["verdict"] == "wrong-result"
    assert "api_token" not in case["source"] and case["source"]["text"] == record.source["text"]
    toolkit = json.loads((folder / "toolkit.json").read_text())
    assert "passphrase" not in toolkit["config"] and toolkit["dataset"] == "dataset.txt"

    readme = (folder / "README.md").read_text()
    for fact in ("add.width", "w=8193", "Add: width &lt;= 8192 supported", "wrong-result"):
        assert fact in readme
    assert "max abs error 1, cosine 0.9" in readme
    assert f"--target {record.platform} --device-id" in readme
    py_compile.compile(str(folder / "reproduce.py"), doraise=True, cfile=str(tmp_path / "r.pyc"))


def test_tarball_extracts_to_the_same_files_without_owner_names(tmp_path: Path) -> None:
    results = tmp_path / "results"
    record = write_case(results, _failing())
    folder = make_bundle(results, record.id, files=RKNN_FILES)
    with tarfile.open(folder.parent / f"{folder.name}.tar.gz") as tar:
        members = tar.getmembers()
        tar.extractall(tmp_path / "out", filter="data")
    assert {m.uname for m in members} == {""} and {m.gname for m in members} == {""}
    extracted = tmp_path / "out" / folder.name
    for path in folder.rglob("*"):
        if path.is_file():
            assert (extracted / path.relative_to(folder)).read_bytes() == path.read_bytes()
    assert len(members) == len(list(folder.rglob("*"))) + 1  # + the folder itself


def test_bundle_errors_name_the_case_and_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    write_case(results, _failing("known-case"))
    assert hil(["repro", str(results), "known-cas"]) == 2
    assert "no case with id 'known-cas'; did you mean 'known-case'?" in capsys.readouterr().err
    Journal(results).append(_failing("escapes", artifacts="../elsewhere"))
    with pytest.raises(BundleError, match=r"case 'escapes': field 'artifacts' is '\.\./elsewhere'"):
        make_bundle(results, "escapes", files=RKNN_FILES)
    record = write_case(results, _failing("no-model"))
    (results / record.artifacts / "model.onnx").unlink()
    with pytest.raises(BundleError, match=r"case 'no-model'.*lacks model\.onnx"):
        make_bundle(results, "no-model", files=RKNN_FILES)


def test_bundles_for_all_failures_and_only_those(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_case(results, _failing("wrong"))
    write_case(results, _failing("violated", verdict="violation"))
    write_case(results, _failing("fine", verdict="confirmed"))
    Journal(results).append(_failing("lost-artifacts", artifacts="cases/gone"))
    with pytest.warns(UserWarning, match="no repro bundle for 'lost-artifacts'"):
        made = make_bundles_for_failures(results, files=RKNN_FILES)
    assert sorted(path.name for path in made) == sorted(case_slug(i) for i in ("wrong", "violated"))
    assert sorted(p.name for p in (results / "bundles").iterdir()) == sorted(
        [p.name for p in made] + [f"{p.name}.tar.gz" for p in made]
    )
    # rebuilt in place, nothing left over; "wrong" is now its cause's example, so the case
    # without artifacts (the same cause) is not tried again
    assert make_bundles_for_failures(results, files=RKNN_FILES) == made
    assert len(list((results / "bundles").iterdir())) == 2 * len(made)
    assert make_bundles_for_failures(tmp_path / "nothing-ran", files=RKNN_FILES) == []


def test_a_run_bundles_one_case_per_cause(tmp_path: Path) -> None:
    """Three cases of one cause (another value, the same observation), one of another: two
    bundles; the other cases keep their folders and ``hil repro`` still bundles them."""
    results = tmp_path / "results"
    same = [write_case(results, _failing(f"add-w{w}", value=f"w={w}")) for w in (8194, 8193, 8195)]
    write_case(results, _failing("other", verdict="violation", detail="placement: CPU"))
    made = make_bundles_for_failures(results, files=RKNN_FILES)
    bundled = sorted(case_slug(case) for case in ("add-w8193", "other"))
    assert sorted(path.name for path in made) == bundled
    assert all((results / record.artifacts / "model.onnx").is_file() for record in same)
    # a later run keeps the cause's bundled case as its example: no second bundle
    assert make_bundles_for_failures(results, files=RKNN_FILES) == made
    assert make_bundle(results, "add-w8195", files=RKNN_FILES).name == case_slug("add-w8195")


def _run_reproduce(
    folder: Path, *args: str, npu_hil: bool = False
) -> subprocess.CompletedProcess[str]:
    """The bundle's script as a vendor runs it: without npu-hil on the path unless asked."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if npu_hil:
        env["PYTHONPATH"] = str(paths.ROOT)
    return subprocess.run(
        [sys.executable, str(folder / "reproduce.py"), *args],
        cwd=folder.parent,  # it must find its files from its own location
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _unpacked_bundle(
    tmp_path: Path, int8: bool = False, as_seen: bool = True, backend: str = "simulator"
) -> Path:
    """A bundle as the vendor gets it: the tarball unpacked away from the harness. With
    ``as_seen`` the record holds what the simulator really shows (Add on the NPU in the asked
    precision, outputs matching: confirmed); otherwise a wrong result that is not there."""
    results = tmp_path / "results"
    dtype = "INT8" if int8 else "FLOAT16"
    fields: dict[str, object] = {
        "backend": backend,
        "placement": [  # the toolkit 2.5.0 simulator's layer table for this model
            {"op": op, "target": "NPU", "dtype": dtype, "name": f"{op}:y"} for op in ("Conv", "Add")
        ],
    }
    if int8:
        fields |= {"dtype": "int8", "tolerance": INT8_TOLERANCE}
    record = _failing(verdict="confirmed" if as_seen else "wrong-result", **fields)
    record = write_case(results, record, int8=int8, observed_error=0.0 if as_seen else 1.0)
    folder = make_bundle(results, record.id, files=RKNN_FILES)
    with tarfile.open(folder.parent / f"{folder.name}.tar.gz") as tar:
        tar.extractall(tmp_path / "vendor", filter="data")
    return tmp_path / "vendor" / folder.name


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@needs_toolkit
@pytest.mark.parametrize("int8", [False, True], ids=["float16", "int8"])
def test_reproduce_script_reproduces_the_recorded_observation(tmp_path: Path, int8: bool) -> None:
    copy = _unpacked_bundle(tmp_path, int8)
    before = _files(copy)
    run = _run_reproduce(copy, "--log", str(tmp_path / "toolkit.log"))
    assert run.returncode == 0, run.stdout + run.stderr
    dtype = "INT8" if int8 else "FLOAT16"
    assert re.search(
        r"placement recorded: Conv: NPU; Add: NPU +now: Conv: NPU; Add: NPU +same", run.stdout
    )
    assert re.search(
        rf"precision recorded: Conv: {dtype}; Add: {dtype} +now: Conv: {dtype}; Add: {dtype} +same",
        run.stdout,
    )
    assert re.search(r"result +recorded: match +now: match +same", run.stdout)
    assert "REPRODUCED: confirmed" in run.stdout and "NOT REPRODUCED" not in run.stdout
    matched = (
        r"output 0 \(\S+\): max abs error \S+, cosine (0\.99\d+|1\.0+), 0 of 48 elements outside"
    )
    assert re.search(matched, run.stdout)
    used = INT8_TOLERANCE if int8 else json.loads((copy / "case.json").read_text())["tolerance"]
    assert f"RESULT: MATCH (tolerance {used})" in run.stdout  # the recorded tolerance
    assert "Network Layer Information Table" in (tmp_path / "toolkit.log").read_text()
    assert _files(copy) == before  # nothing written into the bundle


@needs_toolkit
def test_reproduce_script_says_what_did_not_reproduce(tmp_path: Path) -> None:
    copy = _unpacked_bundle(tmp_path, as_seen=False)  # recorded: a wrong result
    before = _files(copy)
    run = _run_reproduce(copy, "--log", str(tmp_path / "toolkit.log"))
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(r"result +recorded: mismatch +now: match +DIFFERS", run.stdout)
    assert "NOT REPRODUCED: result differ from the record (wrong-result)" in run.stdout
    assert _files(copy) == before


def test_reproduce_script_that_cannot_run_exits_2(tmp_path: Path) -> None:
    copy = _unpacked_bundle(tmp_path)
    (copy / "case.json").write_text("{not json")
    run = _run_reproduce(copy)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "CANNOT RUN: the bundle is incomplete or damaged" in run.stdout


@needs_toolkit
def test_reproduce_script_reruns_a_board_case_on_its_board(sshd: SshServer, tmp_path: Path) -> None:
    """The loopback board (real sshd, the simulator stand-in runtime) named by its board file."""
    copy = _unpacked_bundle(tmp_path, backend="loopback")
    board_file = sshd.board_file(tmp_path / "boards", sysroot=str(write_sysroot(tmp_path / "sys")))
    before = _files(copy)
    log = tmp_path / "board.log"
    run = _run_reproduce(copy, "--board", str(board_file), "--log", str(log), npu_hil=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"running on board loopback ({sshd.user}@127.0.0.1:{sshd.port})" in run.stdout
    assert re.search(
        r"placement recorded: Conv: NPU; Add: NPU +now: Conv: NPU; Add: NPU +same", run.stdout
    )
    assert "REPRODUCED: confirmed" in run.stdout
    assert "Network Layer Information Table" in log.read_text()  # the host build's log
    assert _files(copy) == before

    sshd.stop()  # a board that does not answer: the rerun could not happen
    run = _run_reproduce(copy, "--board", str(board_file), "--log", str(log), npu_hil=True)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "CANNOT RUN: board loopback" in run.stdout
    assert _files(copy) == before
