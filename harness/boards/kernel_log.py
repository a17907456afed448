"""The board's kernel log around a case that failed on it: the NPU driver's job timeouts and
IOMMU faults are what a vendor asks for first.

``kernel_log`` reads the board's uptime and ``dmesg`` over an open transport and keeps the
lines stamped since the case started on the board (its host-side start, moved to the board's
clock by the uptime read with the log, with a second of slack), at most ``MAX_LINES`` lines and
``MAX_BYTES`` bytes, the newest kept. A log without timestamps gives its last lines, and says
so. The caller redacts it like every file of a case folder.
"""

from __future__ import annotations

import re

from harness.boards.transport import Transport

MAX_LINES = 200
MAX_BYTES = 64 * 1024
UNSTAMPED_LINES = 50  # of a kernel log without timestamps: its newest lines
# the uptime, then the newest lines of the kernel's ring buffer (a read that is not allowed
# prints dmesg's own error, which is then what the file shows)
COMMAND = "cat /proc/uptime; dmesg 2>&1 | tail -n 2000"
_STAMP = re.compile(r"^\[\s*(\d+(?:\.\d+)?)\]")


def kernel_log(transport: Transport, since_s: float, timeout: float = 10.0) -> str:
    """The kernel log lines of the last ``since_s`` seconds, headed by what was kept."""
    result = transport.run(COMMAND, timeout=timeout)
    first, _, rest = result.stdout.decode("utf-8", "replace").partition("\n")
    lines = rest.splitlines()
    try:
        start = float(first.split()[0]) - since_s - 1.0
    except (IndexError, ValueError):
        start = None
    stamped = [(line, _STAMP.match(line)) for line in lines]
    if start is not None and any(found for _, found in stamped):
        kept = [line for line, found in stamped if found and float(found[1]) >= start]
        what = f"lines stamped since the case started ({since_s:.0f} s before it ended)"
    else:
        kept = lines[-UNSTAMPED_LINES:]
        what = f"its last {UNSTAMPED_LINES} lines (no timestamps to tell the case's own)"
    cut = len(kept) > MAX_LINES
    text = "\n".join(kept[-MAX_LINES:])[-MAX_BYTES:]
    more = f"; the newest {MAX_LINES} of {len(kept)}" if cut else ""
    return f"# board kernel log (dmesg): {what}{more}\n{text}\n"
