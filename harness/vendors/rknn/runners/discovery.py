"""What discovery looks for on an RKNN board (``Runtime.discovery``): the NPU driver's
version files, librknnrt and rknn_server (their versions, the library's change time and when
the server started) and the board Python's rknn-toolkit-lite2."""

from __future__ import annotations

import re
from typing import Any

from harness.boards.discovery import epoch, version_text
from harness.boards.inventory import BoardDiscovery, Sections

# $1 sysroot; ``first`` and ``version`` come from the neutral part of the script
_SCRIPT = r"""
echo @@driver
for f in sys/kernel/debug/rknpu/version sys/kernel/debug/rknpu/driver_version \
         proc/rknpu/version proc/rknpu/driver_version; do
    if [ -r "$root/$f" ]; then cat "$root/$f" 2>/dev/null; echo; break; fi
done
library=$(first usr/lib/librknnrt.so usr/lib64/librknnrt.so usr/lib/librknnmrt.so)
echo @@runtime
version 'librknnm?rt version' "$library"
echo @@runtime_mtime
if [ -n "$library" ]; then stat -c %Y "$library" 2>/dev/null || date -r "$library" +%s; fi
echo @@server
version 'rknn_server version' "$(first usr/bin/rknn_server vendor/bin/rknn_server \
    oem/usr/bin/rknn_server)"
echo @@server_started
for p in "$root"/proc/[0-9]*; do
    if [ "$(cat "$p/comm" 2>/dev/null)" = rknn_server ]; then
        # start: boot time + field 22 of its stat (clock ticks since boot)
        btime=$(sed -n 's/^btime //p' "$root/proc/stat" 2>/dev/null)
        ticks=$(sed 's/.*) //' "$p/stat" 2>/dev/null | cut -d ' ' -f 20)
        hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
        [ -n "$btime" ] && [ -n "$ticks" ] && echo $((btime + ticks / hz))
        break
    fi
done
"""


def _facts(sections: Sections, packages: list[str]) -> dict[str, Any]:
    """'librknnrt version: 2.3.0 (c949ad889d@2024-11-07T11:35:33)' -> '2.3.0 (c949...)', and
    the same of 'rknn_server version: ...'."""
    return {
        "runtime_library": version_text(sections.get("runtime", [])),
        "runtime_library_mtime": epoch(sections.get("runtime_mtime", [])),
        "rknn_server": version_text(sections.get("server", [])),
        "rknn_server_started": epoch(sections.get("server_started", [])),
        "rknn_toolkit_lite2": packages[0],
    }


PROBE = BoardDiscovery(
    script=_SCRIPT,
    python_packages=("rknn-toolkit-lite2",),
    soc=re.compile(r"^rockchip,(r[kv]\d{4}[a-z]?)$"),
    facts=_facts,
    shown=(
        ("runtime_library", "librknnrt"),
        ("rknn_server", "rknn_server"),
        ("rknn_toolkit_lite2", "lite2"),
    ),
)
