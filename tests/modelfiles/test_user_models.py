"""Users' own ONNX models: preparation, ``hil run`` (with ``--layers``) and ``hil reduce``.

The end-to-end tests run the real rknn-toolkit2 simulator with a private result cache, so
every step really goes through the toolkit. Their model: rknn-toolkit2 2.5.0 lowers an
AveragePool with dilations to one NPU Conv that ignores the dilation (docs/rknn.md), so its
output is wrong (even its shape).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from tests.helpers import paths
from tests.helpers.declared import MODELS
from tests.helpers.marks import needs_toolkit
from tests.helpers.user_models import five_node_model, float_model

from harness.cases.model_dir import directory_cases
from harness.cli import main
from harness.modelfiles.graph import sub_model
from harness.modelfiles.nodetests import list_models, select
from harness.modelfiles.prepare import ModelFileError, prepare, read_arrays
from harness.results.journal import read_records
from harness.vendors import vendor_named


def branching_pow_model() -> onnx.ModelProto:
    """Add, then Relu and Sigmoid of its output meeting in a Pow (base and exponent tensors,
    which rknn-toolkit2 2.5.0 runs on the CPU), then a Mul."""
    constants = [
        numpy_helper.from_array(np.full([1, 4, 1, 1], 0.5, np.float32), "bias"),
        numpy_helper.from_array(np.full([1, 4, 1, 1], 2.0, np.float32), "two"),
    ]
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["a"], name="add"),
        helper.make_node("Relu", ["a"], ["r"], name="relu"),
        helper.make_node("Sigmoid", ["a"], ["s"], name="sigmoid"),
        helper.make_node("Pow", ["r", "s"], ["p"], name="pow"),
        helper.make_node("Mul", ["p", "two"], ["y"], name="mul"),
    ]
    model = float_model(nodes, "branches", [1, 4, 6, 6], {"y": None}, constants=constants)
    return onnx.shape_inference.infer_shapes(model)


def relu_model(opset: int, shape: list[int | str]) -> onnx.ModelProto:
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu")
    return float_model([relu], "relu", shape, {"y": shape}, opset=opset, ir_version=10)


# -- preparation ---------------------------------------------------------------------------


def test_a_newer_opset_is_lowered_and_the_change_recorded() -> None:
    prepared = prepare(relu_model(21, [1, 2, 3, 3]), "relu", "relu.onnx")
    assert [o.version for o in prepared.model.opset_import if o.domain == ""] == [19]
    assert prepared.changes == ["opset lowered from 21 to 19 (onnx.version_converter; Relu)"]
    # the ceiling is the vendor's (Vendor.max_opset): one that takes opset 20 gets 20
    newer = prepare(relu_model(21, [1, 2, 3, 3]), "relu", "relu.onnx", max_opset=20)
    assert newer.changes == ["opset lowered from 21 to 20 (onnx.version_converter; Relu)"]
    assert vendor_named("rknn").max_opset == 19  # rknn-toolkit2 refuses a newer model


def one_node_model(op: str, opset: int) -> onnx.ModelProto:
    node = helper.make_node(op, ["x"], ["y"], name=op.lower())
    return float_model([node], op, [1, 2, 3, 3], {"y": None}, opset=opset, ir_version=10)


def test_without_a_converter_a_types_only_revision_is_relabelled_and_others_refused() -> None:
    # onnx.version_converter has no adapter from 22 for GlobalMaxPool, whose opset-22 revision
    # only added types; Gelu does not exist at opset 19.
    prepared = prepare(one_node_model("GlobalMaxPool", 22), "gmp", "gmp.onnx")
    assert [o.version for o in prepared.model.opset_import if o.domain == ""] == [19]
    assert prepared.changes == [
        "opset relabelled from 22 to 19: the revisions of GlobalMaxPool in between changed only "
        "type constraints, and the model's types are allowed at 19"
    ]
    with pytest.raises(ModelFileError, match=r"gelu.onnx: opset 20 is newer than the 19 .* cannot"):
        prepare(one_node_model("Gelu", 20), "gelu", "gelu.onnx")


def test_a_symbolic_input_needs_a_shape_and_the_error_names_the_input() -> None:
    model = relu_model(19, ["N", 2, 3, 3])
    with pytest.raises(ModelFileError, match=r"relu.onnx: input 'x' has shape \[N,2,3,3\]"):
        prepare(model, "relu", "relu.onnx")
    prepared = prepare(model, "relu", "relu.onnx", input_shapes={"x": [2, 2, 3, 3]})
    assert prepared.input_shapes == [[2, 2, 3, 3]]
    assert prepared.changes == ["input x shape fixed to [2, 2, 3, 3] (--input-shape)"]
    with pytest.raises(ModelFileError, match=r"--input-shape x=\[2, 5, 3, 3\] does not fit"):
        prepare(model, "relu", "relu.onnx", input_shapes={"x": [2, 5, 3, 3]})


def test_given_inputs_must_fit_and_every_npy_file_must_match_an_input(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.zeros([1, 2, 3, 4], np.float32))
    model = relu_model(19, [1, 2, 3, 3])
    given = read_arrays(tmp_path, ["x"])
    with pytest.raises(ModelFileError, match=r"input 'x': shape \[1, 2, 3, 4\], the model needs"):
        prepare(model, "relu", "relu.onnx", given=given)
    np.save(tmp_path / "z.npy", np.zeros([1], np.float32))
    with pytest.raises(ModelFileError, match=r"\['z.npy'\] match no input"):
        read_arrays(tmp_path, ["x"])


def test_random_inputs_are_seeded_and_within_their_range() -> None:
    prepared = prepare(relu_model(19, [1, 2, 3, 3]), "relu", "w", ranges={"x": (2.0, 3.0)})
    first = prepared.draw(np.random.default_rng(5))[0]
    assert np.array_equal(first, prepared.draw(np.random.default_rng(5))[0])
    assert first.min() >= 2.0 and first.max() <= 3.0  # fp16 rounding may reach the bound


def test_a_sub_model_needs_inputs_that_cut_it_off() -> None:
    model = five_node_model()
    assert [n.name for n in sub_model(model, ["r"], ["pooled"]).graph.node] == ["pool"]
    assert [n.name for n in sub_model(model, ["x"], ["pooled"]).graph.node] == [
        "add",
        "relu",
        "pool",
    ]
    assert sub_model(model, ["a"], ["y"]) is not None
    assert sub_model(model, ["m"], ["pooled"]) is None  # the pool still needs x
    pow_only = sub_model(branching_pow_model(), ["a", "r", "s"], ["p"])
    assert [info.name for info in pow_only.graph.input] == ["r", "s"]  # "a" is read by nothing


def test_a_bad_model_file_is_exit_2_naming_it(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    assert main(["run", str(bad), "--results", str(tmp_path / "r")]) == 2
    assert f"{bad}: not an ONNX model" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "none.onnx"), "--results", str(tmp_path / "r2")]) == 2
    assert "none.onnx: no such model file" in capsys.readouterr().err
    assert main(["reduce", str(tmp_path)]) == 2
    assert f"{tmp_path}: a results directory; give the case id after it" in capsys.readouterr().err
    (tmp_path / "journal.jsonl").write_text("")
    assert main(["reduce", str(tmp_path), "rk3562/model/x/float16"]) == 2
    assert "journal.jsonl: journal holds no records" in capsys.readouterr().err


# -- on the simulator ----------------------------------------------------------------------


def _hil(tmp_path: Path, command: str, *args: str, model: onnx.ModelProto | None = None) -> int:
    """``hil COMMAND five.onnx ARGS`` (the five-node model unless ``model``) into
    tmp_path/results with a private simulator cache."""
    path = tmp_path / "five.onnx"
    onnx.save(model or five_node_model(), path)
    cache = ["--hil-cache", str(tmp_path / "cache"), "--results", str(tmp_path / "results")]
    return main([command, str(path), "--platform", "rk3562", *cache, *args])


@needs_toolkit
def test_hil_reduce_ends_with_at_most_two_nodes_still_wrong_and_a_bundle(
    tmp_path: Path, capsys
) -> None:
    code = _hil(tmp_path, "reduce")
    results = tmp_path / "results"
    out = capsys.readouterr().out
    assert code == 1, out
    records = {record.id: record for record in read_records(results)}
    original = records["rk3562/model/five/float16"]
    assert original.verdict == "wrong-result"
    steps = [record for record in records.values() if record.id.startswith("rk3562/reduce/")]
    assert steps, out
    smallest_line = next(line for line in out.splitlines() if line.startswith("smallest"))
    smallest_id = smallest_line.rsplit("case ", 1)[1]
    smallest = records[smallest_id]
    assert smallest.verdict == "wrong-result"
    assert smallest.params["nodes"] <= 2
    model = onnx.load(str(results / smallest.artifacts / "model.onnx"))
    assert len(model.graph.node) <= 2
    assert "AveragePool" in {node.op_type for node in model.graph.node}
    # each step's model and verdict are kept
    for step in steps:
        assert (results / step.artifacts / "model.onnx").is_file()
    bundle = Path(out.strip().splitlines()[-1].removeprefix("bundle: "))
    assert bundle.is_dir() and (bundle / "reproduce.py").is_file()
    assert len(onnx.load(str(bundle / "model.onnx")).graph.node) <= 2
    assert bundle.with_name(bundle.name + ".tar.gz").is_file()
    case = json.loads((bundle / "case.json").read_text())
    assert case["verdict"] == "wrong-result" and case["id"] == smallest_id
    # beside the reduced model: its layers against the document and against the reference
    layers = json.loads((bundle / "layers.json").read_text())
    assert [layer["op"] for layer in layers if layer["first_past_tolerance"]] == ["AveragePool"]
    check = json.loads((bundle / "document-check.json").read_text())
    assert "AveragePool" in [layer["op"] for layer in check["layers"]]
    assert "## Per-layer accuracy" in (bundle / "README.md").read_text()


@needs_toolkit
def test_hil_run_layers_names_the_first_bad_layer_and_reduce_takes_the_case(
    tmp_path: Path, capsys
) -> None:
    assert _hil(tmp_path, "run", "--layers") == 1
    results = tmp_path / "results"
    out = capsys.readouterr().out
    assert "rk3562/model/five/float16: wrong-result [simulator]" in out
    assert "first layer past tolerance: pool (AveragePool, tensor pooled)" in out
    records = {record.id: record for record in read_records(results)}
    layers = json.loads(
        (results / records["rk3562/layers/five/float16"].artifacts / "layers.json").read_text()
    )
    assert [(layer["node"], layer["passed"]) for layer in layers] == [
        ("add", True),
        ("relu", True),
        ("pool", False),
        ("mul", True),
        ("sigmoid", True),
    ]
    assert (results / "report.md").is_file()
    cache = str(tmp_path / "cache")
    run_json = (results / "run.json").read_text()
    assert main(["reduce", str(results), "rk3562/model/five/float16", "--hil-cache", cache]) == 1
    out = capsys.readouterr().out
    assert "smallest failing model: 1 nodes" in out
    assert (results / "run.json").read_text() == run_json  # the run being reduced keeps its own


@needs_toolkit
def test_initializers_listed_among_the_graph_inputs_are_not_inputs_to_feed(
    tmp_path: Path, capsys
) -> None:
    """Older exporters list every initializer among the graph inputs too, here ahead of ``x``:
    a bare ``--range`` is for ``x`` alone, and ``hil reduce`` finds ``x``'s saved array."""
    model = five_node_model()
    listed = [
        helper.make_tensor_value_info(constant.name, TensorProto.FLOAT, constant.dims)
        for constant in model.graph.initializer
    ]
    inputs = [*listed, *model.graph.input]
    del model.graph.input[:]
    model.graph.input.extend(inputs)
    assert _hil(tmp_path, "run", "--range=-0.5,0.5", model=model) == 1, capsys.readouterr()
    results = tmp_path / "results"
    record = next(iter(read_records(results)))
    assert record.verdict == "wrong-result"
    inputs = sorted((results / record.artifacts / "inputs").glob("*.npy"))
    assert [path.name for path in inputs] == ["0_x.npy"]
    x = np.load(inputs[0])
    assert x.min() >= -0.5 and x.max() <= 0.5
    cache = str(tmp_path / "cache")
    capsys.readouterr()
    assert main(["reduce", str(results), record.id, "--hil-cache", cache]) == 1
    assert "smallest failing model: 1 nodes" in capsys.readouterr().out


