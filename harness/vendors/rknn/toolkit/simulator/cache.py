"""A disk cache of simulator Observations, shareable by parallel pytest-xdist processes.

The key covers everything that decides a simulator result: the model bytes, the inputs and
calibration arrays (bytes, shapes, dtypes; samples the harness draws, by how it draws them),
the exact toolkit calls (target, config, quantization) and the toolkit version. An entry is
a folder ``<key>/`` holding one packed file (``diskcache.pack``): the observation's fields as
JSON, then its outputs; it is written under a temporary name and renamed into place, so a
reader sees a whole entry or none; an entry damaged later is a miss and is removed. Only
simulator results are accepted, and never infrastructure errors: a crash or a hang says
nothing about the model.

An entry keeps its outputs' digest (``diskcache.arrays_digest``), by which a comparison of
them is keyed without hashing them again (an entry from before has none: its outputs are
hashed), and what the build log says (placement, rewrites, tensor forms) beside the log, with
the version of the parser that read it (``buildlog.PARSER_VERSION``): a hit read by another
parser is parsed afresh, so entries follow the parser without a hit paying for parsing every
time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from harness.diskcache import CacheFolder, DiskCache, arrays_digest, content_key
from harness.targets.job import Job, calibration_key, digest_of_inputs
from harness.targets.observation import Observation
from harness.vendors.rknn.toolkit.buildlog import PARSER_VERSION, parse_build_log
from harness.vendors.rknn.toolkit.calls import key_versions, toolkit_calls

CACHE = CacheFolder("sim", "sim", "HIL_CACHE", "HIL_CACHE_MAX", "simulator results")
FORMAT = 4  # bump when the key, the entry layout or the worker's behaviour changes
_PARSER = "parser"  # the key of the parser version in an entry's fields
# Not stored: what the simulator observes is the pool's to say.
_FIELDS = [f.name for f in fields(Observation) if f.name != "observes"]


class SimCache(DiskCache):
    """get/put Observations for Jobs under ``directory``, kept under ``cap`` bytes (default
    ``HIL_CACHE_MAX``, else 2 GiB)."""

    def __init__(
        self,
        directory: Path,
        environment: Mapping[str, str | None] | None = None,
        cap: int | None = None,
    ) -> None:
        """``environment``: the ``KEY_PACKAGES`` versions the workers run with, the toolkit's
        among them (default: this interpreter's). A folder that is not a cache's raises
        CacheFolderError (``diskcache.claim``)."""
        super().__init__(directory, CACHE, cap)
        self._environment = dict(environment if environment is not None else key_versions())

    def key(self, job: Job) -> str:
        """sha256 over every input of the simulator run (hex): the model, inputs, toolkit calls
        and the worker's package versions; drawn calibration samples by their recipe
        (``job.calibration_key``). Arrays are named by their digests: the inputs' is the host
        references' (``digest_of_inputs``), and a first calibration sample that is the inputs
        is not hashed again."""
        calibration, samples = calibration_key(job)
        header = {"format": FORMAT, "environment": self._environment, "calls": toolkit_calls(job)}
        header["calibration"] = calibration
        inputs = digest_of_inputs(job)
        header["arrays"] = [
            inputs if sample is job.inputs else arrays_digest(sample)
            for sample in [job.inputs, *samples]
        ]
        return content_key(header, job.model, [])

    def observation(self, key: str) -> Observation | None:
        """The observation stored under ``key`` (a job's ``key``), or None on a miss. A
        damaged entry (unreadable, not JSON, wrong fields or types, a bad array) is a miss and
        is removed, so the next run stores a good one instead of failing the case every
        time."""
        return self.get_packed(key, _read)

    def store(self, key: str, observation: Observation) -> Observation:
        """Store a simulator observation under ``key`` (its job's ``key``); one with
        ``infra_error`` is silently skipped. The observation as stored: with its outputs'
        digest (``arrays_digest``), which a hit gives back with them."""
        if observation.backend != "simulator":
            raise ValueError(f"SimCache only holds simulator results, not {observation.backend!r}")
        if observation.infra_error is not None:
            return observation
        outputs = observation.outputs
        if outputs is not None:
            observation = replace(observation, outputs_digest=arrays_digest(outputs))
        data = {name: getattr(observation, name) for name in _FIELDS}
        data["outputs"] = None if outputs is None else len(outputs)
        data[_PARSER] = PARSER_VERSION
        self.put_packed(key, data, outputs or [])
        return observation


def with_parsed_log(observation: Observation) -> Observation:
    """``observation`` with what its build log shows: placement, rewrites, tensor forms."""
    parsed = parse_build_log(observation.log)
    return replace(
        observation, placement=parsed.layers, rewrites=parsed.rewrites, tensors=parsed.tensors
    )


def _read(data: dict[str, Any], arrays: list[np.ndarray]) -> Observation:
    count = data.pop("outputs")  # None: the case gave no outputs
    if len(arrays) != (count or 0):
        raise ValueError(f"{len(arrays)} arrays stored for {count} outputs")
    data["outputs"] = None if count is None else arrays
    parser = data.pop(_PARSER)
    observation = Observation(**data)
    return observation if parser == PARSER_VERSION else with_parsed_log(observation)
