"""What the run policy deselects at collection (``harness.plugin.run_policy``): the cases of
the slow tier and of the other shards; and the case id of a collected item, by which these and
the progress lines know it."""

from __future__ import annotations

from typing import Any

import pytest

from harness.cases.case import Case
from harness.policy.shards import Shard, selection_digest, split
from harness.policy.tiers import estimated_cost, slow_reason
from harness.results.records import case_key
from harness.results.runs import SHARD_KEY


def item_case_id(item: Any) -> str:
    """The case id of a collected item: its ``hil_case`` parameter's, without the SDK that
    ``--sdk`` adds to the node id; else the node id's parameter."""
    case = getattr(getattr(item, "callspec", None), "params", {}).get("hil_case")
    # an empty suite (test_models.py without --models) parametrizes with pytest's NOTSET
    return case.id if isinstance(case, Case) else case_id(item.nodeid)


def item_key(item: Any) -> str:
    """What tells collected cases apart: the case id, and its SDK under ``--sdk``."""
    sdk = getattr(getattr(item, "callspec", None), "params", {}).get("hil_sdk", "")
    return case_key(item_case_id(item), sdk)


def case_id(nodeid: str) -> str:
    """The case id of a generated case's node id (its parameter), else the node id."""
    name = nodeid.rpartition("::")[2]
    _head, bracket, rest = name.partition("[")
    return rest[:-1] if bracket and rest.endswith("]") else nodeid


def leave_out_slow(config: pytest.Config, items: list[Any], budget: float) -> list[dict[str, str]]:
    """Deselect the cases of the slow tier (over ``budget`` seconds); run.json's ``left_out``
    entries for them."""
    left_out: list[dict[str, str]] = []
    kept, slow = [], []
    for item in items:
        reason = slow_reason(item_case_id(item), budget)
        if reason and item.get_closest_marker("hil_case"):
            left_out.append({"id": case_id(item.nodeid), "reason": reason})
            slow.append(item)
        else:
            kept.append(item)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = kept
    return left_out


def keep_shard(config: pytest.Config, items: list[Any], shard: Shard) -> dict[str, Any]:
    """Deselect the items of the other shards; this shard's run.json entry."""
    keys = [item_key(item) for item in items]
    ids = {item_key(item): item_case_id(item) for item in items}
    parts = split(keys, lambda key: estimated_cost(ids[key]).seconds, shard.count)
    mine = set(parts[shard.index - 1])
    others = [item for item, key in zip(items, keys, strict=True) if key not in mine]
    if others:
        config.hook.pytest_deselected(items=others)
        items[:] = [item for item, key in zip(items, keys, strict=True) if key in mine]
    entry = {"index": shard.index, "count": shard.count, "cases": len(items)}
    return {SHARD_KEY: {**entry, "selection": selection_digest(keys)}}
