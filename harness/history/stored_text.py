"""Every text of the results store, stored the same way on SQLite and PostgreSQL.

The two databases take different text: PostgreSQL refuses NUL, and neither can hold a lone
surrogate (what a journal's ``"\\udcff"`` reads as: no character, so no UTF-8). A text holding
either, or starting with ``MARK``, is stored as ``MARK`` followed by its JSON string (ASCII
only), and read back as it was; any other text is stored as it is, so a store stays readable
by other tools and every store written before this rule reads the same.

Columns are TEXT without a length (SQLite never enforced one), but PostgreSQL's indexes take
entries of at most about 2,700 bytes: the text columns of an index (ids: case, limit, run,
SDK, platform, configuration) hold at most ``MAX_ID_BYTES`` each as stored, on both databases,
so an index of three of them always fits.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sqlalchemy import Dialect, Text
from sqlalchemy.types import TypeDecorator

MARK = "\x1a"  # ASCII "substitute": no id, name or message of the harness starts with it
MAX_ID_BYTES = 800
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def stored(text: str) -> str:
    """``text`` as the store holds it."""
    if text.startswith(MARK) or _UNSTORABLE.search(text):
        return MARK + json.dumps(text)
    return text


def unstored(text: str) -> str:
    """The text ``stored`` made ``text`` from."""
    if not text.startswith(MARK):
        return text
    try:
        found = json.loads(text[len(MARK) :])
    except ValueError:  # written by another tool, not by ``stored``: taken as it is
        return text
    return found if isinstance(found, str) else text


def stored_bytes(text: str) -> int:
    """How long ``text`` is in the store, in bytes (what an index entry holds)."""
    return len(stored(text).encode())


class StoredText(TypeDecorator[str]):
    """A TEXT column whose values go through ``stored`` and come back through ``unstored``;
    a value compared with it in a query (``==``, ``>=``) is stored alike."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return None if value is None else stored(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else unstored(value)
