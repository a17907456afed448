"""``hil boards build-runner``: cross-build the C runner for boards that have only the C API.

``--arch armhf|aarch64`` builds with Debian/Ubuntu's cross compiler for that architecture
(``arm-linux-gnueabihf-``, ``aarch64-linux-gnu-``); ``--cross-compile`` takes any other
toolchain, such as a board SDK's.

Exit status: 0 when built (the binary's path is printed), 1 when make failed or the cross
compiler is missing (its packages and install line are named), 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.text import printable
from harness.vendors.rknn.platforms import MRT_PLATFORMS, PLATFORMS
from harness.vendors.rknn.runners.c_runner import (
    CROSS_TOOLCHAINS,
    RunnerBuildError,
    build_runner,
)

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


def register(commands: Subparsers) -> None:
    """Add ``build-runner`` to the ``hil boards`` subcommands."""
    summary = "build hil_c_runner (board_files/c-runner) against a vendor rknn_api.h and library"
    parser = commands.add_parser("build-runner", help=summary, description=__doc__)
    parser.add_argument("--platform", required=True, choices=PLATFORMS, help="target platform")
    parser.add_argument(
        "--rknn-include", type=Path, required=True, metavar="DIR", help="folder of rknn_api.h"
    )
    parser.add_argument(
        "--rknn-lib",
        type=Path,
        required=True,
        metavar="DIR",
        help="folder of librknnmrt.so (RV1103/RV1106/RK2118) or librknnrt.so (the others)",
    )
    toolchain = parser.add_mutually_exclusive_group()
    toolchain.add_argument(
        "--arch",
        choices=CROSS_TOOLCHAINS,
        help="build with the distribution's cross compiler for this architecture: armhf "
        "(arm-linux-gnueabihf-, 32-bit RV1103/RV1106 class) or aarch64 (aarch64-linux-gnu-)",
    )
    toolchain.add_argument(
        "--cross-compile",
        default="",
        metavar="PREFIX",
        help="toolchain prefix, e.g. arm-rockchip830-linux-uclibcgnueabihf- (default: the "
        "host's gcc, or --arch's)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("build/c-runner"),
        help="folder; the binary goes to OUT/PLATFORM/hil_c_runner (default: %(default)s)",
    )
    parser.add_argument("--rpath", help="library folder on the board, if not a default one")
    parser.set_defaults(handler=_build, parser=parser)


def _build(args: argparse.Namespace) -> int:
    if not (args.rknn_include / "rknn_api.h").is_file():
        args.parser.error(f"--rknn-include {args.rknn_include}: no rknn_api.h there")
    libname = "rknnmrt" if args.platform in MRT_PLATFORMS else "rknnrt"
    cross_compile = args.cross_compile
    try:
        if args.arch:
            toolchain = CROSS_TOOLCHAINS[args.arch]
            problem = toolchain.problem()
            if problem:
                raise RunnerBuildError(f"--arch {args.arch}: {problem}")
            cross_compile = toolchain.prefix
        binary = build_runner(
            args.out / args.platform,
            rknn_include=args.rknn_include,
            rknn_lib=args.rknn_lib,
            rknn_libname=libname,
            cross_compile=cross_compile,
            rpath=args.rpath,
        )
    except RunnerBuildError as exc:
        print(printable(f"hil boards build-runner: {exc}"), file=sys.stderr)  # compiler text
        return 1
    print(printable(str(binary)))
    return 0
