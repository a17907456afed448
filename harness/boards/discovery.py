"""What a board really is: SoC, NPU driver, runtime library, Python side, free disk.

One remote ``sh`` script gathers everything in one round trip, using only what a minimal
(busybox) board has; the board file's values reach it as positional arguments, never spliced
into the script. Anything that cannot be read is reported as "unknown" rather than failing:
a board without Python or without debugfs is still a board. The result is a plain dict that a
run can put in its metadata; its text is printable (a board's escape sequences and control
characters are stripped), so terminals and reports can show it.
"""

from __future__ import annotations

import math
import re
from typing import Any

from harness.boards.farm import PlaceError, lease
from harness.boards.inventory import Board
from harness.boards.transport import (
    BoardConnectionError,
    Transport,
    open_transport,
    shell_command,
)
from harness.text import printable

UNKNOWN = "unknown"
# The script's vendor-neutral parts; a board's runtime adds its own sections between them
# (``BoardDiscovery.script``), using the helpers. $1 sysroot (probe-path prefix), $2 board python,
# $3 work directory, $4 python probe code.
_PREFIX = r"""
root=${1%/}
echo @@compatible
cat "$root/proc/device-tree/compatible" 2>/dev/null | tr '\000' '\n'
echo
# the first of the files "$@" that exists, with the sysroot prefix
first() { for f in "$@"; do if [ -r "$root/$f" ]; then echo "$root/$f"; return; fi; done; }
# the first line of file $2 holding $1 (an ERE), read with strings or, without it, grep -a
version() {
    [ -n "$2" ] || return 0
    { strings "$2" 2>/dev/null || grep -a -o -E "$1[^\"]*" "$2"; } | grep -m 1 -E "$1"
}
"""
_SUFFIX = r"""
echo @@python
"$2" -c "$4" 2>/dev/null
echo @@disk
d=$3
while [ ! -d "$d" ]; do d=$(dirname "$d"); done
df -Pk "$d" 2>/dev/null | tail -n 1
"""
# Runs "$2..." under a deadline of $1 whole seconds on the board itself, so that a probe that
# hangs (a board python stuck on import, a hung debugfs read) does not outlive the host's
# timeout, even when the link is gone. sshd starts each command in its own session, so process
# group 0 is this probe and everything it started; ``timeout`` is not on every busybox. Without
# ``sleep`` the watchdog gives up rather than kill a healthy probe at once.
_DEADLINE = r"""
seconds=$1
shift
"$@" </dev/null &
job=$!
(
    while [ "$seconds" -gt 0 ]; do
        sleep 1 || exit 0
        kill -0 "$job" 2>/dev/null || exit 0
        seconds=$((seconds - 1))
    done
    kill -KILL 0
) </dev/null >/dev/null 2>&1 &
wait "$job"
"""
# The board python's version, then each of a runtime's Python distributions' ("unknown": none)
_PYTHON_PROBE = """\
import platform
print(platform.python_version())
for name in {packages!r}:
    try:
        import importlib.metadata as metadata
        print(metadata.version(name))
    except Exception:
        print("unknown")
"""
_VERSION = re.compile(r"v?(\d+(?:\.\d+)+)")


def read_facts(board: Board, transport: Transport, timeout: float = 30.0) -> dict[str, Any]:
    """The board's facts over an open transport; "unknown" for what it does not show.

    Past ``timeout`` the host gives up (BoardConnectionError) and the board kills the probe.
    """
    own = board.runtime.discovery
    code = _PYTHON_PROBE.format(packages=list(own.python_packages))
    script = ["sh", "-c", _PREFIX + own.script + _SUFFIX, "sh"]
    script += [board.sysroot, board.python, board.workdir, code]
    argv = ["sh", "-c", _DEADLINE, "sh", str(math.ceil(timeout)), *script]
    result = transport.run(shell_command(argv), timeout=timeout)
    sections = _sections(printable(result.stdout.decode(errors="replace")))
    compatible = sections.get("compatible", [])
    socs = [m[1] for m in map(own.soc.match, compatible) if m]
    python = [*sections.get("python", []), UNKNOWN]
    packages = [*python[1:], *[UNKNOWN] * len(own.python_packages)][: len(own.python_packages)]
    return {
        "soc": socs[-1] if socs else UNKNOWN,
        "compatible": compatible,
        "npu_driver": _driver(sections.get("driver", [])),
        **own.facts(sections, packages),
        "python": python[0],
        "disk_free_bytes": _disk_free(sections.get("disk", [])),
        "versions_shown": [list(pair) for pair in own.shown],
    }


