"""What every target receives for one case: the vendor-neutral job."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.targets.timing import PerfRequest


@dataclass
class Job:
    """One case for a target: an ONNX model, its inputs and the build settings."""

    model: bytes  # serialized ONNX
    inputs: list[np.ndarray]  # in the model's input order, NCHW float32 as fed to onnxruntime
    target_platform: str  # e.g. "rk3562"
    quantize: bool = False  # int8 build; needs a calibration dataset
    dataset: list[list[np.ndarray]] | None = None  # samples, each one array per model input
    config: dict[str, Any] = field(default_factory=dict)  # extra vendor build settings
    case_id: str = ""
    timeout_s: float | None = None  # this job's own time limit; None: the target's
    perf: PerfRequest | None = None  # time inference too (``--perf``); None: outputs only

    def __post_init__(self) -> None:
        if "target_platform" in self.config:
            raise ValueError("give target_platform as its own field, not inside config")
        try:
            json.dumps(self.config, sort_keys=True)
        except TypeError as exc:
            raise ValueError(f"config must be JSON-serializable: {exc}") from exc
        if self.quantize and not self.dataset:
            raise ValueError("quantize=True needs a calibration dataset")
        for sample in self.dataset or []:
            if len(sample) != len(self.inputs):
                raise ValueError(
                    f"each dataset sample needs one array per input ({len(self.inputs)}), "
                    f"got {len(sample)}"
                )
