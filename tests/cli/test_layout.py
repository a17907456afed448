"""``hil layout`` through the installed console script: seed examples as JSON, errors as exit 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import paths

HIL = shutil.which("hil", path=str(Path(sys.executable).parent))
# The console script runs this checkout's harness, whichever checkout is installed.
ENV = {**os.environ, "PYTHONPATH": str(paths.ROOT)}


def hil(*args: str) -> subprocess.CompletedProcess[str]:
    assert HIL, f"the hil console script is not installed next to {sys.executable}"
    return subprocess.run(
        [HIL, *args], capture_output=True, text=True, timeout=120, check=False, env=ENV
    )


def hil_json(*args: str) -> dict[str, Any]:
    done = hil(*args, "--json")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


HORIZON = ("layout", "horizon")
J6E = (*HORIZON, "--platform", "J6E")


@pytest.mark.parametrize(
    ("platform", "shape", "stride", "want"),
    [
        # Seed 000's worked examples.
        ("J6E", "1,220,220,1", "-1,-1,1,1", [49280, 224, 1, 1]),
        ("J6E", "1,110,110,2", "-1,-1,2,1", [24640, 224, 2, 1]),
        ("J6H", "1,220,220,1", "-1,-1,1,1", [56320, 256, 1, 1]),
        ("S6P", "1,110,110,2", "-1,-1,2,1", [28160, 256, 2, 1]),
        ("J6E", "1,4", "16,4", [16, 4]),
    ],
)
def test_horizon_seed_examples(platform: str, shape: str, stride: str, want: list[int]) -> None:
    result = hil_json(
        *HORIZON, "--platform", platform, "--valid-shape", shape, f"--stride={stride}"
    )
    assert result["stride"] == want
    assert result["valid_shape"] == [int(d) for d in shape.split(",")]
    assert result["buffer_size"] == want[0] * result["valid_shape"][0]
    assert result["alignment"] == (32 if platform == "J6E" else 64)


def test_horizon_table_output() -> None:
    args = ("--platform", "J6M", "--valid-shape", "1,220,220,1", "--stride=-1,-1,1,1")
    done = hil(*HORIZON, *args)
    assert done.returncode == 0, done.stderr
    rows = dict(line.split(None, 1) for line in done.stdout.splitlines())
    assert rows["stride"] == "[49280, 224, 1, 1]"
    assert rows["buffer_size"] == "49280"


def test_horizon_model_shape_fills_dynamic_dims() -> None:
    result = hil_json(
        *HORIZON,
        *("--platform", "J6E", "--valid-shape", "1,220,220,1", "--stride=-1,-1,1,1"),
        "--model-valid-shape=1,-1,-1,1",
    )
    assert result["stride"] == [49280, 224, 1, 1]


TCIM = ("layout", "tcim")


def test_tcim_seed_tensor_examples() -> None:
    assert hil_json(*TCIM, "--shape", "3,3", "--dtype", "int8")["stride"] == [3, 1]
    padded = hil_json(*TCIM, "--shape", "3,3", "--dtype", "int8", "--stride", "5,1")
    assert (padded["stride"], padded["mem_size"], padded["span_size"]) == ([5, 1], 15, 6)


def test_tcim_yuv420sp_image() -> None:
    result = hil_json(*TCIM, "--format", "YUV420SP", "--shape", "1,3,220,220")
    # Y rows 220 -> 256 bytes, UV rows 2*110 -> 256 bytes, 64-byte device alignment.
    assert result["stride"] == [56320, 256, 1, 28160, 256, 2, 1, 56320]
    assert (result["y_shape"], result["uv_shape"]) == ([1, 220, 220], [1, 110, 110, 2])
    assert result["mem_size"] == 1 * result["stride"][3] + result["stride"][7]
    assert result["mem_size"] == 220 * 220 * 3 // 2 + result["span_size"]


def test_tcim_contiguous_image_has_no_span() -> None:
    result = hil_json(*TCIM, "--format", "yuv444sp", "--shape", "2,3,4,4", "--contiguous")
    assert result["span_size"] == 0
    assert result["mem_size"] == 2 * 3 * 4 * 4


RKNN_INPUT = ("layout", "rknn-input", "--precision", "int8", "--input-type", "uint8")


@pytest.mark.parametrize(
    ("platform", "shape", "align"),
    [
        # Seed 003, int8 first layer, uint8 input: width aligned to 16 on RK3588 and 8 on
        # RK3566/RK3568 when C is 1, 3 or 4; to 1 for other channel counts.
        ("rk3588", (1, 3, 224, 223), 16),
        ("rk3588", (1, 3, 224, 209), 16),
        ("rk3568", (1, 3, 224, 209), 8),
        ("rk3568", (1, 5, 224, 209), 1),
    ],
)
def test_rknn_input_width_stride(platform: str, shape: tuple[int, ...], align: int) -> None:
    n, c, h, w = shape
    shape_arg = ",".join(map(str, shape))
    result = hil_json(*RKNN_INPUT, "--platform", platform, "--shape", shape_arg, "--layout", "nhwc")
    w_stride = -(-w // align) * align
    assert (result["width_align"], result["w_stride"]) == (align, w_stride)
    assert result["size_with_stride"] == n * h * w_stride * c  # uint8: one byte per element


RKNN_OUTPUT = ("layout", "rknn-output", "--platform", "rk3568", "--dtype", "int8")


@pytest.mark.parametrize(
    ("conv", "c2", "native"),
    # Seed 003, RK3566/RK3568 int8 NC1HWC2: C2 = 16 after a convolution, 8 otherwise.
    [((), 8, [1, 2, 3, 5, 8]), (("--last-layer-conv",), 16, [1, 1, 3, 5, 16])],
)
def test_rknn_output_nc1hwc2(conv: tuple[str, ...], c2: int, native: list[int]) -> None:
    result = hil_json(*RKNN_OUTPUT, "--shape", "1,13,3,5", "--layout", "nc1hwc2", *conv)
    assert (result["c2"], result["native_shape"]) == (c2, native)
    # H*W = 15 is "aligned to 4": 16 pixels per C1 plane, C1 * 16 * C2 one-byte elements.
    assert result["size_with_stride"] == native[1] * 16 * c2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # stride[0] = 8 < stride[1] * validShape[1] = 4 * 4
        ((*J6E, "--valid-shape=1,4", "--stride=8,4"), "stride[0] = 8"),
        ((*HORIZON, "--platform=J7", "--valid-shape=1,4", "--stride=16,4"), "'J7'"),
        ((*J6E, "--valid-shape=1,4", "--stride=16"), "1 entries"),
        (
            (*J6E, "--valid-shape=1,2x0,4", "--stride=-1,-1,1"),
            "--valid-shape: expected comma-separated integers",
        ),
        (
            (
                *J6E,
                "--valid-shape=1,224,220,1",
                "--stride=-1,-1,1,1",
                "--model-valid-shape=1,220,-1,1",
            ),
            "the model fixes 220",
        ),
        ((*TCIM, "--format", "YUV420SP", "--shape", "1,3,221,220"), "H = 221"),
        ((*TCIM, "--shape", "3,3", "--dtype", "int9"), "numeric dtype"),
        ((*TCIM, "--shape", "3,3", "--stride", "2,1"), "stride[0] = 2"),
        ((*TCIM, "--format", "YUV420SP", "--shape", "1,3,4,4", "--stride", "2,1"), "--stride"),
        ((*RKNN_OUTPUT, "--shape", "1,13,4,4", "--layout", "nc2hw"), "layout 'NC2HW'"),
        (
            (*RKNN_INPUT, "--platform", "rk9999", "--shape", "1,3,4,4", "--layout", "nhwc"),
            "unknown platform 'rk9999'",
        ),
        (("layout",), "required"),
        *(
            (
                (
                    *("layout", "rknn-input", "--platform", "rk3588", "--precision", "int8"),
                    *("--input-type", input_type, "--shape", "1,3,4,4", "--layout", "nhwc"),
                ),
                f"numeric numpy dtype name such as 'uint8', got '{input_type}'",
            )
            # Not numbers: each once gave a buffer of size 0 or of 8-byte pointers.
            for input_type in ("str", "void", "object", "complex64")
        ),
    ],
)
def test_bad_input_exits_2_with_a_message(args: tuple[str, ...], message: str) -> None:
    done = hil(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
