"""``hil boards build-runner``: cross-build the C runner for boards that have only the C API.

Exit status: 0 when built (the binary's path is printed), 1 when make failed, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.text import printable
from harness.vendors.rknn.platforms import MRT_PLATFORMS, PLATFORMS
from harness.vendors.rknn.runners.c_runner import RunnerBuildError, build_runner

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
    parser.add_argument(
        "--cross-compile",
        default="",
        metavar="PREFIX",
        help="toolchain prefix, e.g. arm-rockchip830-linux-uclibcgnueabihf- or aarch64-linux-gnu-",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("build/c-runner"), help="folder (default: %(default)s)"
    )
    parser.add_argument("--rpath", help="library folder on the board, if not a default one")
    parser.set_defaults(handler=_build, parser=parser)


def _build(args: argparse.Namespace) -> int:
    if not (args.rknn_include / "rknn_api.h").is_file():
        args.parser.error(f"--rknn-include {args.rknn_include}: no rknn_api.h there")
    libname = "rknnmrt" if args.platform in MRT_PLATFORMS else "rknnrt"
    try:
        binary = build_runner(
            args.out / args.platform,
            rknn_include=args.rknn_include,
            rknn_lib=args.rknn_lib,
            rknn_libname=libname,
            cross_compile=args.cross_compile,
            rpath=args.rpath,
        )
    except RunnerBuildError as exc:
        print(printable(f"hil boards build-runner: {exc}"), file=sys.stderr)  # compiler text
        return 1
    print(printable(str(binary)))
    return 0
