"""The build-log parser on real rknn-toolkit2 2.5.0 logs (rk3562), saved by the simulator pool.

The logs in tests/data/buildlogs were captured through SimulatorPool (fds 1 and 2 of the
worker); only the compiler's ">>>>>> start / <<<<<<<< end" pass-trace lines were removed.
"""

from __future__ import annotations

import pytest
from tests.helpers import paths

from harness.vendors.rknn.toolkit.buildlog import BuildLog, parse_build_log

LOGS = paths.TESTS / "data" / "buildlogs"


def parsed(name: str) -> BuildLog:
    return parse_build_log((LOGS / f"{name}.log").read_text())


def layer(log: BuildLog, op: str) -> dict:
    (found,) = [entry for entry in log.layers if entry["op"] == op]
    return found


def tensor(log: BuildLog, name: str) -> dict:
    (found,) = [entry for entry in log.tensors if entry["name"] == name]
    return found


def test_pow_exponent_4_is_placed_on_the_cpu() -> None:
    log = parsed("rk3562_fp16_pow4")
    assert [(e["op"], e["target"]) for e in log.layers] == [
        ("InputOperator", "CPU"),
        ("Conv", "NPU"),  # the toolkit inserts an identity Conv after the input
        ("Pow", "CPU"),
        ("OutputOperator", "CPU"),
    ]
    # the toolkit's own layers: its input and output operators and that unnamed Conv
    assert [e["op"] for e in log.layers if e["io"]] == ["InputOperator", "Conv", "OutputOperator"]
    assert layer(log, "Pow") == {
        "id": 2,
        "op": "Pow",
        "name": "pow0",
        "full_name": "Pow:pow0",
        "target": "CPU",
        "dtype": "FLOAT16",
        "input_shapes": [[1, 3, 4, 4], [1]],
        "output_shapes": [[1, 3, 4, 4]],
        "truncated": False,
        "io": False,
    }
    assert layer(log, "Conv")["name"] == ""  # inserted layers have no FullName
    assert log.rewrites == []
    # The CPU op's input comes from the NPU in NC1HWC2, fp16 C2 = 8; its output is plain NCHW.
    assert tensor(log, "New_input_x") == {
        "id": 2,
        "user": "Pow",
        "name": "New_input_x",
        "dtype": "FLOAT16",
        "format": "NC1HWC2",
        "orig_shape": [1, 3, 4, 4],
        "native_shape": [1, 4, 4, 4, 8],
    }
    assert tensor(log, "y")["format"] == "NCHW"


def test_maxpool_8x8_is_tiled_into_two_npu_maxpools() -> None:
    log = parsed("rk3562_fp16_maxpool_8x8")
    assert log.rewrite_names == ["tiling_maxpool"]
    assert log.rewrites == ["tiling_maxpool: remove node = ['mp'], add node = ['x_mp', 'x_mp_mp']"]
    pools = [e for e in log.layers if e["op"] == "MaxPool"]
    assert [(p["name"], p["target"], p["output_shapes"]) for p in pools] == [
        ("x_mp", "NPU", [[1, 4, 10, 10]]),
        ("x_mp_mp", "NPU", [[1, 4, 9, 9]]),
    ]


def test_expand_to_8193_stays_on_the_npu_with_an_nc1hwc2_output() -> None:
    log = parsed("rk3562_fp16_expand_h8193")
    expand = layer(log, "Expand")
    assert (expand["target"], expand["output_shapes"]) == ("NPU", [[1, 1, 8193, 4]])
    out = tensor(log, "y")
    assert (out["format"], out["orig_shape"], out["native_shape"]) == (
        "NC1HWC2",
        [1, 1, 8193, 4],
        [1, 8, 8193, 4, 8],
    )
    assert tensor(log, "y_exSecondary1")["format"] == "NHWC"
    # The OutputOperator's input list is cut by the toolkit with "...": the parser says so.
    output = layer(log, "OutputOperator")
    assert output["truncated"] is True
    assert output["input_shapes"] == [[1, 1, 8193, 4], [1, 8193, 4, 8]]


