"""``--shard I/N``: one of N parts of a run's selected cases, for CI jobs on several machines.

The split depends only on the selected case keys (case id, and SDK under ``--sdk``) and their
cost estimates (``costs.yaml``), never on collection order: every job of a CI matrix that
selects the same cases computes the same N parts. Cases are dealt out most expensive first
(then by key), each to the part with the least estimated time so far (then the lowest index),
so the parts take about as long as each other. ``selection_digest`` names the selection, so
``hil report`` can tell the shards of one run from directories of different runs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.results.schema import MAX_SHARDS

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"2/4"`` -> Shard(2, 4); ValueError names the text and what is wrong."""
    match = _SHARD.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r}: expected I/N, e.g. 2/4")
    index, count = int(match[1]), int(match[2])
    if not 1 <= count <= MAX_SHARDS or not 1 <= index <= count:
        raise ValueError(f"{text!r}: I must be from 1 to N, N from 1 to {MAX_SHARDS}")
    return Shard(index, count)


def split(keys: Sequence[str], cost: Callable[[str], float], count: int) -> list[list[str]]:
    """``keys`` dealt into ``count`` parts of about equal total ``cost``, each part sorted."""
    parts: list[list[str]] = [[] for _ in range(count)]
    totals = [0.0] * count
    for key in sorted(set(keys), key=lambda key: (-cost(key), key)):
        lightest = min(range(count), key=lambda part: (totals[part], part))
        parts[lightest].append(key)
        totals[lightest] += cost(key)
    return [sorted(part) for part in parts]


def selection_digest(keys: Sequence[str]) -> str:
    """A short name for a selection of case keys (sha256 of the sorted keys)."""
    return hashlib.sha256("\n".join(sorted(set(keys))).encode()).hexdigest()[:16]
