"""``hil run --perf``: a model's timing and its slowest layers as printed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.results.layer_times import slowest_layers, timing_line


def format_timing(perf: Mapping[str, Any], count: int = 10) -> str:
    """The timing line, then the slowest layers (name, op, NPU/CPU, time) when there are any."""
    lines = [f"timing: {timing_line(perf)}"]
    layers = slowest_layers(perf, count)
    if layers:
        lines.append(f"  slowest layers (of {len(perf['layers'])}):")
        lines.append(f"  {'layer':32} {'op':16} {'target':6} {'time':>10}")
        for layer in layers:
            lines.append(
                f"  {str(layer.get('name', ''))[:32]:32} {str(layer.get('op', ''))[:16]:16} "
                f"{layer.get('target', '')!s:6} {float(layer['time_us']):>7.0f} us"
            )
    elif "layers_unavailable" in perf:
        lines.append(f"  no per-layer times: {perf['layers_unavailable']}")
    return "\n".join(lines) + "\n"