def test_gru_batch_3_is_padded_to_4_and_sliced_back() -> None:
    log = parsed("rk3562_fp16_gru_batch3")
    assert log.rewrite_names == [
        "align_gru_batch",
        "unsqueeze_to_4d_pad",
        "convert_gru_to_exgru",
        "unsqueeze_to_4d_slice",
    ]
    assert log.rewrites[0] == (
        "align_gru_batch: remove node = ['gru'],"
        " add node = ['x_pad', 'gru#1', 'y-slice', 'yh-slice']"
    )
    pad = layer(log, "Pad")
    assert (pad["target"], pad["input_shapes"][0], pad["output_shapes"]) == (
        "NPU",
        [1, 5, 3, 8],
        [[1, 5, 4, 8]],
    )
    gru = layer(log, "exGRU")
    assert (gru["name"], gru["target"], gru["truncated"]) == ("gru#1", "NPU", True)
    assert [e["target"] for e in log.layers if e["op"] == "Slice"] == ["NPU", "NPU"]


def test_int8_build_reports_int8_layers_and_c2_16() -> None:
    log = parsed("rk3562_int8_conv_relu")
    assert {e["dtype"] for e in log.layers} == {"INT8"}
    conv = layer(log, "ConvRelu")  # Conv + Relu fused; FullName keeps the ONNX op and node
    assert (conv["name"], conv["full_name"], conv["target"]) == ("conv", "Conv:conv", "NPU")
    assert tensor(log, "y")["native_shape"] == [1, 1, 8, 8, 16]


def test_build_error_yields_the_toolkit_message_and_no_tables() -> None:
    log = parsed("rk3562_build_error_nonzero")
    assert (log.layers, log.tensors, log.rewrites) == ([], [], [])
    assert log.errors[0] == (
        "build: The input 0 of NonZero('nz') need to be constant! It will cause the graph to be"
        " a dynamic graph!\nRemove NonZero('nz') manually and try again!"
    )
    assert all("\x1b" not in error for error in log.errors)


def test_compiler_error_lines_lose_their_timestamp() -> None:
    assert parsed("rk3562_fp16_pow4").errors == ["RKNN: Unkown op target: 0"]


def test_a_row_wrapped_by_a_terminal_is_joined_again() -> None:
    text = (LOGS / "rk3562_fp16_pow4.log").read_text()
    row = next(line for line in text.splitlines() if "Pow:pow0" in line)
    cut = row.index("(1,3,4,4),(1)") + 5
    wrapped = text.replace(row, row[:cut] + "\n" + row[cut:])
    assert parse_build_log(wrapped).layers == parsed("rk3562_fp16_pow4").layers


def test_a_log_cut_inside_the_layer_table_gives_what_it_has() -> None:
    text = (LOGS / "rk3562_fp16_pow4.log").read_text()
    pow_cells = text.index("FLOAT16  CPU    (1,3,4,4),(1)")
    before_target = parse_build_log(text[:pow_cells] + "\x1b[1;3")  # and a dangling colour code
    assert [e["op"] for e in before_target.layers] == ["InputOperator", "Conv"]
    assert before_target.tensors == []
    after_target = parse_build_log(text[: pow_cells + len("FLOAT16  CPU    (1,3")])
    assert after_target.layers[-1]["target"] == "CPU"
    assert after_target.layers[-1]["output_shapes"] == []


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "\x00\xff binary \x1b[0m\r\r\n",
        "D RKNN: [00:00:00.000]                 Network Layer Information Table\n",
        "D RKNN: [00:00:00.000] Network Layer Information Table\nD RKNN: [00:00:00.000] ID\n"
        "D RKNN: [00:00:00.000] 7\nD RKNN: [00:00:00.000] x y z\n",
        "D     tiling_maxpool: remove node = ['mp'",
        "E \nE",
    ],
)
def test_garbled_logs_do_not_crash(garbage: str) -> None:
    log = parse_build_log(garbage)
    assert log.layers == [] and log.tensors == [] and log.rewrites == []


def test_garbage_around_real_tables_leaves_them_intact() -> None:
    text = (LOGS / "rk3562_fp16_maxpool_8x8.log").read_text()
    noisy = "\x1b[31m??\x1b[0m\n" + text.replace("\n", "\n\r", 3) + "\nD RKNN: [1:2:3] 9 junk\n"
    clean = parsed("rk3562_fp16_maxpool_8x8")
    log = parse_build_log(noisy)
    assert (log.layers, log.tensors, log.rewrites) == (clean.layers, clean.tensors, clean.rewrites)
