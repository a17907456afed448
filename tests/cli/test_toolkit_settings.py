"""``hil run`` with the user's own toolkit settings, and int8 where a platform builds nothing
else: on the rknn-toolkit2 simulator, through the bundle's ``reproduce.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from tests.helpers.marks import needs_toolkit
from tests.helpers.user_models import five_node_model, float_model

from harness.cli import main
from harness.results.journal import read_records

# mean/std under 1 make the toolkit say it read them: "the range of mean_values/std_values
# should be in [0, 255], but the value you filled is less than 1"
SETTINGS = {
    "mean_values": [[0.5, 0.5, 0.5, 0.5]],
    "std_values": [[0.5, 0.5, 0.5, 0.5]],
    "optimization_level": 2,
}
TOOLKIT_SAW_THEM = "mean_values/std_values"


def conv_model() -> onnx.ModelProto:
    """Conv, Relu, MaxPool on a [1, 3, 16, 16] input: int8 on RV1106, all on the NPU."""
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.uniform(-0.5, 0.5, (8, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.uniform(-0.1, 0.1, (8,)).astype(np.float32), "b"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
    ]
    return float_model(
        nodes, "mynet", [1, 3, 16, 16], {"y": [1, 8, 8, 8]}, constants=weights, opset=13
    )


@needs_toolkit
def test_rv1106_builds_int8_when_no_dtype_is_asked_for_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "mynet.onnx"
    onnx.save(conv_model(), model)
    results = tmp_path / "results"
    cache = ["--hil-cache", str(tmp_path / "cache"), "--results", str(results)]
    assert main(["run", str(model), "--platform", "rv1106", *cache]) == 0
    out = capsys.readouterr().out
    assert (
        "rv1106: an int8 build: rknn-toolkit2 2.5.0 builds int8 only for this target "
        '(float16: "not support do_quantization = False")'
    ) in out
    assert (
        "int8 calibration: no set given (--quantize DIR): the model's inputs and 3 more "
        "samples drawn as they are"
    ) in out
    [record] = read_records(results)
    assert (record.id, record.verdict) == ("rv1106/model/mynet/int8", "confirmed")
    toolkit = json.loads((results / record.artifacts / "toolkit.json").read_text())
    assert toolkit["do_quantization"] is True and toolkit["dataset"] == "dataset.txt"


@needs_toolkit
def test_the_users_settings_reach_the_build_the_record_toolkit_json_and_reproduce_py(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "five.onnx"
    onnx.save(five_node_model(), model)
    settings = tmp_path / "settings.yaml"
    settings.write_text(json.dumps(SETTINGS), encoding="utf-8")  # JSON is YAML
    results = tmp_path / "results"
    options = ["--platform", "rk3562", "--toolkit-config", str(settings), "--layers"]
    options += ["--hil-cache", str(tmp_path / "cache"), "--results", str(results)]
    assert main(["run", str(model), *options]) == 1  # the dilated pool's wrong result
    capsys.readouterr()
    records = {record.id: record for record in read_records(results)}
    layers = records["rk3562/layers/five/float16"]
    assert layers.verdict == "wrong-result"
    assert layers.params["build_config"] == SETTINGS
    # the model's outputs match everywhere else: the toolkit was fed x * std + mean
    assert "output 0: shape (1, 4, 10, 10)" in layers.detail
    assert TOOLKIT_SAW_THEM in (results / layers.artifacts / "build.log").read_text()
    # the model's own bundle (what a user sends), its per-layer run's table inside
    [bundle] = (results / "bundles").glob("rk3562_model_five_float16*[!z]")
    toolkit = json.loads((bundle / "toolkit.json").read_text())
    assert toolkit["config"] == SETTINGS and toolkit["do_quantization"] is False

    log = tmp_path / "reproduce.log"
    run = subprocess.run(
        [sys.executable, "reproduce.py", "--log", str(log)],
        cwd=bundle,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"settings: {json.dumps(SETTINGS)}" in run.stdout
    assert "output 0 (pooled): MISMATCH: shape (1, 4, 10, 10), expected (1, 4, 8, 8)" in (
        run.stdout
    )
    assert "output 1 (y): max abs error" in run.stdout and "REPRODUCED: wrong-result" in run.stdout
    assert "wrong layer (layers.json, the first past tolerance): index 2, node pool" in run.stdout
    assert TOOLKIT_SAW_THEM in log.read_text()


@needs_toolkit
@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("mean_value: [[1]]\n", "did you mean 'mean_values' (RKNN.config)?"),
        ("do_quantization: false\ndataset: d.txt\n", "asks for no quantization, yet a calibration"),
    ],
)
def test_a_settings_file_that_cannot_be_used_is_exit_2_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, words: str
) -> None:
    model = tmp_path / "five.onnx"
    onnx.save(five_node_model(), model)
    settings = tmp_path / "bad.yaml"
    settings.write_text(text, encoding="utf-8")
    results = tmp_path / "results"
    argv = ["run", str(model), "--toolkit-config", str(settings), "--results", str(results)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(settings) in err and words in err
    assert not (results / "run.json").exists()


@needs_toolkit
def test_the_settings_calibration_list_is_the_int8_calibration_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "mynet.onnx"
    onnx.save(conv_model(), model)
    samples = tmp_path / "calibration"
    samples.mkdir()
    rng = np.random.default_rng(1)
    for index in range(2):
        np.save(samples / f"s{index}.npy", rng.uniform(-1, 1, [1, 3, 16, 16]).astype(np.float32))
    (samples / "list.txt").write_text("s0.npy\ns1.npy\n", encoding="utf-8")
    settings = tmp_path / "settings.yaml"
    settings.write_text("dataset: calibration/list.txt\n", encoding="utf-8")
    results = tmp_path / "results"
    argv = ["run", str(model), "--platform", "rk3588", "--toolkit-config", str(settings)]
    assert main([*argv, "--results", str(results), "--hil-cache", str(tmp_path / "c")]) == 0
    assert "int8 calibration" not in capsys.readouterr().out  # given, not drawn
    [record] = read_records(results)
    assert record.id == "rk3588/model/mynet/int8"
    listed = (results / record.artifacts / "dataset.txt").read_text().splitlines()
    assert len(listed) == 2
    first = np.load(results / record.artifacts / listed[0].split()[0])
    np.testing.assert_array_equal(first, np.load(samples / "s0.npy"))

    (samples / "list.txt").write_text("s0.npy s1.npy\n", encoding="utf-8")
    assert main([*argv, "--results", str(tmp_path / "again")]) == 2
    assert "line 1: 2 files for the model's 1 inputs ['x']" in capsys.readouterr().err
