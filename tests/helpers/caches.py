"""Conversion jobs, comparison inputs and packed entries' bytes for the cache tests."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tests.fakes.sshd import onnx_model

from harness.diskcache import ENTRY_MARKER, PACKED, pack
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


def entry_body(path: Path) -> bytes:
    """What ``pack`` wrote into a packed entry's file, after its first line."""
    return path.read_bytes().split(b"\n", 1)[1]


def rewrite_entry(path: Path, body: bytes) -> None:
    """Put ``body`` into a packed entry's file with a first line whose checksum matches it:
    damage that the checksum cannot catch."""
    path.write_bytes(b"npu-hil cache entry, crc32 %08x\n" % zlib.crc32(body) + body)


def older_entry(entry: Path, data: object, arrays: Sequence[np.ndarray], marker: object) -> None:
    """A packed entry as an npu-hil from before single-file entries wrote it: a folder of
    ``PACKED`` and a marker holding ``marker`` (JSON; its checksums)."""
    entry.mkdir(parents=True)
    (entry / PACKED).write_bytes(b"".join(pack(data, arrays)))
    (entry / ENTRY_MARKER).write_text(json.dumps(marker))
