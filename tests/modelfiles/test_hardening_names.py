"""Model file names that are not valid UTF-8 (hardening, round 3): ``hil run`` and ``pytest
--models`` run such a model under its name with the undecodable bytes written ``\\xNN``, and
the other models of its folder run too; never a traceback or an INTERNALERROR."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fakes.sshd import onnx_model
from tests.helpers.models import run_models
from tests.helpers.records import make_record

from harness.cli import main
from harness.modelfiles.nodetests import list_models
from harness.results.journal import Journal, read_records
from harness.results.records import case_folder
from harness.text import shown_name

BAD = os.fsdecode(b"relu-\xff\xfe-latin1-\xe9")  # not UTF-8: held as lone surrogates
SHOWN = "relu-\\xff\\xfe-latin1-\\xe9"


def test_shown_names_escape_only_the_bytes_that_are_not_utf8() -> None:
    assert shown_name(BAD) == SHOWN
    assert shown_name("modèle-ünïcode.onnx") == "modèle-ünïcode.onnx"


def test_hil_run_runs_a_model_whose_file_name_is_not_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / f"{BAD}.onnx"
    model.write_bytes(onnx_model("Relu"))
    assert main(["run", str(model), "--results", str(tmp_path / "r"), "--hil-cache", "off"]) == 0
    [record] = read_records(tmp_path / "r")
    assert record.id == f"rk3562/model/{SHOWN}/float16"
    assert record.source["model"] == str(tmp_path / f"{SHOWN}.onnx")
    assert SHOWN in capsys.readouterr().out


def test_hil_run_refuses_a_broken_model_whose_name_is_not_utf8_with_its_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / f"{BAD}.onnx"
    model.write_bytes(b"not a model")
    assert main(["run", str(model), "--results", str(tmp_path / "r"), "--hil-cache", "off"]) == 2
    [record] = read_records(tmp_path / "r")
    assert record.verdict == "bad-input" and SHOWN in record.id
    assert SHOWN in capsys.readouterr().err


def test_a_models_folder_with_a_name_that_is_not_utf8_runs_every_model(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    for name in (BAD, "plain"):
        (folder / f"{name}.onnx").write_bytes(onnx_model("Relu"))
    run = run_models(tmp_path, folder)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "INTERNALERROR" not in output and "Traceback" not in output
    ids = sorted(record.id for record in read_records(tmp_path / "results"))
    assert ids == ["rk3562/models/plain/float16", f"rk3562/models/{SHOWN}/float16"]


NAMES = st.binary(min_size=1, max_size=40).filter(
    lambda name: b"/" not in name and b"\0" not in name and name not in (b".", b"..")
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=NAMES)
def test_a_file_name_in_any_encoding_gives_a_name_that_journals(
    tmp_path_factory: pytest.TempPathFactory, name: bytes
) -> None:
    folder = tmp_path_factory.mktemp("models")
    path = Path(os.fsdecode(os.fsencode(folder) + b"/" + name + b".onnx"))
    path.write_bytes(b"")
    [entry] = list_models(folder)
    assert entry.path == path  # the file is opened by its own name
    entry.name.encode("utf-8")  # ids, records and messages encode
    case_id = f"rk3562/models/{entry.name}/float16"
    assert "/" in case_folder(case_id, "") and ".." not in case_folder(case_id, "")
    Journal(folder).append(make_record(case_id, detail=f"{path}: not a model"))
    [record] = read_records(folder)
    assert record.id == case_id
    assert record.detail == f"{shown_name(str(path))}: not a model"
