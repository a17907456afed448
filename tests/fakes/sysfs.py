"""A fake sysfs tree of an RK3562 board (frequencies, governors, temperature) for ``sysroot``.

The paths are written here by hand, from the board's kernel layout, so that a test checks the
harness's table (``harness/vendors/rknn/data/conditions.yaml``) against them rather than with it.
"""

from __future__ import annotations

from pathlib import Path

NPU = "sys/class/devfreq/ff300000.npu"
DDR = "sys/class/devfreq/dmc"
CPU0 = "sys/devices/system/cpu/cpu0/cpufreq"
TEMP = "sys/class/thermal/thermal_zone0/temp"
NPU_FREQUENCIES = (300000000, 600000000, 900000000, 1000000000)


def write_sysfs(root: Path, npu_hz: int = 600000000, userspace: bool = True) -> Path:
    """RK3562 clocks under ``root`` (the board file's sysroot); ``userspace``: the NPU's
    devfreq offers the userspace governor."""
    files = {
        f"{NPU}/cur_freq": str(npu_hz),
        f"{NPU}/governor": "rknpu_ondemand",
        f"{NPU}/min_freq": str(NPU_FREQUENCIES[0]),
        f"{NPU}/max_freq": str(NPU_FREQUENCIES[-1]),
        f"{NPU}/available_frequencies": " ".join(map(str, NPU_FREQUENCIES)),
        f"{DDR}/cur_freq": "1560000000",
        f"{DDR}/governor": "dmc_ondemand",
        f"{CPU0}/scaling_cur_freq": "1800000",
        f"{CPU0}/scaling_governor": "schedutil",
        TEMP: "45000",
    }
    if userspace:
        files[f"{NPU}/userspace/set_freq"] = "<unsupported>"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return root
