"""The test double of the RKNN C API (tests/fakes/c_api_double), built with the host gcc or a
cross compiler (``CROSS_TOOLCHAINS``: the ARM tests run it under qemu-user).

It is built as librknnmrt.so (without rknn_set_core_mask and the perf queries, like the real
one) and librknnrt.so;
its "models" are text descriptors (``descriptor``; the format is in rknn_double.c).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

DOUBLE = Path(__file__).parent / "c_api_double"


def build_double(out: Path, cross_compile: str = "") -> Path:
    """Build librknnmrt.so and librknnrt.so into ``out`` with ``{cross_compile}gcc``; the
    folder."""
    flags = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", f"-I{DOUBLE}"]
    if cross_compile.startswith("arm-"):
        flags.append("-mfp16-format=ieee")  # 32-bit ARM has _Float16 only in a chosen format
    for name, extra in (("rknnmrt", []), ("rknnrt", ["-DDOUBLE_CORE_MASK", "-DDOUBLE_PERF"])):
        soname = f"-Wl,-soname,lib{name}.so"
        source = str(DOUBLE / "rknn_double.c")
        target = str(out / f"lib{name}.so")
        argv = [f"{cross_compile}gcc", *flags, *extra, soname, source, "-lm", "-o", target]
        subprocess.run(argv, check=True)
    return out


def descriptor(*lines: str) -> bytes:
    """A model for the double: its header, then ``lines`` (input, output, fail, hang)."""
    return "\n".join(["hil-double 1", "sdk 2.3.2-test 0.9.8-test", *lines, ""]).encode()