# -- a folder of models as a suite -----------------------------------------------------------

NODE_TESTS = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
MODELS_SUITE = paths.ROOT / "suites" / "test_models.py"


def test_parameters_given_as_inputs_are_frozen_and_recorded() -> None:
    found = directory_cases(NODE_TESTS, "rk3562", MODELS, ["test_constant_pad", "test_gather_0"])
    assert [case.id for case in found.cases] == [
        "rk3562/models/test_constant_pad/float16",
        "rk3562/models/test_gather_0/float16",
    ]
    pad = found.specs["models:test_constant_pad"].defaults
    assert list(pad["inputs"]) == ["x"]  # pads and value became constants
    assert pad["changes"] == [
        "input pads frozen into a constant (an operator parameter)",
        "input value frozen into a constant (an operator parameter)",
        "opset lowered from 23 to 19 (onnx.version_converter; Pad)",
    ]
    assert [case.layer_types for case in found.cases] == [(), ()]  # no catalogue given
    documented = directory_cases(NODE_TESTS, "rk3562", MODELS, ["test_constant_pad"], ["Pad"])
    (pad_case,) = documented.cases
    assert pad_case.layer_types == ("Pad",)  # judged on its operator's layers
    assert documented.documented == {pad_case.op: "Pad"}  # and with its tolerance
    kept = directory_cases(
        NODE_TESTS, "rk3562", MODELS, ["test_constant_pad"], freeze_parameters=False
    )
    assert list(kept.specs["models:test_constant_pad"].defaults["inputs"]) == ["x", "pads", "value"]


