"""The README as the tests read it: its set-up commands and its console blocks; and how a
doc's console block is held against what its command printed (``assert_printed_in_order``)."""

from __future__ import annotations

import re

from tests.helpers import paths

README = (paths.ROOT / "README.md").read_text(encoding="utf-8")


def section(heading: str) -> str:
    """The text under ``## heading``, to the next heading of that level."""
    return README.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def set_up_commands() -> list[str]:
    """The set-up's commands, comments and blank lines left out: the main job's, the checks'."""
    block = section("Set-up: two commands").split("```sh\n", 1)[1].split("\n```", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def normal(line: str) -> str:
    """A line with what differs between runs made equal: when a run started, pytest's duration,
    and the rule of ``=`` around a heading, whose length follows the duration's."""
    line = re.sub(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00\b", "TIME", line)  # a run's start
    return re.sub(r" in \d+(\.\d+)?s\b", " in Ns", line).strip("= ").strip()


def _stretches(shown: list[str]) -> list[list[str]]:
    """The stretches of a console block between its "..." lines (what a doc leaves out)."""
    found: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == "...":
            found.append([])
        else:
            found[-1].append(normal(line))
    return [stretch for stretch in found if stretch]


def assert_printed_in_order(shown: list[str], printed: str, where: str) -> None:
    """Each stretch of the doc's ``shown`` lines is printed as it stands, in order; ``where``
    names the doc's block in the failure."""
    lines = [normal(line) for line in printed.splitlines()]
    at = 0
    for stretch in _stretches(shown):
        starts = [i for i in range(at, len(lines)) if lines[i : i + len(stretch)] == stretch]
        assert starts, (
            f"{where}: not printed as the doc shows:\n"
            + "\n".join(stretch)
            + f"\n--- printed:\n{printed[-6000:]}"
        )
        at = starts[0] + len(stretch)
