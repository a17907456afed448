"""The names a user types, forgiven where the meaning is plain and explained where it is not.

Platform names in any case (``RK3588``), versions in the SDK's spelling or the document's
(``2.3.2``, ``V2.3.2``), an ONNX operator's name where the document names it otherwise
(``Conv`` for ``Convolution``), and "did you mean" for a near miss of anything chosen from a
known list (commands, options, platforms, operators, board-file keys).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

_LITERAL = re.compile(r"``([^`]+)``")


def plain(text: str) -> str:
    """Help text as plain text: a docstring's reST literals (````hil boards check````) lose
    their backquotes, so ``--help`` and the generated reference read as prose."""
    return _LITERAL.sub(r"\1", text)


def suggestion(word: str, known: Iterable[str]) -> str:
    """``"; did you mean X?"`` for the closest of ``known`` (case-insensitive), else ``""``."""
    choices = list(known)
    lowered = {choice.lower(): choice for choice in choices}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return f"; did you mean {lowered[close[0]]}?" if close else ""
