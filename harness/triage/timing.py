"""``hil run --perf``: a model's timing and its slowest layers as printed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.results.layer_times import slowest_layers, timing_line
from harness.terminal import columns
from harness.text import printable


def format_timing(perf: Mapping[str, Any], count: int = 10) -> str:
    """The timing line, then the slowest layers (name, op, NPU/CPU, time) when there are any."""
    lines = [f"timing: {timing_line(perf)}"]
    layers = slowest_layers(perf, count)
    if layers:
        lines.append(f"  slowest layers (of {len(perf['layers'])}):")
        rows = [("layer", "op", "target", "time")]
        rows += [
            (
                printable(str(layer.get("name", ""))),
                printable(str(layer.get("op", ""))),
                printable(str(layer.get("target", ""))),
                f"{float(layer['time_us']):.0f} us",
            )
            for layer in layers
        ]
        lines += [f"  {line}" for line in columns(rows, right={3})]
    elif "layers_unavailable" in perf:
        lines.append(f"  no per-layer times: {perf['layers_unavailable']}")
    return "\n".join(lines) + "\n"
