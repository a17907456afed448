"""A user's own rknn-toolkit2 settings (``hil run --toolkit-config``) and the int8-only targets,
against the installed toolkit itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from tests.helpers.marks import needs_toolkit

from harness.targets.job import Job
from harness.targets.settings import SettingsError
from harness.vendors.rknn.platforms import PLATFORMS
from harness.vendors.rknn.repro_template import normalised_feeds
from harness.vendors.rknn.toolkit.calls import recipe, toolkit_calls
from harness.vendors.rknn.toolkit.settings import (
    int8_only,
    read_settings,
    toolkit_feeds,
    toolkit_keywords,
)

# The toolkit's own signatures, read by importing it (what toolkit_keywords reads without)
SIGNATURES = """
import inspect, json
from rknn.api import RKNN
print(json.dumps({
    name: [p for p in inspect.signature(getattr(RKNN, name)).parameters
           if p not in ("self", "kwargs")]
    for name in ("config", "build")
}))
"""
# A float16 build of a one-node model on each platform given: the platforms the toolkit refuses
FLOAT16_BUILDS = """
import sys
from rknn.api import RKNN
for platform in sys.argv[2:]:
    rknn = RKNN(verbose=False)
    rknn.config(target_platform=platform)
    rknn.load_onnx(model=sys.argv[1])
    if rknn.build(do_quantization=False) != 0:
        print("REFUSED", platform, flush=True)
    rknn.release()
"""


@needs_toolkit
def test_the_keywords_are_the_installed_toolkits_own() -> None:
    found = subprocess.run(
        [sys.executable, "-c", SIGNATURES], capture_output=True, text=True, timeout=300
    )
    assert found.returncode == 0, found.stderr
    signatures = json.loads(found.stdout.splitlines()[-1])
    keywords = toolkit_keywords()
    assert {name: list(keywords[name]) for name in signatures} == signatures
    assert keywords["config"]["optimization_level"] == 3
    assert keywords["build"]["rknn_batch_size"] is None


@needs_toolkit
def test_the_int8_only_targets_are_those_the_toolkit_refuses_float16_for(tmp_path: Path) -> None:
    model = tmp_path / "sigmoid.onnx"
    tensor = [1, 4, 8, 8]
    graph = helper.make_graph(
        [helper.make_node("Sigmoid", ["x"], ["y"])],
        "sigmoid",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, tensor)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, tensor)],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    run = subprocess.run(
        [sys.executable, "-c", FLOAT16_BUILDS, str(model), *PLATFORMS],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    refused = [line.split()[1] for line in run.stdout.splitlines() if line.startswith("REFUSED")]
    assert sorted(refused) == sorted(int8_only()), run.stdout + run.stderr
    assert "not support do_quantization = False" in int8_only()["rv1106"]


@needs_toolkit
def test_settings_in_yaml_or_json_with_quantization_and_calibration_taken_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "settings.json"
    settings = {
        "mean_values": [[0, 0, 0]],
        "std_values": [[255, 255, 255]],
        "optimization_level": 2,
        "quantized_algorithm": "mmse",
        "rknn_batch_size": 1,
        "do_quantization": True,
        "dataset": "calibration.txt",
    }
    path.write_text(json.dumps(settings), encoding="utf-8")
    read = read_settings(path)
    assert read.quantize is True and read.dataset == tmp_path / "calibration.txt"
    assert read.config == {
        k: v for k, v in settings.items() if k not in ("do_quantization", "dataset")
    }
    path = tmp_path / "settings.yaml"
    path.write_text("optimization_level: 2\nfloat_dtype: float16\n", encoding="utf-8")
    assert read_settings(path).config == {"optimization_level": 2, "float_dtype": "float16"}
    assert read_settings(path).quantize is None


@needs_toolkit
@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "mean_value: [[1, 2, 3]]\n",
            "'mean_value': no keyword argument of RKNN.config() or RKNN.build() in the "
            "installed rknn-toolkit2; did you mean 'mean_values' (RKNN.config)?",
        ),
        ("optimisation_level: 2\n", "did you mean 'optimization_level' (RKNN.config)?"),
        ("target_platform: rk3588\n", "'target_platform': set by the run, not here"),
        ("- mean_values\n", "a mapping of RKNN.config() and RKNN.build() keyword arguments"),
        ("custom_string: 2024-01-01\n", "custom_string: datetime.date(2024, 1, 1) is no JSON"),
        ("do_quantization: 'yes'\n", "do_quantization: 'yes' is not true or false"),
        ("mean_values: [1, 2\n", "not YAML or JSON"),
    ],
)
def test_a_setting_that_cannot_be_used_names_the_file_key_and_value(
    tmp_path: Path, text: str, words: str
) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError) as refused:
        read_settings(path)
    assert str(refused.value).startswith(str(path)), refused.value
    assert words in str(refused.value)


def test_the_toolkit_is_fed_what_its_normalisation_turns_back_into_the_models_inputs() -> None:
    x = np.arange(2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2)
    config = {"mean_values": [[10, 20, 30]], "std_values": [[2, 4, 8]]}
    [fed] = toolkit_feeds(config, [x])
    mean = np.array([10, 20, 30]).reshape(1, 3, 1, 1)
    std = np.array([2, 4, 8]).reshape(1, 3, 1, 1)
    np.testing.assert_allclose((fed - mean) / std, x)
    assert fed.dtype == np.float32
    assert toolkit_feeds({"optimization_level": 2}, [x])[0] is x
    # lists that do not fit the input: fed as it is, for the toolkit to refuse
    assert toolkit_feeds({"mean_values": [[1, 2]]}, [x])[0] is x


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"optimization_level": 2},
        {"mean_values": [[10, 20, 30]], "std_values": [[2, 4, 8]]},
        {"mean_values": [[127.5]]},
        {"std_values": [[58.4, 57.1, 57.4]]},
        {"mean_values": [[1, 2]]},
        {"mean_values": [[1, 2, 3], [4]]},
    ],
)
def test_reproduce_py_feeds_the_toolkit_as_the_run_did(config: dict[str, object]) -> None:
    arrays = [
        np.linspace(-1, 1, 2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2),
        np.ones([1, 5], np.float32),
    ]
    ours = toolkit_feeds(config, arrays)
    theirs = normalised_feeds(config, arrays)  # the bundle's copy, which imports no npu-hil
    assert len(ours) == len(theirs) == 2
    for mine, bundled in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine, bundled)
        assert mine.dtype == bundled.dtype


@needs_toolkit
def test_each_setting_goes_to_the_call_that_takes_it_and_into_toolkit_json() -> None:
    x = np.zeros([1, 3, 2, 2], np.float32)
    config = {"optimization_level": 2, "auto_hybrid": True, "quantized_dtype": "w8a16"}
    job = Job(model=b"", inputs=[x], target_platform="rk3588", config=config)
    calls = toolkit_calls(job)
    assert calls["config"] == {
        "target_platform": "rk3588",
        "optimization_level": 2,
        "quantized_dtype": "w8a16",
    }
    assert calls["build"] == {"do_quantization": False, "dataset": None, "auto_hybrid": True}
    toolkit = json.loads(recipe(job)["toolkit.json"])
    assert toolkit["config"] == {"optimization_level": 2, "quantized_dtype": "w8a16"}
    assert toolkit["build"] == {"auto_hybrid": True}
    plain = json.loads(recipe(Job(model=b"", inputs=[x], target_platform="rk3588"))["toolkit.json"])
    assert "build" not in plain and plain["config"] == {}
