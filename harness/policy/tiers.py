"""Cost estimates and the slow tier (``--tier``, ``--case-budget``).

Every case has an estimated cost in seconds (``costs.yaml``, by case-id pattern). Cases whose
estimate exceeds the budget form the slow tier: ``--tier default`` leaves them out (the run
says which, in its summary and in run.json ``left_out``), ``--tier full`` runs them, under
their own timeout (``--slow-timeout``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from harness.policy.known_issues import glob_match

COSTS_PATH = Path(__file__).with_name("costs.yaml")
TIERS = ("default", "full")
DEFAULT_BUDGET_S = 120.0
DEFAULT_SLOW_TIMEOUT_S = 3600.0  # the slow tier's case timeout: 6x its largest estimate


@dataclass(frozen=True)
class Cost:
    seconds: float
    why: str  # empty for the default estimate


@cache
def _table() -> tuple[float, tuple[tuple[tuple[str, ...], Cost], ...]]:
    data = yaml.safe_load(COSTS_PATH.read_text(encoding="utf-8"))
    rows = tuple(
        (tuple(row["cases"]), Cost(float(row["seconds"]), row["why"])) for row in data["cases"]
    )
    return float(data["default"]), rows


def estimated_cost(case_id: str) -> Cost:
    default, rows = _table()
    for globs, cost in rows:
        if any(glob_match(glob, case_id) for glob in globs):
            return cost
    return Cost(default, "")


def slow_reason(case_id: str, budget_s: float) -> str | None:
    """Why the case is in the slow tier, or None when its estimate fits the budget."""
    cost = estimated_cost(case_id)
    if cost.seconds <= budget_s:
        return None
    return f"slow tier: estimated {cost.seconds:g} s > budget {budget_s:g} s: {cost.why}"
