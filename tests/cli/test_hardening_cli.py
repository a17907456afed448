"""The ``hil`` command under odd conditions: a reader that went away, a probes file that is not
UTF-8, a ``-k`` expression nested thousands deep. Bad input is exit 2 with the file or option
named; a closed pipe ends the output quietly while the work (journal, report) still finishes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.sshd import onnx_model
from tests.helpers import paths
from tests.helpers.declared import MODELS
from tests.helpers.records import make_record

from harness.cli import main
from harness.probe.runner import SelectionError, select
from harness.probe.steps import numeric_bounds
from harness.results.journal import Journal, read_records, write_run_metadata
from harness.results.probes import PROBES_NAME
from harness.vendors.rknn.documents.operators import seed_catalogue

ROOT = paths.ROOT
HIL = Path(sys.executable).with_name("hil")


def hil_into_closed_pipe(cwd: Path, *args: str) -> tuple[int, str]:
    """Run ``hil`` with its stdout a pipe whose reader closed before it wrote (``| head`` that
    has had its line); its exit status and stderr."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as a shell
    env["PYTHONPATH"] = str(ROOT)
    child = subprocess.Popen(
        [str(HIL), *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    err = child.stderr.read().decode()
    return child.wait(timeout=600), err


def test_probe_list_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    code, err = hil_into_closed_pipe(tmp_path, "probe", "--list")
    assert (code, err) == (0, "")


def test_hil_run_into_a_closed_pipe_still_journals_and_reports(tmp_path: Path) -> None:
    (tmp_path / "relu.onnx").write_bytes(onnx_model("Relu"))
    results = tmp_path / "results"
    code, err = hil_into_closed_pipe(
        tmp_path, "run", "relu.onnx", "--results", str(results), "--hil-cache", "off"
    )
    assert "Traceback" not in err and "Broken pipe" not in err, err
    (record,) = read_records(results)
    assert code == 0 and record.verdict == "confirmed", (record.detail, err)
    assert (results / "report.md").is_file() and (results / "report.html").is_file()


def results_with_probes(folder: Path, probes: bytes) -> Path:
    Journal(folder).append(make_record("rk3562/Pow/float16/values=2"))
    write_run_metadata(folder, {"started": "2026-01-01T00:00:00+00:00", "platform": "rk3562"})
    (folder / PROBES_NAME).write_bytes(probes)
    return folder


def test_a_probes_file_that_is_not_utf8_is_bad_input_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = results_with_probes(tmp_path / "bad", b'\xff\xfe{"id": 1}\n')
    good = results_with_probes(tmp_path / "good", b"")
    where = f"{bad / PROBES_NAME}:1: not valid JSON ("
    for command in (["report", str(bad)], ["diff", str(good), str(bad)]):
        assert main(command) == 2
        assert where in capsys.readouterr().err


@pytest.mark.parametrize("expression", ["(" * 3000 + "Pow" + ")" * 3000, "not " * 3000 + "Pow"])
def test_a_k_expression_nested_thousands_deep_is_bad_input(
    expression: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bounds, _ = numeric_bounds(seed_catalogue(), MODELS)
    with pytest.raises(SelectionError, match="nested too deeply"):
        select(bounds, expression)
    with pytest.raises(SystemExit) as stopped:
        main(["probe", "-k", expression, "--list"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "nested too deeply" in err and len(err.splitlines()[-1]) < 200
