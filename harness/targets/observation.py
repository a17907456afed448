"""What a target saw for one case: plain data, so that judging can be tested without a target."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Observation:
    """What one target run of one case produced."""

    backend: str  # "simulator" or the board's name
    outputs: list[np.ndarray] | None = None
    # One entry per layer of the compiled network: {"op": "Pow", "target": "CPU", "name": ...};
    # the vendor marks the layers that only feed or read the model with "io": True.
    placement: list[dict[str, Any]] = field(default_factory=list)
    rewrites: list[str] = field(default_factory=list)  # compiler rewrites (fuse_ops results)
    # Per tensor: {"name", "dtype", "format" (e.g. NC1HWC2), "orig_shape", "native_shape"}
    tensors: list[dict[str, Any]] = field(default_factory=list)
    failed_stage: str | None = None  # "build" or "runtime" when the toolkit/runtime rejected it
    error: str | None = None  # the toolkit's or runtime's message for failed_stage
    # How the toolkit's process died in failed_stage, a crash confirmed by a rerun in a fresh
    # process ("SIGSEGV", "exit code 1"); None when the stage ended by returning an error.
    aborted: str | None = None
    infra_error: str | None = None  # crash, hang, lost board: says nothing about the NPU
    versions: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    log: str = ""  # build/run log, kept for repro bundles
    # The board's kernel log since the case started, for a case lost on the board (timeout,
    # crash, lost runner): ``harness.boards.kernel_log``; empty otherwise.
    board_log: str = ""
    # Timed runs (Job.perf): {"clock", "warmup", "samples_s", "capped", "conditions_before",
    # "conditions_after", "layers", ...} (``harness.targets.timing.timing_record``), or
    # {"unavailable": why}; empty when no timing was asked for.
    perf: dict[str, Any] = field(default_factory=dict)
    # The properties the target that produced this observation can see (Target.observes); a
    # board run that fell back to the simulator carries the simulator's.
    observes: frozenset[str] = frozenset()
    # ``diskcache.arrays_digest`` of ``outputs`` where a cache that holds them computed it (a
    # comparison is keyed by it instead of hashing the outputs again); None: not computed.
    outputs_digest: str | None = None
