"""Child processes that a test signals.

A job started in the background of a non-interactive shell (``nohup tox > log 2>&1 &``, as CI
may start the suite) begins with SIGINT and SIGQUIT ignored, and every process it starts
inherits that: a harness child sent SIGINT would never see its Ctrl-C. ``default_signals``,
the ``preexec_fn`` of every child a test signals, gives it the dispositions it has when
started from a terminal.
"""

from __future__ import annotations

import signal


def default_signals() -> None:
    """In the child, before exec: SIGINT and SIGQUIT back to their default action (a Python
    child then installs its KeyboardInterrupt handler, as at a terminal)."""
    for number in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(number, signal.SIG_DFL)
