"""The test double of the RKNN C API (tests/fakes/c_api_double), built with the host gcc.

It is built as librknnmrt.so (without rknn_set_core_mask and the perf queries, like the real
one) and librknnrt.so;
its "models" are text descriptors (``descriptor``; the format is in rknn_double.c).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

DOUBLE = Path(__file__).parent / "c_api_double"


def build_double(out: Path) -> Path:
    """Build librknnmrt.so and librknnrt.so into ``out``; the folder."""
    for name, extra in (("rknnmrt", []), ("rknnrt", ["-DDOUBLE_CORE_MASK", "-DDOUBLE_PERF"])):
        flags = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", f"-I{DOUBLE}"]
        soname = f"-Wl,-soname,lib{name}.so"
        source = str(DOUBLE / "rknn_double.c")
        target = str(out / f"lib{name}.so")
        subprocess.run(["gcc", *flags, *extra, soname, source, "-lm", "-o", target], check=True)
    return out


def descriptor(*lines: str) -> bytes:
    """A model for the double: its header, then ``lines`` (input, output, fail, hang)."""
    return "\n".join(["hil-double 1", "sdk 2.3.2-test 0.9.8-test", *lines, ""]).encode()
