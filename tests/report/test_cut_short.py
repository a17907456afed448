"""A run's report says when the run was cut short, and which of its selected cases never ran
(run.json's ``selected``, and ``ended`` once the run ended)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.helpers.records import make_record

from harness.report.cut_short import SHOWN, cut_short
from harness.report.matrix import run_header
from harness.results.records import case_key

SELECTED = [f"rk3562/Pow/float16/values={n}" for n in range(4)]
RAN = [make_record(SELECTED[0], sdk="2.5.0"), make_record(SELECTED[1], sdk="2.5.0")]


@pytest.mark.parametrize(
    ("meta", "says"),
    [
        ({"selected": SELECTED}, "did not end (killed, or still running): 2 of its 4 selected"),
        ({"selected": SELECTED, "ended": {"exit": 2}}, "was interrupted: 2 of its 4 selected"),
        ({"selected": SELECTED, "ended": {"exit": 1}}, ""),  # it ended: what ran is the story
        ({"selected": SELECTED, "ended": {"exit": 0}}, ""),
        ({}, ""),  # an older run recorded no selection
    ],
)
def test_a_run_that_did_not_end_is_cut_short(meta: dict[str, Any], says: str) -> None:
    line = cut_short(RAN, meta)
    assert line.startswith(f"the run {says}") if says else line == ""
    if says:
        assert line.endswith(f"never ran: {SELECTED[2]}, {SELECTED[3]}")
    header = dict(run_header(RAN, meta))
    assert header.get("cut short", "") == line


def test_the_cases_never_run_are_named_up_to_a_count_and_keyed_by_sdk_under_sdk() -> None:
    selected = [case_key(f"rk3562/Pow/float16/values={n}", "2.4.0") for n in range(SHOWN + 5)]
    ran = [make_record("rk3562/Pow/float16/values=0", sdk="2.4.0")]
    line = cut_short(ran, {"selected": selected})
    assert f"{SHOWN + 4} of its {SHOWN + 5} selected cases never ran" in line
    assert line.endswith(" and 4 more") and selected[0] not in line.split(": ", 2)[2]
