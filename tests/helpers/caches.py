"""Conversion jobs and comparison inputs for the cache tests."""

from __future__ import annotations

import numpy as np
from tests.fakes.sshd import onnx_model

from harness.judge.compare import tolerance_for
from harness.targets.job import Job

FLOAT16 = tolerance_for("float16")


def arrays() -> tuple[list[np.ndarray], dict[str, list[np.ndarray]]]:
    rng = np.random.default_rng(3)
    reference = rng.standard_normal((2, 3, 4)).astype(np.float32)
    observed = (reference + rng.uniform(-0.02, 0.02, reference.shape)).astype(np.float32)
    other = reference + np.float32(0.5) * (reference > 1.5)  # disagrees somewhere
    return [observed], {"onnx-reference": [reference], "onnxruntime": [other]}


def job(channels: int) -> Job:
    x = np.ones((1, channels, 4, 4), np.float32)
    return Job(onnx_model("Relu", (1, channels, 4, 4)), [x], "rk3562", case_id=f"c{channels}")
