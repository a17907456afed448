"""``hil run`` checks every layer of a user's model against the platform's document and puts
the per-layer truth, and the per-layer accuracy of a wrong result, into the record and the
repro bundle (the real simulator, a private result cache)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper
from tests.helpers.marks import needs_toolkit
from tests.helpers.user_models import five_node_model, float_model

from harness.cli import main
from harness.results.journal import read_records


def _run(tmp_path: Path, model: onnx.ModelProto, name: str, *args: str) -> tuple[int, Path]:
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    results = tmp_path / "results"
    options = ["--hil-cache", str(tmp_path / "cache"), "--results", str(results), *args]
    return main(["run", str(path), *options]), results


def _bundle(results: Path) -> Path:
    (bundle,) = [path for path in (results / "bundles").iterdir() if path.is_dir()]
    return bundle


@needs_toolkit
def test_a_maxpool_of_kernel_8_on_rv1106_is_outside_kernel_h_in_the_record_and_bundle(
    tmp_path: Path, capsys
) -> None:
    """RV1106 refuses float16 builds: int8, calibrated on one sample of the input."""
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[8, 1])
    model = float_model([node], "pool8", [1, 4, 16, 16], {"y": None}, opset=13)
    sample = tmp_path / "calibration" / "0"
    sample.mkdir(parents=True)
    rng = np.random.default_rng(0)
    np.save(sample / "x.npy", rng.uniform(-1, 1, [1, 4, 16, 16]).astype(np.float32))
    quantize = ["--quantize", str(sample.parent)]
    code, results = _run(tmp_path, model, "pool8", "--platform", "rv1106", *quantize)
    out = capsys.readouterr().out
    assert code == 1, out
    line = (
        "layer pool (MaxPool) is outside the documented limit MaxPool/attr/kernel_h (kernel_h=8; "
        'RKNN Compiler Support Operator List V2.3.2 § 3.4.42, p. 166: "kernel_h ∈ (0, 7]"): '
        "a failure there is expected per the document"
    )
    assert f"  document: {line}" in out
    record = next(r for r in read_records(results) if r.id == "rv1106/model/pool8/int8")
    assert record.verdict == "wrong-result"
    assert (record.documented, record.deciding_limit) == ("outside", "MaxPool/attr/kernel_h")
    assert record.source["text"] == "kernel_h ∈ (0, 7]"
    assert record.source["section"].endswith("§ 3.4.42, p. 166")
    bundle = _bundle(results)
    assert json.loads((bundle / "case.json").read_text())["id"] == record.id
    readme = (bundle / "README.md").read_text()
    assert "documented as **outside**" in readme
    assert "### 0 pool (MaxPool): outside the documented limits of MaxPool" in readme
    assert "- outside MaxPool/attr/kernel\\_h (kernel\\_h=8), RKNN Compiler Support" in readme
    assert "  > kernel\\_h ∈ (0, 7\\]" in readme
    assert "No vendor document covers" not in readme
    check = json.loads((bundle / "document-check.json").read_text())
    assert check["layers"][0]["outside"][0]["id"] == "MaxPool/attr/kernel_h"
    # the wrong result's per-layer comparison, on the inputs the model ran on
    layers = json.loads((bundle / "layers.json").read_text())
    assert [(layer["node"], layer["passed"]) for layer in layers] == [("pool", False)]
    assert layers[0]["first_past_tolerance"] and layers[0]["cosine"] < 1
    assert "| 0 | pool | MaxPool |" in readme and "**first past tolerance**" in readme


@needs_toolkit
def test_a_model_inside_the_document_is_documented_as_supported_per_layer(
    tmp_path: Path, capsys
) -> None:
    """The five-node model with the count_include_pad RK3562 documents (1): every layer inside
    the limits read, so its wrong result (the dilated pool) is a vendor bug, per layer."""
    model = five_node_model()
    pool = next(node for node in model.graph.node if node.name == "pool")
    pool.attribute.append(helper.make_attribute("count_include_pad", 1))
    code, results = _run(tmp_path, model, "five", "--platform", "rk3562")
    out = capsys.readouterr().out
    assert code == 1, out
    assert "  document: 5 of 5 layers documented as supported by" in out
    record = next(r for r in read_records(results) if r.id == "rk3562/model/five/float16")
    assert (record.verdict, record.documented, record.deciding_limit) == (
        "wrong-result",
        "supported",
        "",
    )
    readme = (_bundle(results) / "README.md").read_text()
    assert "the model is documented as **supported**" in readme
    for heading in (
        "### 0 add (Add): documented as supported by Add",
        "### 2 pool (AveragePool): documented as supported by AveragePool",
        "### 4 sigmoid (Sigmoid): documented as supported by Sigmoid",
    ):
        assert heading in readme
    assert "- inside AveragePool/attr/count\\_include\\_pad (count\\_include\\_pad=1)" in readme
    assert "No vendor document covers" not in readme
    assert "| 2 | pool | AveragePool |" in readme
    first = [row for row in readme.splitlines() if "**first past tolerance**" in row]
    assert len(first) == 1 and first[0].startswith("| 2 | pool |")


@needs_toolkit
def test_a_refused_build_of_a_layer_outside_its_documented_dtype_is_no_vendor_bug(
    tmp_path: Path, capsys
) -> None:
    """RV1106 documents Convolution in int8 only and its toolkit refuses a float16 build (asked
    for in the user's settings: without them RV1106 builds int8): what the document expects
    (limit-confirmed, exit 0, no bundle), not a violation."""
    weight = numpy_helper.from_array(np.ones([8, 8, 3, 3], np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    model = float_model([node], "conv", [1, 8, 10, 10], {"y": None}, constants=[weight])
    settings = tmp_path / "float16.yaml"
    settings.write_text("do_quantization: false\n", encoding="utf-8")
    code, results = _run(
        tmp_path, model, "conv", "--platform", "rv1106", "--toolkit-config", str(settings)
    )
    out = capsys.readouterr().out
    assert code == 0, out
    (record,) = read_records(results)
    assert (record.id, record.verdict) == ("rv1106/model/conv/float16", "limit-confirmed")
    assert record.deciding_limit == "Convolution/dtype/T1"
    assert record.source["text"] == "T1: int8(Tensor)"
    assert not (results / "bundles").exists() or not any((results / "bundles").iterdir())
