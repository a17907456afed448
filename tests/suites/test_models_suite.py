"""``suites/test_models.py`` on the ONNX backend node tests, run as a user runs it (pytest in a
subprocess, the real rknn-toolkit2 simulator): compiler crashes, lowering, what did not run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper
from tests.helpers import paths
from tests.helpers.marks import needs_toolkit
from tests.helpers.models import run_models

from harness.cases.model_dir import prepared_entry
from harness.cli import main
from harness.modelfiles.nodetests import list_models, select
from harness.modelfiles.prepare import ModelFileError, opset_of, prepare
from harness.report.markdown import md_escape
from harness.results.journal import read_records
from harness.vendors.rknn.toolkit.simulator.worker import FAULT_ENV

NODE_TESTS = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
ROOT = paths.ROOT


def node_tests(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "models"
    for name in names:
        shutil.copytree(NODE_TESTS / name, folder / name)
    return folder


@needs_toolkit
def test_a_compiler_crash_is_a_violation_with_a_bundle_that_reproduces_it_and_is_cached(
    tmp_path: Path,
) -> None:
    """rknn-toolkit2 2.5.0 segfaults in its OpEmit pass on the node test test_max_one_input."""
    folder = node_tests(tmp_path, "test_max_one_input")
    cache = ["--hil-cache", str(tmp_path / "cache")]
    run = run_models(tmp_path, folder, *cache)
    assert run.returncode == 1, run.stdout + run.stderr  # a failure, not an error
    [record] = read_records(tmp_path / "results")
    assert record.verdict == "violation"
    assert record.detail == (
        "placement: build aborted (SIGSEGV): compiler crash (SIGSEGV in rknn.build, compiler "
        "pass OpEmit); confirmed: the same crash again in a fresh worker process"
    )
    [bundle] = [p for p in (tmp_path / "results" / "bundles").iterdir() if p.is_dir()]
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    script = [sys.executable, str(bundle / "reproduce.py"), "--log", str(tmp_path / "r.log")]
    repro = subprocess.run(script, capture_output=True, text=True, timeout=300, env=env)
    assert repro.returncode == 0, repro.stdout + repro.stderr
    assert "outcome   recorded: build aborted (SIGSEGV)  now: build aborted (SIGSEGV)" in (
        repro.stdout
    )
    # Served from the cache: a worker that would now exit instead is never asked.
    again = run_models(tmp_path, folder, *cache, env={FAULT_ENV: f"exit:{record.id}"})
    assert again.returncode == 1, again.stdout + again.stderr
    assert read_records(tmp_path / "results")[-1].detail == record.detail


@pytest.mark.parametrize(
    "name",
    [
        "test_averagepool_2d_ceil_last_window_starts_on_pad",
        "test_maxpool_2d_ceil_output_size_reduce_by_one",
    ],
)
def test_a_lowered_ceil_mode_pool_keeps_its_declared_shapes_and_says_so(name: str) -> None:
    """Opset 22 drops a last window that starts in the padding; opset 19's shape inference
    keeps it, so the lowered model fails a strict check although both are valid."""
    [entry] = select(list_models(NODE_TESTS), [name], ())
    prepared = prepared_entry(entry, freeze_parameters=True)
    assert opset_of(prepared.model) == 19
    [output] = prepared.model.graph.output
    assert [d.dim_value for d in output.type.tensor_type.shape.dim][2:] == [1, 1]  # declared
    assert prepared.changes[-1].startswith(
        "the declared shapes kept: opset 19 shape inference disagrees with them after the "
        "lowering from 22 ("
    )
    assert "differ in dimension 2: (2) vs (1)" in prepared.changes[-1]


def relu(
    input_shape: list[int | str], output_shape: list[int | str], op: str = "Relu"
) -> onnx.ModelProto:
    attributes = {"kernel_shape": [2, 2], "strides": [2, 2]} if op == "MaxPool" else {}
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], **attributes)],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)


def test_a_model_refused_names_its_own_defect_or_what_the_harness_did() -> None:
    with pytest.raises(ModelFileError) as own:
        prepare(relu([1, 2], [1, 3]), "bad", "bad.onnx")
    assert str(own.value).startswith("bad.onnx: the model itself does not check at its opset 19:")
    with pytest.raises(ModelFileError) as ours:
        prepare(relu(["N", 2], [1, 2]), "fixed", "fixed.onnx", input_shapes={"x": [2, 2]})
    assert str(ours.value).startswith(
        "fixed.onnx: the model checks as given but not after the harness's changes (input x "
        "shape fixed to [2, 2] (--input-shape)):"
    )


@needs_toolkit
def test_models_not_run_are_skipped_tests_and_report_rows_with_relative_paths(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    onnx.save(relu([1, 1, 4, 4], [1, 1, 2, 2], "MaxPool"), folder / "pool.onnx")  # runs
    onnx.save(relu(["N", 1, 4, 4], ["N", 1, 2, 2], "MaxPool"), folder / "symbolic.onnx")
    onnx.save(relu([1, 2], [1, 2], "Mish"), folder / "mish.onnx")  # documented only fused
    run = run_models(tmp_path, folder, "--models-select", "catalogue", "-rs")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed, 2 skipped" in run.stdout
    reasons = [
        "not selected: --models-select catalogue: Mish is documented only fused "
        "(ConvolutionMish), not alone",
        "not runnable: symbolic.onnx: input 'x' has shape [N,1,4,4]; give it with "
        "--input-shape x=D,D,...",
    ]
    for reason in reasons:
        assert f"test_models.py: {reason}" in run.stdout
    assert str(folder) not in run.stdout
    assert main(["report", str(tmp_path / "results")]) == 0
    markdown = (tmp_path / "results" / "report.md").read_text()
    assert "Models not run: 2 (1 not runnable, 1 not selected)" in markdown
    assert "- mish: " + md_escape(reasons[0]) in markdown
    assert "- symbolic: " + md_escape(reasons[1]) in markdown
    html = (tmp_path / "results" / "report.html").read_text()
    assert "<code>symbolic</code>" in html and str(folder) not in html
