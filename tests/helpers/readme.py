"""The README as the tests read it: its set-up commands and its console blocks."""

from __future__ import annotations

from tests.helpers import paths

README = (paths.ROOT / "README.md").read_text(encoding="utf-8")


def section(heading: str) -> str:
    """The text under ``## heading``, to the next heading of that level."""
    return README.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def set_up_commands() -> list[str]:
    """The set-up's commands, comments and blank lines left out: the main job's, the checks'."""
    block = section("Set-up: two commands").split("```sh\n", 1)[1].split("\n```", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith("#")]