def check(
    board: Board,
    *,
    trust_on_first_use: bool = False,
    timeout: float = 10.0,
    sdk: str | None = None,
) -> dict[str, Any]:
    """Connect, probe and judge one board: status "ok", "mismatch" (another SoC),
    "incompatible" (versions known not to work with the host's tools of release ``sdk``,
    None: this environment's) or "unreachable".

    ``timeout`` bounds the connection and, again, the probe. A farm board is checked on a
    place leased for the check (``harness.boards.farm``), released afterwards.
    """
    if board.farm is not None:
        try:
            with lease(board) as leased:
                return check(
                    leased, trust_on_first_use=trust_on_first_use, timeout=timeout, sdk=sdk
                )
        except PlaceError as exc:
            return {
                "board": board.name,
                "address": board.address,
                "status": "unreachable",
                "problems": [printable(str(exc))],
            }
    report: dict[str, Any] = {
        "board": board.name,
        "address": board.address,
        "platform": board.platform,
        "runtime": board.runtime.name,
        "soc_expected": board.soc,
        "status": "ok",
        "problems": [],
    }
    try:
        transport = open_transport(board, trust_on_first_use=trust_on_first_use, timeout=timeout)
        try:
            report.update(read_facts(board, transport, timeout=timeout))
        finally:
            transport.close()
    except BoardConnectionError as exc:
        report.update(status="unreachable", problems=[printable(str(exc))])
        return report
    if report["soc"] not in (UNKNOWN, board.soc):
        report["status"] = "mismatch"
        report["problems"].append(
            f"board reports SoC {report['soc']}, its file {board.source} says soc: {board.soc}"
        )
    versions = board.runtime.check_versions(report, sdk)
    report.update(host_versions=versions.host, version_warnings=versions.warnings)
    if versions.errors:
        report["status"] = "incompatible"
        report["problems"] += versions.errors
    return report


def _sections(text: str) -> dict[str, list[str]]:
    """``@@name`` headed blocks of the script's output, as non-empty stripped lines."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("@@"):
            current = sections.setdefault(line[2:].strip(), [])
        elif line.strip():
            current.append(line.strip())
    return sections


def _driver(lines: list[str]) -> str:
    """'NPU driver: v0.9.8' -> '0.9.8'."""
    if not lines:
        return UNKNOWN
    match = _VERSION.search(lines[0])
    return match[1] if match else lines[0]


def version_text(lines: list[str]) -> str:
    """A library's or tool's version line: 'libx version: 2.3.0 (c949ad889d@2024-11-07)'
    -> '2.3.0 (c949ad889d@2024-11-07)'."""
    if not lines:
        return UNKNOWN
    return lines[0].split("version", 1)[1].lstrip(": ").strip() or UNKNOWN


def epoch(lines: list[str]) -> int | str:
    """Seconds since the epoch from the section's first line."""
    return int(lines[0]) if lines and lines[0].isdigit() else UNKNOWN


def _disk_free(lines: list[str]) -> int | str:
    """Available bytes from the data line of ``df -Pk``."""
    fields = lines[-1].split() if lines else []
    return int(fields[3]) * 1024 if len(fields) >= 4 and fields[3].isdigit() else UNKNOWN
