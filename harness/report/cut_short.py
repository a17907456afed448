"""A run that did not run all it selected: what its report says of it.

run.json holds the cases a run selected (``selected``, written once they are collected) and,
once the run ends, its exit status (``ended``). A run killed on the way (SIGKILL of a CI job's
process tree, a lost machine) never writes ``ended``: its report says it was cut short and names
the selected cases that have no record; so does one interrupted by Ctrl-C (exit status 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.results.records import CaseRecord, record_key

SELECTED_KEY = "selected"  # run.json: the case keys (``case_key``) the run selected
ENDED_KEY = "ended"  # run.json: {"exit": pytest's exit status}, written as the run ends
INTERRUPTED = 2  # pytest's exit status after Ctrl-C
SHOWN = 20  # case ids named in the line; the rest are counted


def cut_short(records: list[CaseRecord], meta: Mapping[str, Any]) -> str:
    """How the run was cut short and which selected cases never ran; "" for a run that ended
    (or an older run, which recorded no selection)."""
    selected = meta.get(SELECTED_KEY)
    ended = meta.get(ENDED_KEY)
    if selected is None or (ended is not None and ended.get("exit") != INTERRUPTED):
        return ""
    recorded = {record_key(record) for record in records} | {record.id for record in records}
    never = [key for key in selected if key not in recorded]
    how = "was interrupted" if ended is not None else "did not end (killed, or still running)"
    named = ", ".join(never[:SHOWN]) + (
        f" and {len(never) - SHOWN} more" if len(never) > SHOWN else ""
    )
    return f"the run {how}: {len(never)} of its {len(selected)} selected cases never ran" + (
        f": {named}" if never else ""
    )
