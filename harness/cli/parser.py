"""The argument parser every ``hil`` command is built with.

On top of argparse: a misspelled option is reported with the usage of the subcommand it was
given to, not of ``hil`` (argparse leaves unknown arguments to the top-level parser), with
"did you mean" for options and for commands; every subcommand has a description (its help
line when it brings none); help texts are plain text (docstrings' reST literals lose their
backquotes); and an option renamed keeps its old spelling for one release, with a warning.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import Any

from harness.names import plain, suggestion
from harness.terminal import emit

# the innermost parser that read the arguments, set by each parser as it starts
_PARSER = "_hil_parser"
_CHOICE = re.compile(r"invalid choice: '([^']*)'( \(choose from (.*)\))?")


class HilParser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if isinstance(kwargs.get("description"), str):
            kwargs["description"] = plain(kwargs["description"])
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Subcommands)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        if isinstance(kwargs.get("help"), str):
            kwargs["help"] = plain(kwargs["help"])
        return super().add_argument(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        namespace = argparse.Namespace() if namespace is None else namespace
        setattr(namespace, _PARSER, self)  # a subcommand's parser overwrites it with its own
        return super().parse_known_args(args, namespace)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        innermost: HilParser = getattr(parsed, _PARSER, self)
        delattr(parsed, _PARSER)
        if extras:
            innermost.error(innermost._unrecognized(extras))
        return parsed

    def _unrecognized(self, extras: list[str]) -> str:
        shown = [action for action in self._actions if action.help != argparse.SUPPRESS]
        options = [o for action in shown for o in action.option_strings]  # not old spellings
        hints = [
            suggestion(extra.partition("=")[0], options) for extra in extras if extra[:1] == "-"
        ]
        return f"unrecognized arguments: {' '.join(extras)}" + next(filter(None, hints), "")

    def error(self, message: str) -> Any:  # NoReturn in argparse
        match = _CHOICE.search(message)
        if match and match.group(3):
            listed = match.group(3)
            choices = re.findall(r"'([^']*)'", listed) or [c.strip() for c in listed.split(",")]
            hint = suggestion(match.group(1), choices)
            message = message.replace(match.group(0), f"invalid choice: '{match.group(1)}'{hint}")
            message += f" (choose from {', '.join(choices)})"
        super().error(message)


class _Subcommands(argparse._SubParsersAction):
    """Subcommands whose parser always has a description: its help line unless it has one."""

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if isinstance(kwargs.get("help"), str):
            kwargs["help"] = plain(kwargs["help"])
            kwargs.setdefault("description", kwargs["help"])
        return super().add_parser(name, **kwargs)


def deprecated_alias(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    """Let ``old`` stand for the option ``new`` for one more release: hidden from ``--help``,
    the value goes where ``new``'s goes, and a line on stderr names the new spelling."""
    target = next(a for a in parser._actions if new in a.option_strings)
    parser.add_argument(
        old,
        dest=target.dest,
        type=target.type or str,
        metavar=target.metavar,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
        action=_Deprecated,
        new=new,
    )


class _Deprecated(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, new: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        emit(
            f"{parser.prog}: warning: {option_string} is deprecated and will go in the next "
            f"release; use {self.new}\n",
            err=True,
        )
        setattr(namespace, self.dest, values)
