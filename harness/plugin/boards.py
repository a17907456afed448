"""The boards of a run, chosen for every process before any case (``assign_boards``, leases
held until the run ends), handed to xdist's workers, and named in the report header; and a
board's trouble on the terminal as it happens (``TroubleLines``)."""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import warnings
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import pytest

from harness.boards import trouble
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
    _fewer_workers(config)
    return reports


def _fewer_workers(config: pytest.Config) -> None:
    """Start only as many xdist workers as the platform with the most assignments has: a
    further worker that got no place of its own is left out (``choose_boards``), so that a
    dead exporter costs its worker only and the cases go to the places that work."""
    wanted = _workers(config)
    have = max((len(each) for each in config.stash[ASSIGNMENTS].values()), default=wanted)
    if have >= wanted:
        return
    config.option.tx = _specs(config)[:have]
    config.option.numprocesses = have
    _say(config, f"npu-hil: {have} of {wanted} workers started, one per place leased")


class BoardTroubleWarning(UserWarning):
    """A line of ``harness.boards.trouble`` on its way from an xdist worker to the controller
    (xdist hands a worker's recorded warnings on as they come)."""


class TroubleLines(logging.Handler):
    """``harness.boards.trouble``'s lines on the run's terminal as they happen, outside pytest's
    capture: written at once in the run's first process; an xdist worker's, named after it,
    recorded as a ``BoardTroubleWarning``, which xdist sends to the controller at once, where
    ``pytest_warning_recorded`` writes it (and pytest's warnings summary lists it)."""

    def __init__(self, config: pytest.Config) -> None:
        super().__init__(logging.WARNING)
        self.config = config
        self.worker = getattr(config, "workerinput", {}).get("workerid")

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if self.worker is None:
            _say(self.config, f"npu-hil: {text}")
            return
        warning = BoardTroubleWarning(f"[{self.worker}] {text}")
        message = warnings.WarningMessage(warning, BoardTroubleWarning, __file__, 0)
        self.config.hook.pytest_warning_recorded.call_historic(
            kwargs={"warning_message": message, "when": "runtest", "nodeid": "", "location": None}
        )

    @pytest.hookimpl
    def pytest_warning_recorded(self, warning_message: warnings.WarningMessage) -> None:
        if self.worker is None and isinstance(warning_message.message, BoardTroubleWarning):
            _say(self.config, f"npu-hil: {warning_message.message}")


def pytest_configure(config: pytest.Config) -> None:
    lines = TroubleLines(config)
    trouble.log.addHandler(lines)
    config.pluginmanager.register(lines, "npu_hil_board_trouble")
    config.add_cleanup(functools.partial(trouble.log.removeHandler, lines))


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
    return len(_specs(config)) or 1


def _specs(config: pytest.Config) -> list[str]:
    """xdist's ``--tx`` specs, one per worker (``2*popen``: two)."""
    specs = []
    for spec in config.getoption("tx", None) or []:
        count, star, rest = spec.partition("*")
        specs += [rest] * int(count) if star and count.isdigit() else [spec]
    return specs


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
