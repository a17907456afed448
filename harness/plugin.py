"""pytest plugin of npu-hil (registered as the ``npu_hil`` pytest11 entry point)."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("npu-hil", "npu-hil constraint suites")
    group.addoption("--platform", default=None, help="target platform, e.g. rk3562")
    group.addoption(
        "--backend",
        choices=("auto", "sim", "board"),
        default="auto",
        help="where cases run: a board when one is configured (auto), the simulator, or a board",
    )
    group.addoption("--strict-docs", action="store_true", help="fail on documentation drift")
    group.addoption("--results", default="results", help="results directory (journal, reports)")
