"""Telling a toolkit crash from infrastructure trouble: a process that died running a build is
run once more in a fresh process, and only the same death in the same toolkit call is the
toolkit's (a compiler crash: a failed stage, judged and cached like a rejection).

The simulator pool and the converter both use it: each records a ``Death`` per attempt and
asks ``after_two_deaths`` what the case observed.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.vendors.rknn.toolkit.buildlog import crash_site
from harness.vendors.rknn.toolkit.calls import read_stage


@dataclass(frozen=True)
class Death:
    """How a toolkit process died running a build: its exit code (negative: the signal), the
    parent's message, the toolkit call it was in ("build build"; "" before any) and the log."""

    code: int
    status: str
    stage: str
    log: str

    @classmethod
    def of(cls, code: int, status: str, folder: Path, log_file: str) -> Death:
        """The death of a process whose working ``folder`` holds its stage (``note_stage``) and
        ``log_file``."""
        log = folder / log_file
        text = log.read_text(errors="replace") if log.exists() else ""
        return cls(code, status, read_stage(folder), text)

    @property
    def how(self) -> str:
        return signal.Signals(-self.code).name if self.code < 0 else f"exit code {self.code}"


def after_two_deaths(first: Death, second: Death) -> dict[str, Any]:
    """What a build that died twice, each time in a fresh process, observed: a crash
    ({"failed_stage", "aborted", "error"}) when both died the same way in the same toolkit call,
    else infrastructure trouble ({"infra_error"}). SIGKILL is never the toolkit's: the
    out-of-memory killer or someone's ``kill -9`` sends it."""
    outside = first.code == -signal.SIGKILL
    if first.code != second.code or first.stage != second.stage or outside or not second.stage:
        before = first.status.split(";", 1)[0]  # without its stderr
        return {"infra_error": f"{second.status}\n(the first run died too: {before})"}
    stage, _, call = second.stage.partition(" ")
    site = crash_site(second.log)
    return {
        "failed_stage": stage,
        "aborted": second.how,
        "error": f"compiler crash ({second.how} in rknn.{call}{', ' + site if site else ''}); "
        "confirmed: the same crash again in a fresh worker process",
    }
