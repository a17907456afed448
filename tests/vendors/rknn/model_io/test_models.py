"""Model-I/O models: references equal an independent numpy convolution, the zero-copy buffer
round trip exposes a layout bug, parameters are checked; and a few cases on the real simulator.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from tests.helpers.declared import OPERATORS

from harness.models import BuiltModel, ModelParamError
from harness.models.reference import ORT, SPEC, host_references
from harness.pipeline import CaseExecutor, Stages
from harness.vendors.rknn.model_io import checks as io_checks
from harness.vendors.rknn.model_io import models as io_models
from harness.vendors.rknn.model_io.cases import platform_cases
from harness.vendors.rknn.model_io.layout import unpack_input
from harness.vendors.rknn.model_io.models import build_io_model

# -- numpy transcriptions of ONNX Conv / ConvTranspose (from the spec, not from the code) ------


def assert_references_equal(built: BuiltModel, want: np.ndarray) -> None:
    """Both host references compute ``want``, the model's one output."""
    references = host_references(built)
    assert set(references.outputs) == {SPEC, ORT}
    for (got,) in references.outputs.values():
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def weights(built: BuiltModel) -> np.ndarray:
    model = onnx.load_from_string(built.onnx_bytes)
    (w,) = [numpy_helper.to_array(t) for t in model.graph.initializer if t.name == "w"]
    return w.astype(np.float64)


def conv_numpy(x: np.ndarray, w: np.ndarray, dilation: int, group: int) -> np.ndarray:
    """2-D convolution, stride 1, 'same' zero padding for an odd dilated kernel."""
    n, _, h, width = x.shape
    out_c, per_group, k, _ = w.shape
    reach = dilation * (k - 1)
    pad = reach // 2
    xp = np.pad(x, [(0, 0), (0, 0), (pad, reach - pad), (pad, reach - pad)])
    y = np.zeros((n, out_c, h, width))
    for o in range(out_c):
        g = o // (out_c // group)
        for i in range(per_group):
            for a in range(k):
                for b in range(k):
                    patch = xp[:, g * per_group + i, a * dilation : a * dilation + h]
                    y[:, o] += w[o, i, a, b] * patch[:, :, b * dilation : b * dilation + width]
    return y


def conv_transpose_numpy(x: np.ndarray, w: np.ndarray, dilation: int) -> np.ndarray:
    """ConvTranspose, stride 1, no padding: every input pixel scatters its kernel."""
    n, c, h, width = x.shape
    _, out_c, k, _ = w.shape
    reach = dilation * (k - 1)
    y = np.zeros((n, out_c, h + reach, width + reach))
    for i in range(c):
        for o in range(out_c):
            for a in range(k):
                for b in range(k):
                    y[
                        :, o, a * dilation : a * dilation + h, b * dilation : b * dilation + width
                    ] += w[i, o, a, b] * x[:, i]
    return y


@pytest.mark.parametrize(
    ("conv_type", "out_channels", "group"),
    [("Convolution", 4, 1), ("DepthwiseConvolution", 3, 3), ("ConvTranspose", 2, 1)],
)
@pytest.mark.parametrize("dilation", [1, 3])
def test_first_conv_reference_matches_numpy(
    conv_type: str, out_channels: int, group: int, dilation: int
) -> None:
    params = {
        "shape": [1, 3, 7, 9],
        "conv_type": conv_type,
        "dilation": [dilation, dilation],
        "out_channels": out_channels,
        "w_stride": 16,
    }
    built = build_io_model("FirstConv", params, seed=3)
    x = built.inputs[0].astype(np.float64)
    if conv_type == "ConvTranspose":
        want = conv_transpose_numpy(x, weights(built), dilation)
    else:
        want = conv_numpy(x, weights(built), dilation, group)
    assert_references_equal(built, want)


def test_one_dimensional_first_conv_is_a_conv_over_the_width() -> None:
    built = build_io_model(
        "FirstConv", {"shape": [1, 3, 17], "kernel": [3], "dilation": [1], "w_stride": 17}, 4
    )
    x = built.inputs[0].astype(np.float64)[:, :, None, :]
    w = weights(built)[:, :, None, :]  # a 1x3 kernel in 2-D
    xp = np.pad(x, [(0, 0), (0, 0), (0, 0), (1, 1)])
    want = sum(np.einsum("oc,nchw->nohw", w[:, :, 0, b], xp[:, :, :, b : b + 17]) for b in range(3))
    assert_references_equal(built, want[:, :, 0])


@pytest.mark.parametrize("last", ["Conv", "Add", "Reshape"])
def test_conv_output_last_layers(last: str) -> None:
    built = build_io_model("ConvOutput", {"out_channels": 5, "last_layer": last}, seed=6)
    conv = np.einsum("oc,nchw->nohw", weights(built)[:, :, 0, 0], built.inputs[0])
    want = {"Conv": conv, "Add": 2 * conv, "Reshape": conv.reshape(1, 5, 21)}[last]
    assert_references_equal(built, want)


