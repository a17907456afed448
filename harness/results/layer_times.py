"""A record's timing in words: the numbers as text and the slowest layers of its table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def ms(seconds: float) -> str:
    """Seconds as milliseconds with three decimals, e.g. "4.213 ms"."""
    return f"{seconds * 1e3:.3f} ms"


def timing_line(perf: Mapping[str, Any]) -> str:
    """One line: the median and spread, the runs and clock, the clocks that changed; or why
    there is no timing."""
    if "median_s" not in perf:
        return f"no timing: {perf.get('unavailable', 'not timed')}"
    line = (
        f"median {ms(perf['median_s'])} (min {ms(perf['min_s'])}, p90 {ms(perf['p90_s'])}, "
        f"MAD {ms(perf['mad_s'])}) over {perf['runs']} runs after {perf['warmup']} warm-up, "
        f"clock {perf['clock']}"
    )
    if perf.get("capped"):
        line += ", stopped at the time cap"
    if perf.get("clocks_changed"):
        line += f"; CLOCKS CHANGED during the runs: {', '.join(perf['clocks_changed'])}"
    return line


def slowest_layers(perf: Mapping[str, Any], count: int = 10) -> list[dict[str, Any]]:
    """The ``count`` layers of the per-layer table that took longest, slowest first."""
    layers = [layer for layer in perf.get("layers", []) if "time_us" in layer]
    return sorted(layers, key=lambda layer: -float(layer["time_us"]))[:count]
