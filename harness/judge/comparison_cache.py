"""Comparisons kept on disk, so that a rerun of unchanged cases does not compare again.

``compare_references`` reads every element of the observed outputs and of each host reference
several times in float64; on a warm run, with simulator results and references read from
their caches, that was the largest cost left (about 9 s of a 46-s rk3562 main job). Its result
depends only on those arrays, the reference deciding, the tolerance and the inputs' span, so
an entry is keyed by all of them and by ``FORMAT`` and numpy's version. The arrays enter the
key by their digests (``diskcache.arrays_digest``), which the simulator and reference caches
keep with their entries: a warm run hashes no array again (about 0.6 ms a convolution case).
Entries follow ``harness.diskcache``'s rules (whole or absent, least recently used pruned to
the cap).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from harness.diskcache import CacheFolder, DiskCache, arrays_digest, content_key
from harness.judge.compare import Comparison, CrossCheck, compare_references

CACHE = CacheFolder(
    "comparisons",
    "cmp",
    "HIL_COMPARISON_CACHE",
    "HIL_COMPARISON_CACHE_MAX",
    "comparisons of outputs with host references",
)
FORMAT = 3  # bump when the key, the entry layout or what compare_references computes changes


class ComparisonCache(DiskCache):
    """``compare_references`` kept under ``directory``, capped at ``cap`` bytes (default
    ``HIL_COMPARISON_CACHE_MAX``, else 2 GiB)."""

    def __init__(self, directory: Path, cap: int | None = None) -> None:
        """A folder that is not a cache's raises CacheFolderError (``diskcache.claim``)."""
        super().__init__(directory, CACHE, cap)

    def compare_references(
        self,
        observed: Sequence[np.ndarray],
        references: Mapping[str, Sequence[np.ndarray]],
        used: str,
        tolerance: Mapping[str, float],
        input_span: float = 0.0,
        digests: Mapping[str, str] | None = None,
    ) -> Comparison:
        """``compare_references(...)``, from the cache when an entry is there, else computed
        and stored. The arrays are keyed by their ``arrays_digest``: those in ``digests``
        ("observed", reference names) as given, the others hashed here."""
        known = dict(digests or {})
        arrays = {"observed": observed, **references}
        hashed = {name: known.get(name) or arrays_digest(group) for name, group in arrays.items()}
        header = {
            "format": FORMAT,
            "numpy": np.__version__,
            "used": used,
            "arrays": hashed,
            "tolerance": dict(tolerance),
            "input_span": input_span,
        }
        key = content_key(header, b"", [])
        found = self.get_packed(key, lambda data, _: _comparison(data))
        if found is None:
            found = compare_references(observed, references, used, tolerance, input_span)
            self.put_packed(key, asdict(found), [])
        return found


def _comparison(data: dict[str, Any]) -> Comparison:
    others = {
        name: CrossCheck(
            _comparison(other["observed"]), _comparison(other["agreement"]), other["worst"]
        )
        for name, other in data.pop("others").items()
    }
    return Comparison(**data, others=others)
