"""Board trouble as it happens: one line per step while a board does not answer.

A board that stops answering costs minutes (a case's deadline, reconnects, a power cycle), and
whoever watches a nightly must see that while it happens, not in the failed cases' captured
logs at the end. Every such line goes through ``say``: the logger ``harness.boards.trouble``,
whose records the pytest plugin writes on the run's terminal at once (an xdist worker's on the
controller's, ``harness.plugin.boards``); the ``hil`` commands show them as any warning. Each
line names the board, what is being tried and how long until the next step.
"""

from __future__ import annotations

import logging

from harness.text import printable

log = logging.getLogger(__name__)


def say(text: str) -> None:
    """One line about a board that does not answer (made printable: it quotes the board)."""
    log.warning("%s", printable(text))
