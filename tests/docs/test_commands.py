"""Every command block of README.md, docs/ and boards/README.md (a fenced ``sh``, ``console``
or ``cron`` block) runs here, or says in the doc itself why it cannot: an HTML comment on the
line before it, ``<!-- needs a board -->`` (or what else it needs that a test machine lacks),
or ``<!-- run by tests/... -->`` naming the test that runs it.

The blocks run here run in one folder, in the order of ``RUN``, so that the one simulator run
(getting-started's selection) is what the blocks after it read. A ``console`` block's ``$``
lines are run as written (``tox`` is the tox job, ``tests.helpers.tox_shim``; ``.tox/hil/bin/``
this environment's) and the lines after each are what it must print: each stretch between
``...`` lines printed as it stands, in order. An ``sh`` block's lines are run, each to exit 0.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import paths
from tests.helpers.marks import needs_toolkit
from tests.helpers.readme import assert_printed_in_order
from tests.helpers.tox_shim import tox_env
from tests.helpers.user_models import five_node_model, mynet_model

ROOT = paths.ROOT
PAGES = [ROOT / "README.md", ROOT / "boards" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
KINDS = ("sh", "console", "cron")
MARK = re.compile(r"<!-- (needs .+|run by (tests/\S+)) -->")

# The blocks this test runs, in this order, by page and first command: the exit statuses its
# commands may end with (``hil docs diff`` is 1 when the versions differ, ``hil run`` when the
# model's verdict fails), and what narrows a long one's pytest selection.
RUN: list[tuple[str, str, tuple[int, ...], str]] = [
    ("docs/catalogue.md", "hil docs show Transpose", (0, 1), ""),
    ("docs/catalogue.md", "hil layout horizon", (0,), ""),
    ("docs/getting-started.md", "HIL_RESULTS=results-pow tox -- suites", (0,), ""),
    ("docs/report.md", ".tox/hil/bin/python tools/audit_verdicts.py", (0,), ""),
    ("docs/probe.md", "hil probe", (0,), ""),
    ("docs/reproducing.md", "hil run five.onnx", (0, 1), ""),
    ("docs/reproducing.md", "hil reduce results", (0, 1), ""),
    ("docs/reproducing.md", "pytest suites/test_models.py", (0,), " -k test_transpose_default"),
    ("docs/reproducing.md", "hil run mynet.onnx", (1, 2), ""),
    ("docs/reproducing.md", "mkdir vendor", (0, 2), ""),
]


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    kind: str
    lines: tuple[str, ...]
    mark: str  # the HTML comment before it: "needs ...", "run by tests/...", or ""

    @property
    def commands(self) -> list[str]:
        if self.kind == "console":
            return [line[2:] for line in self.lines if line.startswith("$ ")]
        return [line for line in self.lines if line.strip() and not line.startswith("#")]

    def __str__(self) -> str:
        first = self.commands[0] if self.commands else ""
        return f"{self.page}:{self.line} ({self.kind}) {first[:70]}"


def command_blocks() -> list[Block]:
    found = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        fence = None
        for number, line in enumerate(lines):
            if fence is None and line.startswith("```"):
                fence = number
            elif fence is not None and line.startswith("```"):
                kind = lines[fence][3:].strip()
                if kind in KINDS:
                    mark = MARK.fullmatch(lines[fence - 1].strip()) if fence else None
                    body = tuple(lines[fence + 1 : number])
                    name = page.relative_to(ROOT).as_posix()
                    found.append(Block(name, fence + 1, kind, body, mark[1] if mark else ""))
                fence = None
    return found


def _runs_here(block: Block) -> tuple[tuple[int, ...], str] | None:
    """The exit statuses and the narrowing of a block this test runs; None for the others."""
    for page, first, statuses, narrowed in RUN:
        if block.page == page and block.commands and block.commands[0].startswith(first):
            return statuses, narrowed
    return None


def test_every_command_block_runs_or_says_what_it_needs() -> None:
    blocks = command_blocks()
    assert len(blocks) > 15
    for block in blocks:
        if block.mark.startswith("run by "):
            assert (ROOT / block.mark.removeprefix("run by ")).is_file(), block
        ran = _runs_here(block) is not None
        assert ran != bool(block.mark), (
            f"{block}: run it in {Path(__file__).name} (RUN) or mark it in the doc "
            "<!-- needs a board --> (or what else it needs)"
            if not ran
            else f"{block}: run here and marked {block.mark!r}"
        )
    assert len([b for b in blocks if _runs_here(b)]) == len(RUN)  # each entry a block still


def _command(text: str) -> str:
    """A doc's command as it runs here: its trailing comment dropped, ``.tox/hil/bin/`` this
    environment's."""
    text = re.sub(r"\s+# .*$", "", text)
    return text.replace(".tox/hil/bin/", f"{Path(sys.executable).parent}/")


def _steps(block: Block) -> list[tuple[str, list[str]]]:
    """(command, the lines the doc shows it printing) in order."""
    if block.kind != "console":
        return [(command, []) for command in block.commands]
    steps: list[tuple[str, list[str]]] = []
    for line in block.lines:
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return steps


@needs_toolkit
def test_the_command_blocks_run_and_print_what_the_docs_show(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    env = tox_env(tmp_path / "bin")
    work = tmp_path / "work"  # a checkout's top folder, as the docs' commands assume
    work.mkdir()
    for name in ("suites", "tools"):
        (work / name).symlink_to(ROOT / name)
    (work / "five.onnx").write_bytes(five_node_model().SerializeToString())  # reproducing.md's
    (work / "mynet.onnx").write_bytes(mynet_model().SerializeToString())
    guide = (ROOT / "docs" / "reproducing.md").read_text(encoding="utf-8")
    settings = guide.split("```yaml\n", 1)[1].split("\n```", 1)[0]  # the walk-through's rknn.yaml
    (work / "rknn.yaml").write_text(settings + "\n", encoding="utf-8")
    blocks = command_blocks()
    for page, first, statuses, narrowed in RUN:
        (block,) = [b for b in blocks if b.page == page and b.commands[0].startswith(first)]
        for command, shown in _steps(block):
            run = subprocess.run(
                ["bash", "-c", _command(command) + narrowed],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=1800,
                env=env,
            )
            printed = (run.stdout + run.stderr).replace(f"{work}/", "")
            assert run.returncode in statuses, (
                f"{block}: {command}: exit {run.returncode}\n{printed[-6000:]}"
            )
            assert_printed_in_order(shown, printed, str(block))
