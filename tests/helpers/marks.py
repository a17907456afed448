"""Marks shared by the test packages."""

from __future__ import annotations

import importlib.util

import pytest

# Tests that convert or simulate need rknn-toolkit2 (installed by the tox environment).
needs_toolkit = pytest.mark.skipif(
    importlib.util.find_spec("rknn") is None, reason="rknn-toolkit2 is not installed"
)
