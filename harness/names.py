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
    """The known name closest to ``word`` (case-insensitive), if any is close: of those
    equally similar, the one sharing the longest start with it (``rk356`` is rk3568, not
    rk3576); a word far longer than any name is close to none (and is not compared, which
    would take long)."""
    if len(word) > _LONGEST:
        return None
    lowered = {choice.lower(): choice for choice in known}
    word = word.lower()
    close = difflib.get_close_matches(word, list(lowered), n=len(lowered), cutoff=0.6)
    if not close:
        return None
    best = difflib.SequenceMatcher(None, word, close[0]).ratio()
    tied = [name for name in close if difflib.SequenceMatcher(None, word, name).ratio() == best]
    return lowered[max(tied, key=lambda name: _shared_start(word, name))]


def _shared_start(one: str, other: str) -> int:
    """How many first characters two words share."""
    shared = 0
    while shared < min(len(one), len(other)) and one[shared] == other[shared]:
        shared += 1
    return shared


def family(word: str, known: Iterable[str]) -> list[str]:
    """The known names of the family ``word`` names the way vendors write one, with a
    trailing ``x`` per character that varies (case-insensitive): ``rk356x`` is rk3562,
    rk3566 and rk3568, ``rv110x`` rv1103 and rv1106; none for any other word."""
    stem = word.lower().rstrip("x")
    if len(stem) < 2 or stem == word.lower():
        return []
    return [name for name in known if len(name) == len(word) and name.lower().startswith(stem)]


def suggestion(word: str, known: Iterable[str]) -> str:
    """``"; did you mean X?"`` for the family ``word`` names, else the closest of ``known``
    (``"; did you mean rk3562, rk3566 or rk3568?"``), else ``""``."""
    known = list(known)
    near = family(word, known) or [name for name in [closest(word, known)] if name]
    if not near:
        return ""
    names = ", ".join(near[:-1]) + " or " if len(near) > 1 else ""
    return f"; did you mean {names}{near[-1]}?"


def sdk_version(text: str) -> str:
    """A release as the SDK spells it: ``V2.3.2`` and ``v2.3.2`` are ``2.3.2``; anything else
    is returned as given, for the caller to refuse."""
    match = _VERSION.fullmatch(text.strip())
    return match.group(1) if match else text


def document_version(text: str) -> str:
    """A version as the documents print it: ``2.3.2`` and ``v2.3.2`` are ``V2.3.2``."""
    match = _VERSION.fullmatch(text.strip())
    return f"V{match.group(1)}" if match else text
