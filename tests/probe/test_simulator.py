"""Real ``hil probe`` runs: on the simulator and on a loopback board, a small bound, a few
steps, every step a case."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.fakes.sshd import SshServer, write_sysroot

from harness.cli import main
from harness.results.journal import read_records, read_run_metadata
from harness.results.probes import read_probes

pytest.importorskip("rknn.api", reason="rknn-toolkit2 (the simulator) is not installed")

BOUND = "rk3562/MaxPool/attr/strides/strides_h/int8/upper"


def test_probe_of_maxpool_stride_on_the_simulator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "probe"
    argv = ["probe", "-k", "MaxPool and strides_h and int8", "--steps", "4"]
    assert main([*argv, "--results", str(results), "--hil-cache", str(tmp_path / "cache")]) == 0
    (probe,) = read_probes(results)
    assert probe.id == BOUND and (probe.edge, probe.budget) == (8, 4)
    assert 1 <= len(probe.steps) <= 4 and probe.steps[0].value == 8
    assert probe.backend == "simulator" and "rknn_toolkit2" in probe.versions
    records = {record.id: record for record in read_records(results)}
    for step in probe.steps:  # each step is an ordinary journaled case with its artifacts
        record = records[step.case]
        assert record.params["strides"][0] == step.value
        assert (results / record.artifacts / "model.onnx").is_file()
        assert step.verdict == record.verdict
    assert read_run_metadata(results)["vendor"] == "rknn"  # the run's vendor, and its records'
    assert {record.vendor for record in records.values()} == {"rknn"}
    if probe.first_bad is not None:
        assert probe.first_bad_case is not None
        assert list((results / "bundles").glob("*.tar.gz"))
    assert probe.last_good is not None and probe.last_good >= 8
    out = capsys.readouterr().out
    assert BOUND in out and "step cases" in out
    assert main(["report", str(results)]) == 0
    report = (results / "report.md").read_text()
    assert "## Real limits" in report and r"strides\_h in (0,8\] (edge 8)" in report
    assert main(["diff", str(results), str(results)]) == 0


def test_probe_runs_on_a_board(
    sshd: SshServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With ``--boards``, the steps run on the platform's board (a loopback board here)."""
    boards = tmp_path / "boards"
    sshd.board_file(boards, sysroot=str(write_sysroot(tmp_path / "sysroot")))
    results = tmp_path / "probe"
    argv = ["probe", "-k", "MaxPool and strides_h and int8", "--steps", "2"]
    assert main([*argv, "--results", str(results), "--boards", str(boards)]) == 0
    (probe,) = read_probes(results)
    assert probe.backend == "loopback" and len(probe.steps) == 2
    assert {record.backend for record in read_records(results)} == {"loopback"}
    assert read_run_metadata(results)["backend"] == "board"


def test_probe_without_a_board_file_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    boards = tmp_path / "boards"
    boards.mkdir()
    with pytest.raises(SystemExit) as stopped:
        main(["probe", "-k", "MaxPool", "--results", str(tmp_path / "r"), "--boards", str(boards)])
    assert stopped.value.code == 2
    assert f"--boards {boards}: no board file for platform rk3562" in capsys.readouterr().err


def test_a_product_of_three_factors_is_searched_along_each_where_the_npu_really_stops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # RV1106 documents Hardmax's channel*height*width <= 8192; held at 20 x 20, the third
    # factor is searched from 20 (8000, documented inside) down to where the NPU takes it
    results = tmp_path / "probe"
    argv = ["probe", "--platform", "rv1106", "-k", "Hardmax and int8 and width"]
    assert main([*argv, "--results", str(results), "--hil-cache", str(tmp_path / "cache")]) == 0
    (probe,) = read_probes(results)
    assert probe.id == "rv1106/Hardmax/input/channel*height*width<=8192/int8/upper/width"
    assert probe.edge == 20 and probe.steps[0].value == 20
    records = {record.id: record for record in read_records(results)}
    for step in probe.steps:
        shape = records[step.case].params["shape"]
        assert shape[1:] == [20, 20, step.value]  # channel and height held, width searched
    # the documented edge (8000 elements) is not where the NPU stops: a bound far inside
    assert probe.last_good is not None and probe.first_bad is not None
    assert probe.first_bad == probe.last_good + 1 and probe.first_bad <= 20
    assert "channel*height*width<=8192" in capsys.readouterr().out
