"""Timeouts a user gives (``--hil-timeout``, ``hil boards check --timeout``): what is acceptable.

A timeout must be a finite number of seconds above zero and at most ``MAX_TIMEOUT_S``. Zero or
less would fail every case or board at once, NaN never expires (comparisons with it are false),
infinity overflows the waits of threading and select, and a bound beyond a day is a hang in
all but name: no conversion, case or board probe takes that long.
"""

from __future__ import annotations

import math

MAX_TIMEOUT_S = 24 * 3600.0


def timeout_problem(seconds: float) -> str | None:
    """Why ``seconds`` is not an acceptable timeout, or None when it is."""
    if not math.isfinite(seconds) or seconds <= 0:
        return "a timeout must be a finite number of seconds above 0"
    if seconds > MAX_TIMEOUT_S:
        return f"a timeout must be at most {MAX_TIMEOUT_S:g} s (one day)"
    return None
