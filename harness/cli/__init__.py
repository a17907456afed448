"""The ``hil`` command: one argparse subcommand per module, each added by its ``register``.

A module that offers a subcommand defines ``register(subparsers)``, which adds its parser and
sets ``handler`` (``args -> exit code``) as a default; it is listed in ``REGISTRARS`` below,
followed by the vendors' own commands (``Vendor.commands["hil"]``: ``hil sdk``).
Bad arguments exit with code 2 and a message on stderr: argparse does this for its own checks,
and handlers call their parser's ``error()`` for validation errors.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from harness import __version__
from harness.cli import boards as boards_cli
from harness.cli import cache as cache_cli
from harness.cli import docs as docs_cli
from harness.cli import history as history_cli
from harness.cli import known_issues as known_issues_cli
from harness.cli import layout as layout_cli
from harness.cli import models as models_cli
from harness.cli import probe as probe_cli
from harness.cli import report as reporting_cli
from harness.cli import vendors as vendors_cli
from harness.cli.parser import HilParser
from harness.terminal import quiet_stdout
from harness.vendors import vendor_commands

if TYPE_CHECKING:
    from harness.terminal import Registrar, Subparsers

REGISTRARS: list[Registrar] = [
    layout_cli.register,
    reporting_cli.register,
    boards_cli.register,
    cache_cli.register,
    docs_cli.register,
    history_cli.register,
    known_issues_cli.register,
    models_cli.register,
    probe_cli.register,
    vendors_cli.register,
]


def build_parser() -> argparse.ArgumentParser:
    parser = HilParser(
        prog="hil",
        description="npu-hil: the limits NPU vendors document, checked on the vendor's "
        "simulator and on boards. The main job is the constraint suites, run by pytest: "
        "tox -- suites (or pytest suites --platform P); they write a results directory "
        "with report.html. These commands read and compare results (report, diff, repro), "
        "run your own models (run, reduce), search for real limits (probe), and look after "
        "boards, caches, documents and SDK releases.",
        epilog="hil COMMAND --help describes a command; the documentation is in docs/.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = cast(
        "Subparsers", parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    )
    for register in [*REGISTRARS, *vendor_commands("hil")]:
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    with quiet_stdout():  # ``hil ... | head``: no BrokenPipeError, the work still finishes
        args = build_parser().parse_args(argv)
        code: int = args.handler(args)
    return code