# -- the zero-copy buffer --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("input_type", "low", "high"),
    [("uint8", 0, 255), ("int8", -128, 127), ("float16", -1, 1), ("float32", -1, 1)],
)
def test_fed_data_is_the_drawn_data_in_the_configured_type(
    input_type: str, low: float, high: float
) -> None:
    built = build_io_model(
        "FirstConv", {"shape": [1, 3, 3, 33], "input_type": input_type, "w_stride": 48}, 8
    )
    assert built.feeds is not None
    (fed,), (drawn,) = built.feeds, built.inputs
    assert fed.dtype == np.dtype(input_type) and drawn.dtype == np.float32
    assert low <= drawn.min() and drawn.max() <= high
    np.testing.assert_array_equal(fed.astype(np.float32), drawn)  # held exactly


def test_the_buffer_padding_holds_garbage(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[np.ndarray] = []

    def spy(buffer: np.ndarray, layout: str, width: int) -> np.ndarray:
        seen.append(buffer.copy())
        return unpack_input(buffer, layout, width)

    monkeypatch.setattr(io_models, "unpack_input", spy)
    data = np.arange(2 * 3 * 5, dtype=np.float32).reshape(1, 2, 3, 5)
    read = io_models.zero_copy_roundtrip(data, "float32", 8)
    (buffer,) = seen
    assert buffer.shape == (1, 3, 8, 2)  # NHWC, width padded to the stride
    assert (buffer[:, :, 5:, :] == io_models.PADDING_GARBAGE).all()
    np.testing.assert_array_equal(read, data)


def test_a_layout_bug_changes_what_is_fed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the wrong end of each row feeds garbage the reference never sees."""

    def misread(buffer: np.ndarray, layout: str, width: int) -> np.ndarray:
        return np.ascontiguousarray(buffer[:, :, -width:, :])

    monkeypatch.setattr(io_models, "unpack_input", misread)
    built = build_io_model("FirstConv", {"shape": [1, 3, 3, 33], "w_stride": 48}, 8)
    assert built.feeds is not None
    assert (built.feeds[0] == io_models.PADDING_GARBAGE).any()
    assert not np.array_equal(built.feeds[0], built.inputs[0])


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"conv_type": "DepthwiseConvolution", "out_channels": 4}, "out_channels"),
        ({"shape": [1, 3, 3, 17], "w_stride": 16}, "w_stride"),
        ({"shape": [1, 3, 17], "kernel": [3], "dilation": [1], "w_stride": 24}, "w_stride"),
        ({"shape": [1, 3, 17, 1, 1]}, "shape"),
        ({"conv_type": "Deconvolution"}, "conv_type"),
        ({"input_type": "uint16"}, "input_type"),
        ({"kernel": [3]}, "kernel"),
    ],
)
def test_nonsense_first_conv_parameters_are_rejected(params: dict, name: str) -> None:
    with pytest.raises(ModelParamError) as raised:
        build_io_model("FirstConv", params, seed=0)
    assert raised.value.param == name


def test_io_models_are_buildable_but_not_table_operators() -> None:
    assert not {"FirstConv", "ConvOutput"} & set(OPERATORS)
    assert build_io_model("ConvOutput", {}, seed=0).op == "ConvOutput"


# -- real cases on the rknn-toolkit2 simulator ---------------------------------------------


@pytest.fixture(scope="module")
def executor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CaseExecutor]:
    pytest.importorskip("rknn.api", reason="rknn-toolkit2 (the simulator) is not installed")
    from harness.vendors.rknn.toolkit.simulator import SimulatorPool

    with SimulatorPool(workers=1, timeout_s=300) as pool:
        yield CaseExecutor(
            Path(tmp_path_factory.mktemp("io-results")),
            pool,
            Stages(models=io_models.MODELS, judge=io_checks.JUDGE),
        )


def checks_of(executor: CaseExecutor, case_id: str) -> dict[str, dict]:
    platform = case_id.split("/", 1)[0]
    record = executor.execute(platform_cases(platform)[case_id])
    assert record.verdict != "infra-error", record.detail
    return {check["prop"]: check for check in record.checks}


def test_simulated_input_stride_follows_the_documented_alignment(executor: CaseExecutor) -> None:
    checks = checks_of(executor, "rk3566/input/int8/uint8/4d/c3/w33")
    assert checks["input buffer stride"]["status"] == "confirmed"
    assert "stride 40" in checks["input buffer stride"]["observed"]  # 33 aligned to 8
    assert checks["result"]["status"] == "confirmed"
    assert checks["w_stride attribute"]["status"] == "unobserved"
    assert checks["mean/scale/quant backend"]["status"] == "unobserved"


def test_simulated_rv1103b_aligns_input_rows_to_16_not_8(executor: CaseExecutor) -> None:
    """Measured with rknn-toolkit2 2.5.0: the documented 8 would give a stride of 40."""
    checks = checks_of(executor, "rv1103b/input/int8/uint8/4d/c3/w33")
    assert checks["input buffer stride"]["status"] == "doc-drift"
    assert "stride 48" in checks["input buffer stride"]["observed"]


def test_simulated_conv_output_c2_is_not_the_conv_alignment(executor: CaseExecutor) -> None:
    """Measured: an int8 conv output on RK3588 has C2 = 16 in pairs of planes (32 channels)."""
    checks = checks_of(executor, "rk3588/output/int8/4d/Conv/c3-3x7")
    assert checks["NC1HWC2 buffer size"]["status"] == "confirmed"
    assert checks["NC1HWC2 C2"]["status"] == "doc-drift"
    assert "native C2 16, 2 plane(s)" in checks["NC1HWC2 C2"]["observed"]
