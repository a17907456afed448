"""The size budget every model shares: the suites' generated cases, the probe's steps and
users' own models (``hil run``, ``--models``).

Two measures: ``elements``, the float32 elements of weights and activations a model needs (an
8192-wide GRU's recurrent weights alone are 3*8192*8192 floats, 800 MB; a user model's drawn
inputs, reference tensors and outputs cost many times their size in memory), and ``bytes``,
the largest file the harness reads from a user (a model with its external data, a ``.npy``,
a node test's ``.pb``), checked before reading. Both are configurable: ``HIL_MAX_ELEMENTS``
and ``HIL_MAX_BYTES`` (a size: ``512M``, ``2G``, ``4096``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from harness.sizes import parse_size

ELEMENTS_ENV = "HIL_MAX_ELEMENTS"
BYTES_ENV = "HIL_MAX_BYTES"
DEFAULT_ELEMENTS = 1 << 24  # 64 MiB of float32
DEFAULT_BYTES = 1 << 30  # a model's weights at the element budget in float64, with room


@dataclass(frozen=True)
class SizeBudget:
    elements: int = DEFAULT_ELEMENTS
    bytes: int = DEFAULT_BYTES

    def over_elements(self, what: str, count: int) -> str | None:
        """Why ``what`` needing ``count`` elements is refused, or None when it fits."""
        if count <= self.elements:
            return None
        return f"{what} needs {count} elements, over the budget of {self.elements} ({ELEMENTS_ENV})"

    def over_bytes(self, what: str, size: int) -> str | None:
        """Why ``what`` of ``size`` bytes is refused, or None when it fits."""
        if size <= self.bytes:
            return None
        return f"{what} is {size} bytes, over the budget of {self.bytes} ({BYTES_ENV})"


def size_budget() -> SizeBudget:
    """The budget of this run, from ``HIL_MAX_ELEMENTS`` and ``HIL_MAX_BYTES`` (defaults
    2^24 elements, 1 GiB); a bad value raises ValueError naming the variable."""
    elements = _from_env(ELEMENTS_ENV, DEFAULT_ELEMENTS)
    size = _from_env(BYTES_ENV, DEFAULT_BYTES)
    return SizeBudget(elements, size)


def _from_env(variable: str, default: int) -> int:
    text = os.environ.get(variable)
    if not text:
        return default
    try:
        value = parse_size(text)
    except ValueError as exc:
        raise ValueError(f"{variable}: {exc}") from None
    if value < 1:
        raise ValueError(f"{variable}: {text!r} is not a positive size")
    return value
