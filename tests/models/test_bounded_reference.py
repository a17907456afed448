"""A user's model whose host references would run for days (4 KB of nested ``If`` subgraphs:
onnxruntime takes twice as long to load it for each level) obeys the run's deadline, SIGTERM
and Ctrl-C; what the references of an ordinary model say is unchanged by computing them in a
child process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from tests.helpers.children import default_signals
from tests.helpers.marks import needs_toolkit
from tests.helpers.paths import ROOT
from tests.helpers.user_models import float_model

from harness.cases.user_models import model_case
from harness.modelfiles.prepare import prepare
from harness.models import BuiltModel, build_model
from harness.models.bounded_reference import ReferenceDeadlineError, references_within
from harness.models.reference import NoReferenceError, References, host_references
from harness.results.journal import read_records

DEPTH = 30  # levels of If: about 4 KB; onnxruntime's load alone would take days


def nested_if(depth: int = DEPTH) -> onnx.ModelProto:
    """``depth`` If nodes, each the then-branch of the one above; the innermost passes x on."""

    def output(name: str) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 4])

    leaf = helper.make_node("Identity", ["x"], ["y0"])
    branch = helper.make_graph([leaf], "l0", [], [output("y0")])
    for level in range(1, depth + 1):
        negated = helper.make_node("Neg", ["x"], [f"n{level}"])
        other = helper.make_graph([negated], f"e{level}", [], [output(f"n{level}")])
        node = helper.make_node("If", ["c"], [f"y{level}"], then_branch=branch, else_branch=other)
        branch = helper.make_graph([node], f"l{level}", [], [output(f"y{level}")])
    inputs = [output("x"), helper.make_tensor_value_info("c", TensorProto.BOOL, [])]
    graph = helper.make_graph(branch.node, "nested", inputs, [output(f"y{depth}")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


def built_case(model: onnx.ModelProto, name: str) -> BuiltModel:
    prepared = prepare(model, name, f"{name}.onnx")
    case, specs = model_case(prepared, "rk3562", "float16")
    return build_model(case.op, case.params, case.seed, specs)


def test_the_nested_model_is_small() -> None:
    assert 3500 < len(nested_if().SerializeToString()) < 4500


def _children() -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        found |= {int(pid) for pid in (task / "children").read_text().split()}
    return found


def test_past_the_deadline_the_child_is_killed_and_the_model_named() -> None:
    built = built_case(nested_if(), "nested")
    before = _children()
    with pytest.raises(ReferenceDeadlineError) as stopped:
        references_within(host_references, built, 1.0, "models/nested.onnx")
    assert str(stopped.value).startswith(
        "models/nested.onnx: the host references (onnx.reference, onnxruntime) did not finish "
        "within the run's deadline, --hil-timeout 1 s: stopped"
    )
    assert _children() == before  # killed and reaped


def test_an_ordinary_models_references_are_the_same_from_the_child() -> None:
    relu = float_model([helper.make_node("Relu", ["x"], ["y"])], "relu", [1, 8], {"y": None})
    built = built_case(relu, "relu")
    here = host_references(built)
    there = references_within(host_references, built, 60.0, "relu.onnx")
    assert there.unavailable == here.unavailable
    assert sorted(there.outputs) == sorted(here.outputs)
    for name, arrays in here.outputs.items():
        for mine, theirs in zip(arrays, there.outputs[name], strict=True):
            np.testing.assert_array_equal(mine, theirs)


def _warns_then_refuses(built: BuiltModel) -> References:
    warnings.warn("a warning from the child", UserWarning, stacklevel=1)
    raise NoReferenceError("no host reference runs the model: both refused")


def test_what_the_child_raises_and_warns_reaches_the_caller() -> None:
    built = built_case(nested_if(2), "small")
    with (
        pytest.warns(UserWarning, match="a warning from the child"),
        pytest.raises(NoReferenceError, match="both refused"),
    ):
        references_within(_warns_then_refuses, built, 60.0, "small.onnx")


HIL = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())"]


def _hil_run(tmp_path: Path, timeout: str) -> subprocess.Popen[str]:
    path = tmp_path / "nested.onnx"
    onnx.save(nested_if(), path)
    results = ["--results", str(tmp_path / "results"), "--hil-cache", "off"]
    return subprocess.Popen(
        [*HIL, "run", str(path), *results, "--hil-timeout", timeout],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
        preexec_fn=default_signals,  # a Ctrl-C must reach it
    )


@needs_toolkit
def test_hil_run_stops_the_references_at_its_deadline_with_a_bad_input_record(
    tmp_path: Path,
) -> None:
    run = _hil_run(tmp_path, "5")
    try:
        out, err = run.communicate(timeout=300)  # the old harness: still loading, for days
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 2, out + err
    [record] = read_records(tmp_path / "results")
    assert record.verdict == "bad-input"
    assert f"{tmp_path / 'nested.onnx'}: the host references" in record.detail
    assert "--hil-timeout 5 s: stopped" in record.detail
    assert "Traceback" not in err
    assert (tmp_path / "results" / "report.md").is_file()


def _forked_child(pid: int) -> int | None:
    """A child of ``pid`` running its own command line (a fork, not a started program)."""
    command = Path(f"/proc/{pid}/cmdline").read_bytes()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except FileNotFoundError:  # a thread that ended while the tasks were listed
            continue
        for child in children:
            try:
                if Path(f"/proc/{child}/cmdline").read_bytes() == command:
                    return int(child)
            except FileNotFoundError:
                continue
    return None


def _gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status  # dead, not reaped by a container's init


@needs_toolkit
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_hil_run_computing_references_ends_on_sigterm_and_ctrl_c(
    tmp_path: Path, signum: signal.Signals
) -> None:
    run = _hil_run(tmp_path, "600")
    try:
        child = None
        # the references' child, once hil run reaches them; the old harness, which computes
        # them in its own process, is certainly inside them after a minute
        waited = time.monotonic() + 60
        while child is None and time.monotonic() < waited and run.poll() is None:
            child = _forked_child(run.pid)
            time.sleep(0.2)
        assert run.poll() is None, run.communicate()
        os.killpg(run.pid, signum)  # a terminal's Ctrl-C reaches the whole process group
        run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode != 0
    assert child is not None
    # killed by hil run or, once it is gone, by its parent-death signal: either lands a moment
    # after hil run ends, later on a busy machine
    waited = time.monotonic() + 60
    while not _gone(child) and time.monotonic() < waited:
        time.sleep(0.2)
    assert _gone(child)
    assert (tmp_path / "results" / "run.json").is_file()  # what the run had written is kept
