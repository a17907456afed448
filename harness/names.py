"""The names a user types, forgiven where the meaning is plain and explained where it is not.

For every stage (the ``hil`` commands, the pytest plugin): help text as plain text, "did you
mean" for a near miss of a known name, and versions in either spelling, the SDK's (``2.3.2``)
or the document's (``V2.3.2``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

_LITERAL = re.compile(r"``([^`]+)``")
_LONGEST = 100  # characters of a word worth comparing with known names
_VERSION = re.compile(r"[vV]?(\d+(?:\.\d+)*)")


def plain(text: str) -> str:
    """Help text as plain text: a docstring's reST literals (````hil boards check````) lose
    their backquotes, so ``--help`` and the generated reference read as prose."""
    return _LITERAL.sub(r"\1", text)


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``word`` (case-insensitive), if any is close; a word far
    longer than any name is close to none (and is not compared, which would take long)."""
    if len(word) > _LONGEST:
        return None
    lowered = {choice.lower(): choice for choice in known}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close else None


def suggestion(word: str, known: Iterable[str]) -> str:
    """``"; did you mean X?"`` for the closest of ``known``, else ``""``."""
    near = closest(word, known)
    return f"; did you mean {near}?" if near else ""


def sdk_version(text: str) -> str:
    """A release as the SDK spells it: ``V2.3.2`` and ``v2.3.2`` are ``2.3.2``; anything else
    is returned as given, for the caller to refuse."""
    match = _VERSION.fullmatch(text.strip())
    return match.group(1) if match else text


def document_version(text: str) -> str:
    """A version as the documents print it: ``2.3.2`` and ``v2.3.2`` are ``V2.3.2``."""
    match = _VERSION.fullmatch(text.strip())
    return f"V{match.group(1)}" if match else text