def test_the_catalogue_selector_takes_the_models_of_catalogue_operators_only() -> None:
    chosen = {entry.name for entry in select(list_models(NODE_TESTS), ["catalogue"], ["Pad"])}
    assert {"test_constant_pad", "test_edge_pad", "test_reflect_pad", "test_wrap_pad"} <= chosen
    assert "test_averagepool_2d_pads" not in chosen  # AveragePool is not in the list given
    assert "test_maxpool_2d_pads" not in chosen


@needs_toolkit
def test_a_folder_of_models_runs_as_a_suite_with_the_test_data_as_a_reference(
    tmp_path: Path,
) -> None:

    folder = tmp_path / "models"
    for name in ("test_averagepool_2d_dilations", "test_constant_pad"):
        shutil.copytree(NODE_TESTS / name, folder / name)
    onnx.save(relu_model(19, ["N", 2, 3, 3]), folder / "symbolic.onnx")
    results = tmp_path / "results"
    command = [sys.executable, "-m", "pytest", str(MODELS_SUITE), "-p", "no:cacheprovider"]
    command += ["--models", str(folder), "--results", str(results), "--hil-cache", "off"]
    env = {**os.environ, "PYTHONPATH": str(MODELS_SUITE.parents[1])}  # this tree's plugin
    run = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env
    )
    assert run.returncode == 1, run.stdout + run.stderr  # the dilated AveragePool fails
    records = {record.id: record for record in read_records(results)}
    dilated = records["rk3562/models/test_averagepool_2d_dilations/float16"]
    assert dilated.verdict == "wrong-result"
    pad = records["rk3562/models/test_constant_pad/float16"]
    assert pad.verdict == "confirmed", pad.detail
    assert pad.reference["agreement"]["test data"]["agrees"] is True
    assert "input pads frozen into a constant (an operator parameter)" in pad.params["changes"]
    run_json = json.loads((results / "run.json").read_text())
    assert run_json["models_not_run"] == [
        {
            "model": "symbolic",
            "reason": "not runnable: symbolic.onnx: input 'x' has shape [N,2,3,3]; give it "
            "with --input-shape x=D,D,...",
        }
    ]
    assert (results / "bundles").is_dir()


