"""What a board runs at during timed runs: the sysfs files read, and pinning the NPU clock.

``data/conditions.yaml`` lists, per platform, the NPU's devfreq folder and the CPUs whose
cpufreq policy is read, beside the DDR controller's devfreq and the SoC temperature.
``condition_files`` gives name -> path on the board, below the board file's ``sysroot`` (so a
test can point a board at a fake sysfs tree). The runners read them before the warm-up and
after the timed runs.

``PIN`` and ``RESTORE`` are the shell scripts that pin the NPU's frequency (``--perf-pin-npu``)
for a session and put it back: the ``userspace`` governor where the kernel has it, else
``min_freq`` = ``max_freq``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from harness.vendors.rknn import DATA_DIR

CONDITIONS_FILE = DATA_DIR / "conditions.yaml"

# $1 the NPU devfreq folder, $2 the frequency in Hz or "max". Prints "GOVERNOR MIN MAX" (what
# RESTORE puts back), then the frequency and how it was pinned.
PIN = r"""
d=$1
want=$2
[ -r "$d/governor" ] || { echo "no NPU devfreq folder at $d" >&2; exit 3; }
gov=$(cat "$d/governor") && min=$(cat "$d/min_freq") && max=$(cat "$d/max_freq") || exit 3
top=$max
for f in $(cat "$d/available_frequencies" 2>/dev/null); do [ "$f" -gt "$top" ] && top=$f; done
[ "$want" = max ] && want=$top
echo "$gov $min $max"
if [ -e "$d/userspace/set_freq" ] && echo userspace >"$d/governor" 2>/dev/null &&
    echo "$want" >"$d/userspace/set_freq" 2>/dev/null; then
    echo "$want userspace"
    exit 0
fi
echo "$gov" >"$d/governor" 2>/dev/null
# max up first, so that min can never pass it
{ echo "$top" >"$d/max_freq" && echo "$want" >"$d/min_freq" && echo "$want" >"$d/max_freq"; } \
    2>/dev/null || { echo "cannot write $d (not root?)" >&2; exit 4; }
echo "$want min=max"
"""
# $1 the NPU devfreq folder, $2 governor, $3 min_freq, $4 max_freq (PIN's first line).
RESTORE = r"""
d=$1
echo "$2" >"$d/governor"
top=$4
for f in $(cat "$d/available_frequencies" 2>/dev/null); do [ "$f" -gt "$top" ] && top=$f; done
echo "$top" >"$d/max_freq" && echo "$3" >"$d/min_freq" && echo "$4" >"$d/max_freq"
"""


@cache
def _table() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(CONDITIONS_FILE.read_text(encoding="utf-8"))
    return data


def npu_devfreq(platform: str, sysroot: str = "/") -> str | None:
    """The NPU's devfreq folder on the board (below ``sysroot``), or None when unknown."""
    path = _table()["platforms"][platform].get("npu")
    return _below(sysroot, path) if path else None


def condition_files(platform: str, sysroot: str = "/") -> dict[str, str]:
    """Condition name -> file on the board: NPU, CPU and DDR frequencies and governors, the
    SoC temperature (a name ending ``_temp``: a reading, not a setting)."""
    table = _table()
    entry = table["platforms"][platform]
    folders = {"ddr": table["ddr"]}
    if entry.get("npu"):
        folders["npu"] = entry["npu"]
    files = {}
    for name, folder in folders.items():
        files[f"{name}_freq"] = f"{folder}/cur_freq"
        files[f"{name}_governor"] = f"{folder}/governor"
    for cpu in entry["cpus"]:
        folder = table["cpufreq"].format(cpu=cpu)
        files[f"cpu{cpu}_freq"] = f"{folder}/scaling_cur_freq"
        files[f"cpu{cpu}_governor"] = f"{folder}/scaling_governor"
    files["soc_temp"] = table["temperature"]
    return {name: _below(sysroot, path) for name, path in files.items()}


def _below(sysroot: str, path: str) -> str:
    return sysroot.rstrip("/") + path
