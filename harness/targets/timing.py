"""Timing a case on a board (``--perf``): what to time, and the statistics a record keeps.

A target that can time inference (a board) runs the case once for its outputs, then
``warmup`` untimed runs and up to ``runs`` timed ones, stopping early once ``cap_s`` seconds
of timed runs have passed. It hands back the raw samples with the clock that measured them
(``Observation.perf``); ``timing_record`` turns them into what the journal keeps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness.text import clipped

DEFAULT_WARMUP = 3
DEFAULT_RUNS = 20
DEFAULT_CAP_S = 10.0
# Condition names ending so are readings (a temperature), not settings: a change in them does
# not mark a run as having run at other clocks.
READING_SUFFIX = "_temp"


@dataclass(frozen=True)
class JobTiming:
    """What ``--perf`` asks of a target for every case."""

    warmup: int = DEFAULT_WARMUP
    runs: int = DEFAULT_RUNS
    cap_s: float = DEFAULT_CAP_S  # timed runs stop once this much time has gone into them
    layers: bool = False  # also the runtime's per-layer times, where it exposes them
    pin_npu: str = ""  # pin the NPU frequency (Hz, or "max") for the run; "": leave it

    def __post_init__(self) -> None:
        if self.warmup < 0 or self.runs < 1 or not 0 < self.cap_s <= 86400:
            raise ValueError(
                f"perf: warm-up runs must be 0 or more (got {self.warmup}), timed runs at "
                f"least 1 (got {self.runs}), the cap above 0 s and at most a day "
                f"(got {self.cap_s:g})"
            )
        if self.pin_npu not in ("", "max") and not self.pin_npu.isdigit():
            raise ValueError(f"perf: pin the NPU to a frequency in Hz or max, not {self.pin_npu!r}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def add_perf_options(add: Callable[..., Any]) -> None:
    """The options of ``JobTiming`` but ``layers`` (``add``: argparse's ``add_argument`` or a
    pytest option group's ``addoption``); ``perf_request`` reads them back."""
    options = (
        ("--perf-warmup", int, DEFAULT_WARMUP, "N", f"untimed runs first ({DEFAULT_WARMUP})"),
        ("--perf-runs", int, DEFAULT_RUNS, "N", f"timed runs ({DEFAULT_RUNS})"),
        ("--perf-cap", float, DEFAULT_CAP_S, "S", f"timed seconds, at most ({DEFAULT_CAP_S:g})"),
        ("--perf-pin-npu", str, "", "HZ|max", "pin the NPU clock where allowed; restored after"),
    )
    for name, kind, default, metavar, text in options:
        add(name, type=kind, default=default, metavar=metavar, help=f"with --perf: {text}")


def perf_request(values: Any, layers: bool = False) -> JobTiming:
    """The ``JobTiming`` of ``add_perf_options``'s values (an argparse namespace, or an
    object whose attributes are pytest's options); ValueError when one is unusable."""
    return JobTiming(
        warmup=values.perf_warmup,
        runs=values.perf_runs,
        cap_s=values.perf_cap,
        layers=layers,
        pin_npu=values.perf_pin_npu,
    )


def summarize(samples: Sequence[float]) -> dict[str, float]:
    """min, median, p90 and MAD (median absolute deviation) of ``samples``, in seconds."""
    if not samples:
        raise ValueError("no timed runs to summarize")
    ordered = sorted(samples)
    median = _median(ordered)
    # p90 by the nearest rank: a value that was measured, never one interpolated between two
    rank = max(1, -(-9 * len(ordered) // 10))
    return {
        "min_s": ordered[0],
        "median_s": median,
        "p90_s": ordered[rank - 1],
        "mad_s": _median(sorted(abs(value - median) for value in ordered)),
    }


def _median(ordered: Sequence[float]) -> float:
    """``statistics.median`` of sorted values, the two middle ones halved before they are
    added: the same float, where adding first overflows to infinity for two finite samples
    near the largest float a hostile board can send."""
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return ordered[middle - 1] / 2 + ordered[middle] / 2


def _seconds(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def clocks_changed(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """The conditions (frequencies, governors) that differ after the timed runs, by name."""
    names = sorted(set(before) | set(after))
    return [
        name
        for name in names
        if not name.endswith(READING_SUFFIX) and before.get(name) != after.get(name)
    ]


class TimingError(ValueError):
    """A target's timing that is not numbers of seconds (a broken or hostile board)."""


def timing_record(perf: Mapping[str, Any]) -> dict[str, Any]:
    """A record's ``perf`` from a target's raw timing (``Observation.perf``): the clock, the
    counts, the statistics, the samples, the conditions (marked when clocks changed) and the
    per-layer table; a target's reason for having no timing is passed on. TimingError when
    the samples are not finite numbers of seconds, 0 or more, or the warm-up count is not a
    count."""
    if not perf.get("samples_s"):
        return {"unavailable": str(perf.get("unavailable", "the target gave no timed run"))}
    samples, warmup = perf["samples_s"], perf.get("warmup", 0)
    if not isinstance(samples, list) or not all(map(_seconds, samples)):
        raise TimingError(
            f"timed runs' samples {clipped(repr(samples))} are not all finite numbers of "
            "seconds, 0 or more"
        )
    if not isinstance(warmup, int) or isinstance(warmup, bool) or warmup < 0:
        raise TimingError(f"warm-up count {clipped(repr(warmup))} is not a count")
    samples = [float(value) for value in samples]
    record: dict[str, Any] = {
        "clock": str(perf.get("clock", "wall")),
        "warmup": warmup,
        "runs": len(samples),
        "capped": bool(perf.get("capped", False)),
        **{name: round(value, 9) for name, value in summarize(samples).items()},
        "samples_s": [round(value, 9) for value in samples],
    }
    before, after = perf.get("conditions_before"), perf.get("conditions_after")
    if isinstance(before, dict) and isinstance(after, dict):
        record["conditions"] = {"before": before, "after": after}
        record["clocks_changed"] = clocks_changed(before, after)
    for key in ("layers", "layers_unavailable", "pinned"):
        if key in perf:
            record[key] = perf[key]
    return record
