"""The documentation site's CLI reference, made from the argument parsers themselves.

An MkDocs hook (mkdocs.yml, ``hooks:``): every build adds the page ``reference/cli.md``,
written from ``harness.cli.build_parser()`` (every ``hil`` command and subcommand) and the
pytest plugin's ``pytest_addoption`` (the suites' options), so the reference cannot drift from
the code. ``python tools/cli_reference.py`` prints the same Markdown.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

PAGE = "reference/cli.md"

INTRO = """\
# CLI reference

Generated from the argument parsers at every build of this site (`tools/cli_reference.py`):
what `--help` prints, command by command. The pages of the guide say when to use what.
"""


def markdown() -> str:
    """The whole reference page, the defaults under the home folder of the machine building
    it written under ``~``, as every reader's are."""
    from harness.cli import build_parser

    parts = [INTRO, "## pytest options (`pytest suites ...`)\n", _pytest_options()]
    parts.append(_command(build_parser(), "hil", level=2))
    home = str(Path.home()).rstrip("/")
    text = "\n".join(parts)
    return text.replace(f"{home}/", "~/") if home else text


def _command(parser: argparse.ArgumentParser, name: str, level: int) -> str:
    out = [f"{'#' * level} `{name}`\n"]
    if parser.description:
        out.append(_plain(parser.description) + "\n")
    out.append("```text\n" + parser.format_usage().strip() + "\n```\n")
    formatter = parser._get_formatter()
    rows = []
    subcommands: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for sub, subparser in action.choices.items():
                rows.append((f"`{sub}`", helps.get(sub) or ""))
                subcommands.append((sub, subparser))
            continue
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        rows.append((_spelling(action), formatter._expand_help(action) if action.help else ""))
    if rows:
        out.append("| argument | meaning |\n|---|---|")
        out.extend(f"| {_cell(arg)} | {_cell(_plain(text))} |" for arg, text in rows)
        out.append("")
    for sub, subparser in subcommands:
        out.append(_command(subparser, f"{name} {sub}", min(level + 1, 4)))
    return "\n".join(out)


def _spelling(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(f"`{o}`" for o in action.option_strings)
    if action.nargs == 0:
        return names
    metavar = action.metavar or (
        "{" + ",".join(map(str, action.choices)) + "}" if action.choices else action.dest.upper()
    )
    return f"{names} `{metavar}`"


def _pytest_options() -> str:
    from _pytest.config.argparsing import Parser

    from harness.plugin import options

    parser = Parser(_ispytest=True)  # what pytest itself hands pytest_addoption
    options.pytest_addoption(parser)
    rows = ["| option | meaning |", "|---|---|"]
    for group in parser._groups:
        for option in group.options:
            attrs: dict[str, Any] = option.attrs()
            if attrs.get("help") == argparse.SUPPRESS:
                continue
            names = ", ".join(f"`{n}`" for n in option.names())
            if attrs.get("nargs") != 0:  # a flag takes no value
                choices = attrs.get("choices")
                metavar = attrs.get("metavar") or (
                    "{" + ",".join(choices) + "}" if choices else option.dest.upper()
                )
                names += f" `{metavar}`"
            # a help text as argparse formats it: "%%" (harness.history.location) is "%"
            meaning = str(attrs.get("help", "")).replace("%%", "%")
            rows.append(f"| {_cell(names)} | {_cell(_plain(meaning))} |")
    return "\n".join(rows) + "\n"


def _plain(text: str) -> str:
    from harness.names import plain

    return plain(text)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated page to the site's files."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=markdown()))
    return files


if __name__ == "__main__":
    print(markdown())