@needs_toolkit
def test_hil_run_on_a_loopback_board_names_the_board(sshd, tmp_path: Path, capsys) -> None:
    from tests.fakes.sshd import write_sysroot

    board = sshd.board_file(tmp_path / "boards", sysroot=str(write_sysroot(tmp_path / "sys")))
    assert _hil(tmp_path, "run", "--boards", str(board)) == 1
    out = capsys.readouterr().out
    assert "rk3562/model/five/float16: wrong-result [loopback]" in out
    # the model, then its per-layer run (a wrong result's bundle holds the table)
    record, layers = read_records(tmp_path / "results")
    assert record.backend == "loopback" and record.verdict == "wrong-result"
    assert layers.id == "rk3562/layers/five/float16" and layers.backend == "loopback"


def test_a_board_of_another_platform_is_bad_input(sshd, tmp_path: Path, capsys) -> None:
    board = sshd.board_file(tmp_path / "boards")
    assert _hil(tmp_path, "run", "--boards", str(board), "--platform", "rk3588") == 2
    assert "a rk3562 board, not rk3588" in capsys.readouterr().err


@needs_toolkit
def test_a_cpu_fallback_between_two_branches_reduces_to_the_pow_alone(
    tmp_path: Path, capsys
) -> None:
    path = tmp_path / "branches.onnx"
    onnx.save(branching_pow_model(), path)
    results = tmp_path / "results"
    cache = ["--hil-cache", str(tmp_path / "cache"), "--results", str(results)]
    assert main(["reduce", str(path), *cache]) == 1
    out = capsys.readouterr().out
    assert "placement: CPU fallback: whole network: Pow on CPU" in out
    assert "branch: s made inputs" in out  # no single tensor cuts the Pow off: branches go
    records = {record.id: record for record in read_records(results)}
    smallest_id = next(line for line in out.splitlines() if line.startswith("smallest"))
    smallest = records[smallest_id.rsplit("case ", 1)[1]]
    assert smallest.verdict == "violation" and "Pow on CPU" in smallest.detail
    model = onnx.load(str(results / smallest.artifacts / "model.onnx"))
    assert [node.op_type for node in model.graph.node] == ["Pow"]
