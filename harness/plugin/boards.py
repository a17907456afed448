"""The boards of a run, chosen for every process before any case (``assign_boards``, leases
held until the run ends), handed to xdist's workers, and named in the report header."""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import pytest

from harness.boards.inventory import Board
from harness.targets.selection import Assignment, worker_index
from harness.targets.selection import assign_boards as choose_boards
from harness.text import printable
from harness.vendors import not_runnable_header

ASSIGNMENTS = pytest.StashKey[dict[str, list[Assignment]]]()  # platform -> one per worker
WORKER_BOARDS = "npu_hil_boards"  # workerinput key: platform -> this worker's assignment


def assign_boards(
    config: pytest.Config,
    platforms: list[str],
    platform_boards: Callable[[str], list[Board]],
    sdk: str,
) -> list[dict[str, Any]]:
    """Choose every process's board of each of the run's ``platforms`` (their board files:
    ``platform_boards``) before any case, leases held until the run ends; the discovery
    reports of the boards checked. ``BoardDown``: a configured board is down and no fallback
    was asked for; a usage error when a board is required and none is configured."""
    config.stash[ASSIGNMENTS] = {}
    if config.getoption("backend") == "sim" or config.option.collectonly:
        return []
    leases = ExitStack()
    config.add_cleanup(leases.close)
    reports: list[dict[str, Any]] = []
    for platform in platforms:
        boards = platform_boards(platform)
        required = config.getoption("backend") == "board" or config.getoption("require_board")
        if not boards and required:
            where = config.getoption("boards")
            raise pytest.UsageError(f"no board file for platform {platform} in {where}")
        config.stash[ASSIGNMENTS][platform], checked = choose_boards(
            boards,
            _workers(config),
            fallback=config.getoption("board_fallback") == "simulator",
            sdk=sdk,
            leases=leases,
            progress=functools.partial(_say, config),
        )
        reports += checked
    return reports


def _say(config: pytest.Config, text: str) -> None:
    """A line on the terminal now, outside pytest's capture (it runs before the reporter)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        sys.stderr.write(printable(text) + "\n")
        sys.stderr.flush()


def _workers(config: pytest.Config) -> int:
    """How many processes run cases: xdist's workers (``-n N``, ``--tx``), else this one."""
    if config.getoption("dist", "no") == "no":
        return 1
    specs = config.getoption("tx", None) or []
    return sum(int(s.split("*")[0]) if s.split("*")[0].isdigit() else 1 for s in specs) or 1


def assigned(config: pytest.Config) -> list[Assignment]:
    """Every process's board assignment of every platform (none on a worker)."""
    return [a for each in config.stash.get(ASSIGNMENTS, {}).values() for a in each]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """An xdist worker starting: the boards the controller chose for it."""
    index = worker_index(node.gateway.id)
    node.workerinput[WORKER_BOARDS] = {
        platform: assignments[index % len(assignments)].to_json()
        for platform, assignments in node.config.stash[ASSIGNMENTS].items()
    }


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Where each process runs its cases, on the terminal before any case (outside capture)."""
    lines = not_runnable_header()
    for platform, assignments in config.stash.get(ASSIGNMENTS, {}).items():
        for index, assignment in enumerate(assignments):
            who = f" gw{index}" if len(assignments) > 1 else ""
            lines.append(
                printable(
                    f"npu-hil{who}: {platform} running on {assignment.backend_name}: "
                    f"{assignment.why}"
                )
            )
    return lines
