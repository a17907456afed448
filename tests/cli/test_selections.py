"""``--op`` (an ONNX operator type) and ``--entry`` (a document's entry) select the same
operators in ``pytest``, ``hil probe`` and ``hil docs show``, on the real catalogue: ``--op
Conv`` is Convolution and Depthwise Convolution, never ConvTranspose, a fused entry or a
model-I/O row, which ``-k Conv`` (pytest's substring match) still takes."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from tests.helpers import paths

from harness.cli import main
from harness.documented.selection import OperatorSelection, SelectionError
from harness.vendors import vendor_named

PLATFORM = "rk3588"
CONV = {"Convolution", "DepthwiseConvolution"}


def _collected_ops(*options: str) -> tuple[int, set[str], str]:
    """(exit status, the operators of the cases ``pytest suites --collect-only`` keeps, its
    output)."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "suites",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "--platform",
            PLATFORM,
            *options,
        ],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(paths.ROOT)},
    )
    ids = re.findall(r"\[([^\]]+)\]$", run.stdout, re.M)
    return run.returncode, {case.split("/")[1] for case in ids}, run.stdout + run.stderr


def _probe_ops(capsys: pytest.CaptureFixture[str], *options: str) -> set[str]:
    assert main(["probe", "--platform", PLATFORM, "--list", *options]) == 0
    out = capsys.readouterr().out
    return {line.split("\t")[0].split("/")[1] for line in out.splitlines()}


def _docs_entries(capsys: pytest.CaptureFixture[str], *options: str) -> set[str]:
    assert main(["docs", "show", "--platform", PLATFORM, *options]) == 0
    out = capsys.readouterr().out
    return set(re.findall(r"^(\S[^:]*): RKNN .* § 3\.", out, re.M))  # the platform's section


def test_op_and_entry_select_the_same_operators_in_pytest_probe_and_docs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, by_op, output = _collected_ops("--op", "Conv")
    assert status == 0, output
    assert by_op == CONV
    assert _probe_ops(capsys, "--op", "Conv") == CONV
    assert _docs_entries(capsys, "--op", "Conv") == {"Convolution", "Depthwise Convolution"}

    status, by_entry, output = _collected_ops("--entry", "Depthwise Convolution")
    assert (status, by_entry) == (0, {"DepthwiseConvolution"}), output
    assert _probe_ops(capsys, "--entry", "Depthwise Convolution") == {"DepthwiseConvolution"}
    assert _docs_entries(capsys, "--entry", "Depthwise Convolution") == {"Depthwise Convolution"}

    # -k stays pytest's: every id with "Conv" in it, transposed, fused and model-I/O alike
    status, by_k, output = _collected_ops("-k", "Conv")
    assert status == 0, output
    assert {"ConvTranspose", "ConvolutionRelu", "conv"} <= by_k and by_k > CONV


def test_a_name_that_is_no_onnx_type_or_no_entry_is_refused_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, output = _collected_ops("--op", "Convolution")
    assert status == 4
    assert "--op 'Convolution': not an ONNX operator type" in output
    assert "--entry 'Convolution' selects it" in output
    with pytest.raises(SystemExit) as exit_:
        main(["probe", "--platform", PLATFORM, "--list", "--entry", "Convolutoin"])
    assert exit_.value.code == 2
    assert "did you mean Convolution?" in capsys.readouterr().err
    assert main(["docs", "show", "--op", "Foo"]) == 2
    assert "--op 'Foo': not an ONNX operator type; did you mean Floor?" in capsys.readouterr().err


def test_a_fused_entry_is_no_onnx_operator_and_one_alternative_is_its_own_entry() -> None:
    rknn = vendor_named("rknn")
    documents, names = rknn.documents(), rknn.operator_names

    def chosen(**given: tuple[str, ...]) -> frozenset[str]:
        return OperatorSelection(**given).on_platform(documents, PLATFORM, names)

    assert chosen(onnx_types=("Relu",)) == {"Relu"}  # not ConvolutionRelu, ConvTransposeRelu
    assert chosen(onnx_types=("LeakyRelu",)) == {"LeakyRelu"}  # nor ConvolutionLeakyRelu
    assert chosen(onnx_types=("Gelu",)) == {"exGelu"}  # the vendor's name for the node
    assert chosen(entries=("ConvolutionLeakyRelu",)) == {"ConvolutionLeakyRelu"}
    assert chosen(entries=("ConvolutionPRelu/LeakyRelu",)) == {
        "ConvolutionPRelu",
        "ConvolutionLeakyRelu",
    }
    assert chosen(onnx_types=("Conv",), entries=("Convolution",)) == {"Convolution"}
    with pytest.raises(SelectionError, match="--op 'exGelu': not an ONNX operator type"):
        chosen(onnx_types=("exGelu",))
