"""Where the tests find the checkout: ``ROOT`` is the repository (this checkout's harness,
suites/, docs/, tools/), ``TESTS`` the tests folder with its data (``TESTS / "data"``)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
# The operator suite, which most end-to-end tests run in a child pytest.
SUITE = ROOT / "suites" / "test_operators.py"
