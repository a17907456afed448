"""What every target receives for one case: the vendor-neutral job."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from harness.diskcache import arrays_digest
from harness.targets.timing import JobTiming


@dataclass
class Job:
    """One case for a target: an ONNX model, its inputs and the build settings."""

    model: bytes  # serialized ONNX
    inputs: list[np.ndarray]  # in the model's input order, NCHW float32 as fed to onnxruntime
    target_platform: str  # e.g. "rk3562"
    quantize: bool = False  # int8 build; needs a calibration dataset
    # samples, each one array per model input; ``DrawnCalibration`` draws its own when read
    dataset: Sequence[Sequence[np.ndarray]] | None = None
    config: dict[str, Any] = field(default_factory=dict)  # extra vendor build settings
    case_id: str = ""
    timeout_s: float | None = None  # this job's own time limit; None: the target's
    perf: JobTiming | None = None  # time inference too (``--perf``); None: outputs only
    # ``diskcache.arrays_digest`` of ``inputs`` where the maker has it (``job_for``: the
    # model's own); else ``digest_of_inputs`` computes it when a cache key first asks
    inputs_digest: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if "target_platform" in self.config:
            raise ValueError("give target_platform as its own field, not inside config")
        try:
            json.dumps(self.config, sort_keys=True)
        except TypeError as exc:
            raise ValueError(f"config must be JSON-serializable: {exc}") from exc
        if self.quantize and not self.dataset:
            raise ValueError("quantize=True needs a calibration dataset")
        if isinstance(self.dataset, DrawnCalibration):
            return  # drawn as the inputs are: one array per input, and not drawn yet
        for sample in self.dataset or []:
            if len(sample) != len(self.inputs):
                raise ValueError(
                    f"each dataset sample needs one array per input ({len(self.inputs)}), "
                    f"got {len(sample)}"
                )


class DrawnCalibration(Sequence[Sequence[np.ndarray]]):
    """int8 calibration samples: the case's own inputs, then one sample per seed, drawn as the
    inputs were (``draw(seed)``) when a sample past the first is first read.

    A cache key covers them by ``recipe`` (how they are drawn: with the inputs' bytes, which
    the key covers, that fixes them) instead of their bytes, so a run whose results are all
    cached never draws them: a Transpose case at a p bound calibrates on 4 x 8.4M values.
    Pickled (to a simulator worker, say) they are a plain list of the drawn samples.
    """

    def __init__(
        self,
        inputs: Sequence[np.ndarray],
        draw: Callable[[int], Sequence[np.ndarray]],
        seeds: Sequence[int],
        recipe: Mapping[str, Any],
    ) -> None:
        self._inputs = inputs
        self._draw = draw
        self._seeds = tuple(seeds)
        self.recipe: dict[str, Any] = {**recipe, "seeds": list(self._seeds)}
        self._drawn: list[Sequence[np.ndarray]] | None = None

    @property
    def drawn(self) -> bool:
        return self._drawn is not None

    def samples(self) -> list[Sequence[np.ndarray]]:
        if self._drawn is None:
            self._drawn = [self._inputs, *(self._draw(seed) for seed in self._seeds)]
        return self._drawn

    def __len__(self) -> int:
        return 1 + len(self._seeds)

    @overload
    def __getitem__(self, index: int) -> Sequence[np.ndarray]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Sequence[np.ndarray]]: ...
    def __getitem__(
        self, index: int | slice
    ) -> Sequence[np.ndarray] | Sequence[Sequence[np.ndarray]]:
        if isinstance(index, int) and index in (0, -len(self)):
            return self._inputs
        return self.samples()[index]

    def __reduce__(self) -> tuple[type[list[Any]], tuple[list[Sequence[np.ndarray]]]]:
        return list, (self.samples(),)


def digest_of_inputs(job: Job) -> str:
    """``diskcache.arrays_digest`` of ``job.inputs``, hashed at most once a job."""
    if job.inputs_digest is None:
        job.inputs_digest = arrays_digest(job.inputs)
    return job.inputs_digest


def calibration_key(job: Job) -> tuple[dict[str, Any] | None, list[Sequence[np.ndarray]]]:
    """What a cache key covers of ``job``'s calibration samples: the recipe of drawn samples
    and their first (the inputs), else every sample's arrays; nothing unless quantized."""
    if not (job.quantize and job.dataset):
        return None, []
    if isinstance(job.dataset, DrawnCalibration):
        return job.dataset.recipe, [job.dataset[0]]
    return None, list(job.dataset)
