"""A vendor's own subcommands reach ``hil`` only through its ``Vendor.commands`` record."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

import pytest

from harness import vendors
from harness.cli import build_parser, main
from harness.terminal import emit

if TYPE_CHECKING:
    from harness.terminal import Subparsers


def _hello(commands: Subparsers) -> None:
    parser = commands.add_parser("hello", help="a second vendor's command")
    parser.add_argument("--name", required=True)
    parser.set_defaults(handler=lambda args: emit(f"hello {args.name}\n") or 3)


def _choices(parser: argparse.ArgumentParser, *path: str) -> list[str]:
    for name in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices)


@pytest.mark.parametrize("group", ["hil", "boards", "layout"])
def test_each_group_offers_every_vendors_commands(
    group: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rknn = vendors.vendor_named("rknn")
    other = dataclasses.replace(rknn, name="other", commands={group: [_hello]})
    path = [] if group == "hil" else [group]
    before = _choices(build_parser(), *path)
    assert "hello" not in before
    every = vendors.vendors()
    monkeypatch.setattr(vendors, "vendors", lambda: (*every, other))
    assert _choices(build_parser(), *path) == [*before, "hello"]
    assert main([*path, "hello", "--name", "npu"]) == 3
    assert capsys.readouterr().out == "hello npu\n"


def test_the_rknn_commands_are_the_vendors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the vendor's record (no commands), hil has no RKNN subcommands left."""
    rknn = vendors.vendor_named("rknn")
    mute = dataclasses.replace(rknn, commands={})
    monkeypatch.setattr(vendors, "vendors", lambda: (mute,))
    parser = build_parser()
    assert "sdk" not in _choices(parser)
    assert "build-runner" not in _choices(parser, "boards")
    assert not [name for name in _choices(parser, "layout") if name.startswith("rknn")]
