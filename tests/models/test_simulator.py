"""The new operator families' typical models through the real rknn-toolkit2 simulator: each
compiles to the layer its declaration names (a fused convolution to one fused layer), runs on
the NPU and matches its host reference."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from tests.helpers.declared import MODELS

from harness.judge.observers import layers_under_test
from harness.models.reference import host_references
from harness.targets.job import Job
from harness.vendors.rknn.toolkit import sdk
from harness.vendors.rknn.toolkit.simulator import SimulatorPool

pytest.importorskip("rknn.api", reason="rknn-toolkit2 (the simulator) is not installed")


@pytest.fixture(scope="module")
def pool() -> Iterator[SimulatorPool]:
    with SimulatorPool(workers=1, timeout_s=120) as shared:
        yield shared


@pytest.mark.parametrize(
    ("op", "target", "layer"),
    [
        ("Transpose", "rk3588", "Transpose"),  # data movement
        ("Transpose", "rk3562", "Transpose"),
        ("ConvolutionRelu", "rk3588", "ConvRelu"),  # a fused convolution: one layer
        ("ConvolutionRelu", "rk3562", "ConvRelu"),
        ("Clip", "rk3588", "Clip"),  # a unary activation under its ONNX name
        ("AddRelu", "rk3588", "AddRelu"),  # element-wise, fused
        ("Softmax", "rk3588", "exSoftmax13"),  # the toolkit's own layer for an ONNX Softmax
        ("Resize", "rk3588", "Resize"),
        # The toolkit's fused patterns, each one layer of the entry's name (also seen so on
        # rk3576); Where runs as itself.
        *[
            (op, target, op)
            for op in ("exGelu", "exGlu", "exNorm", "exMatMul", "exWindow", "Where")
            for target in ("rk3588", "rk3562")
        ],
        ("exSoftmax13", "rk3562", "exSoftmax13"),
        ("Greater", "rk3576", "Greater"),  # documented on RK3576 only; its bool cast to float
    ],
)
def test_typical_model_compiles_to_its_declared_layer_and_matches(
    pool: SimulatorPool, op: str, target: str, layer: str
) -> None:
    _compiles_to_one_layer_and_matches(pool, op, target, layer)


def test_attention_compiles_to_one_sdpa_layer_under_toolkit_2_3_2(second_sdk: sdk.Sdk) -> None:
    """2.5.0's rule for it fails the build under numpy 2; 2.3.2 (numpy 1.26) fuses it."""
    with SimulatorPool(workers=1, timeout_s=120, python=second_sdk.python) as older:
        for target in ("rk3588", "rk3562"):
            _compiles_to_one_layer_and_matches(older, "exSDPAttention", target, "exSDPAttention")


def _compiles_to_one_layer_and_matches(
    pool: SimulatorPool, op: str, target: str, layer: str
) -> None:
    built = MODELS.build(op, {}, seed=1)
    obs = pool.run(Job(built.onnx_bytes, built.inputs, target, case_id=f"{op}-{target}"))
    assert (obs.failed_stage, obs.error, obs.infra_error) == (None, None, None)
    judged, scope = layers_under_test(obs.placement, MODELS.layer_types(op))
    assert [(e["op"], e["target"]) for e in judged] == [(layer, "NPU")], obs.placement
    assert scope != "whole network (op rewritten away)"
    want = host_references(built).outputs["onnxruntime"]
    for got, ref in zip(obs.outputs or [], want, strict=True):
        np.testing.assert_allclose(got, ref, atol=2e-3)  # fp16 accumulation of a 3x3x4 conv
