"""``hil sdk install VERSION`` and ``hil sdk list``: the rknn-toolkit2 releases a run can use.

Each release lives in its own virtual environment under the SDK directory (default
``~/.cache/npu-hil/sdk``, env ``HIL_SDK_DIR``), built from the recipe in
``harness/vendors/rknn/data/sdk-recipes.yaml``; ``pytest suites --sdk VERSION`` runs on it.
Exit status: 0 on success, 1 when an install fails, 2 on a version without a recipe.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from harness.terminal import columns, emit
from harness.vendors.rknn.toolkit import sdk

if TYPE_CHECKING:
    from harness.terminal import Subparsers

_SHOWN = ("numpy", "onnx", "onnxruntime", "torch")


def register(subparsers: Subparsers) -> None:
    """Add ``hil sdk`` (``install``, ``list``) to the ``hil`` parser."""
    parser = subparsers.add_parser("sdk", help="rknn-toolkit2 environments", description=__doc__)
    commands = parser.add_subparsers(dest="sdk_command", metavar="COMMAND", required=True)
    install = commands.add_parser(
        "install", help="create the environment of one toolkit release from its recipe"
    )
    install.add_argument(
        "version",
        help="rknn-toolkit2 version, e.g. 2.3.2; 'all': every release with a recipe that this "
        "environment does not already provide",
    )
    install.set_defaults(handler=_install)
    listing = commands.add_parser("list", help="installed toolkit releases and their key versions")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.set_defaults(handler=_list)


def _install(args: argparse.Namespace) -> int:
    try:
        recipes = sdk.load_recipes()
        root = sdk.sdk_dir()
        if args.version == sdk.ALL:
            here = sdk.toolkit_version()
            versions = [v for v in recipes.by_version if v != here]
        else:
            versions = [recipes.get(args.version).version]
    except sdk.SdkError as error:
        emit(f"hil sdk install: {error}\n", err=True)
        return 2
    status = 0
    for version in versions:
        try:
            done = sdk.install(version, root, say=lambda line: emit(f"{line}\n", err=True))
        except sdk.SdkError as error:
            emit(f"hil sdk install {version}: {error}\n", err=True)
            status = 1
        else:
            emit(f"rknn-toolkit2 {done.version}: {done.python}\n")
    return status


def _list(args: argparse.Namespace) -> int:
    try:
        sdks = sdk.available()
        recipes = sdk.load_recipes()
    except sdk.SdkError as error:
        emit(f"hil sdk list: {error}\n", err=True)
        return 2
    if args.json:
        emit(json.dumps([vars(s) for s in sdks.values()], indent=2) + "\n")
        return 0
    rows: list[tuple[str, ...]] = [("toolkit", *_SHOWN, "where")]
    for found in sdks.values():
        rows.append((found.version, *(found.packages.get(p) or "-" for p in _SHOWN), found.where))
    emit("".join(f"{line}\n" for line in columns(rows)))
    missing = [v for v in recipes.by_version if v not in sdks]
    if missing:
        emit(f"not installed (hil sdk install VERSION): {', '.join(missing)}\n")
    return 0
