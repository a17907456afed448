"""Which cases this pytest process runs next, in order: what a batch may take along.

In a plain run that is the session's items after the current one (``-k`` and markers have
already deselected theirs); under pytest-xdist it is the worker's own queue, the tests the
controller has sent it so far, so a worker never runs a case meant for another. Only tests
that take their record from the ``hil_record`` fixture count, and not those marked skip. With
``--sdk`` a case runs once per SDK release, and each platform of the run has its own board:
only the tests on the same SDK and platform as the current one count.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from harness.cases.case import Case

_POSITIONS = pytest.StashKey[dict[str, int]]()


def upcoming_cases(item: pytest.Item) -> Iterator[Case]:
    """The cases of the tests this process runs after ``item`` on the same SDK and platform,
    in the order it runs them."""
    sdk, current = _sdk_of(item), _case_of(item)
    platform = current.platform if current is not None else None
    for other in _upcoming_items(item):
        case = _case_of(other)
        if case is not None and _sdk_of(other) == sdk and case.platform == platform:
            yield case


def _upcoming_items(item: pytest.Item) -> Iterator[pytest.Item]:
    items: Sequence[pytest.Item] = item.session.items
    worker = _xdist_worker(item.config)
    if worker is None and hasattr(item.config, "workerinput"):
        return  # an xdist whose queue cannot be read: no look-ahead, batches of one
    if worker is None:
        start = _position(item) + 1
        yield from (items[index] for index in range(start, len(items)))
        return
    queued = [worker.nextitem_index]
    with worker.torun.lock() as queue:  # the controller's thread appends to it
        queued += list(queue)
    yield from (items[index] for index in queued if isinstance(index, int))


def _position(item: pytest.Item) -> int:
    stash = item.session.stash
    if _POSITIONS not in stash or item.nodeid not in stash[_POSITIONS]:
        stash[_POSITIONS] = {other.nodeid: i for i, other in enumerate(item.session.items)}
    return stash[_POSITIONS].get(item.nodeid, len(item.session.items))


def _xdist_worker(config: pytest.Config) -> Any:
    """pytest-xdist's worker loop of this process (it holds the queue), or None."""
    for plugin in config.pluginmanager.get_plugins():
        if hasattr(plugin, "torun") and hasattr(plugin, "nextitem_index"):
            return plugin
    return None


def _case_of(item: pytest.Item) -> Case | None:
    if "hil_record" not in getattr(item, "fixturenames", ()):
        return None
    if item.get_closest_marker("skip") is not None:
        return None
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("hil_case") if callspec is not None else None
    return case if isinstance(case, Case) else None


def _sdk_of(item: pytest.Item) -> object:
    """The ``hil_sdk`` parameter of ``item`` (``--sdk``), or None when not parametrized."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("hil_sdk") if callspec is not None else None
