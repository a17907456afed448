"""Synthetic nightly results folders for the history store's tests: real run.json files and
journals, written by the harness's own writers, one folder per night."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.history.runinfo import HISTORY_KEY, configuration
from harness.results.journal import Journal, write_run_metadata
from harness.results.records import CaseRecord, case_folder

PLATFORM = "rk3562"
STABLE = "rk3562/Pow/float16/values=2"
FLAPPING = "rk3562/Expand/float16/[b,c,1,w]:h=8193"
BREAKS = "rk3562/MaxPool/float16/kernel_h=8"
REDEFINED = "rk3562/Pow/float16/values=4"
MAXPOOL_LIMIT = "rk3562/MaxPool/kernel_h"
NIGHTS = 30
SDK_CHANGE = 17  # night index from which the job runs SDK 2.5.0 (2.3.2 before)
REDEFINED_AT = 25  # night index from which REDEFINED has other parameters
KILLED = 22  # night index killed mid-write: FLAPPING's line truncated, BREAKS never written


def flapping_verdict(night: int) -> str:
    return "violation" if night % 3 == 0 else "confirmed"


@dataclass
class Night:
    index: int
    sdk: str
    revision: str
    verdicts: dict[str, str] = field(default_factory=dict)

    @property
    def date(self) -> str:
        return f"2026-11-{self.index + 1:02d}"


def plan() -> list[Night]:
    nights = []
    for index in range(NIGHTS):
        sdk = "2.5.0" if index >= SDK_CHANGE else "2.3.2"
        revision = "abc000000001" if index < 10 else "abc000000002"
        verdicts = {
            STABLE: "confirmed",
            FLAPPING: flapping_verdict(index),
            BREAKS: "violation" if index >= SDK_CHANGE else "doc-drift",
            REDEFINED: "confirmed" if index >= REDEFINED_AT else "limit-confirmed",
        }
        nights.append(Night(index, sdk, revision, verdicts))
    return nights


def record(case_id: str, verdict: str, night: Night, median_s: float | None = None) -> CaseRecord:
    op = case_id.split("/")[1]
    limit = MAXPOOL_LIMIT if op == "MaxPool" else f"rk3562/{op}/{case_id.split('/')[-1]}"
    params: dict[str, Any] = {"values": 4}
    if case_id == REDEFINED and night.index >= REDEFINED_AT:
        params = {"values": 4, "shape": [1, 3, 8, 8]}
    perf: dict[str, Any] = {}
    if median_s is not None:
        perf = {"clock": "monotonic", "runs": 5, "min_s": median_s * 0.9, "median_s": median_s,
                "p90_s": median_s * 1.1, "mad_s": median_s * 0.01}  # fmt: skip
    return CaseRecord(
        id=case_id,
        platform=PLATFORM,
        op=op,
        dtype="float16",
        limit=limit,
        value=case_id.split("=")[-1],
        documented="supported",
        backend="simulator",
        verdict=verdict,
        versions={"rknn_toolkit2": night.sdk, "numpy": "2.4.6", "npu_hil": "0.1.0"},
        artifacts=case_folder(case_id, night.sdk),
        started=f"{night.date}T02:{10 + list(night.verdicts).index(case_id):02d}:00+00:00",
        duration_s=1.5,
        params=params,
        sdk=night.sdk,
        perf=perf,
    )


def write(night: Night, root: Path, killed: bool = False, timed: bool = False) -> Path:
    """The night's results folder ``root/results-DATE``; ``killed``: the journal stops
    inside FLAPPING's line and BREAKS never ran."""
    folder = root / f"results-{night.date}"
    meta = {
        "started": f"{night.date}T02:00:00+00:00",
        "platform": PLATFORM,
        "backend": "sim",
        "tier": "default",
        "sdks": [night.sdk],
        "versions": {"rknn_toolkit2": night.sdk, "npu_hil": "0.1.0"},
        HISTORY_KEY: {
            "run": f"run-{night.index:02d}",
            "revision": night.revision,
            "configuration": configuration(PLATFORM, None, "sim", "default", ""),
        },
    }
    write_run_metadata(folder, meta)
    journal = Journal(folder)
    for case_id, verdict in night.verdicts.items():
        median = 0.001 * (1 + night.index / 100) if timed and case_id == STABLE else None
        item = record(case_id, verdict, night, median)
        if killed and case_id == FLAPPING:
            line = json.dumps(item.to_json())
            with journal.path.open("a") as handle:
                handle.write(line[: len(line) // 2])  # no newline: killed mid-write
            break
        journal.append(item, sync=False)
    return folder


def write_all(root: Path, timed: bool = False) -> list[Path]:
    return [write(night, root, night.index == KILLED, timed) for night in plan()]
