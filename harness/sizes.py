"""Sizes as people write them (``2G``, ``500M``, ``4096``): the caches' caps and the model
budget read them, so they sit on the ground floor beside ``text.py``."""

from __future__ import annotations

import math
import re

from harness.text import clipped

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def parse_size(text: str) -> int:
    """Bytes of ``2G``, ``500M``, ``1.5G``, ``4096`` (binary units); ValueError names the text."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if match is None:
        raise ValueError(f"not a size: {text!r} (e.g. 2G, 500M, 4096)")
    value = float(match[1]) * _UNITS[match[2].upper()]
    if not math.isfinite(value):  # hundreds of digits: no disk, no memory is that large
        raise ValueError(f"not a size: {clipped(text)!r} is too large")
    return int(value)
