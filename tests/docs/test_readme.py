"""The README says what really happens: its set-up commands are what CI runs, with the tox
that tox.ini requires, and pick the reader's chip among the platforms there are (a newcomer
running them: test_newcomer.py); its first run, run here as the README writes it (the tox job's
script, on the simulator), prints what the README shows. The same real run's report.html is
rendered in headless Chromium; ``HIL_README_SCREENSHOT=docs/images/report.png`` keeps its
first screen there, the README's picture."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.helpers import paths
from tests.helpers.browser import Browser
from tests.helpers.marks import needs_toolkit
from tests.helpers.readme import README, assert_printed_in_order, section, set_up_commands

from harness.vendors import run_vendor

ROOT = paths.ROOT
SCREENSHOT = os.environ.get("HIL_README_SCREENSHOT")
FIRST_SCREEN = (1280, 900)
COMMAND = "HIL_RESULTS=results-pow tox -- suites "


def _console_block(heading: str) -> list[str]:
    return section(heading).split("```console\n", 1)[1].split("\n```", 1)[0].splitlines()


def test_the_set_up_commands_are_what_ci_runs_with_the_tox_tox_ini_requires() -> None:
    (requires,) = re.findall(r"^requires = (tox>=[\d.]+)$", (ROOT / "tox.ini").read_text(), re.M)
    assert (
        f"pip install --quiet --disable-pip-version-check '{requires}'"
        in (ROOT / "tools" / "setup.sh").read_text()
    )
    suites, checks = set_up_commands()
    assert re.fullmatch(
        r"tools/setup\.sh suites && \.venv-tox/bin/tox -- suites --platform \w+", suites
    )
    assert checks == "tools/setup.sh checks && .venv-tox/bin/tox"
    guide = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    block = guide.split("```sh\n", 1)[1].split("\n```")[0]
    assert [line for line in block.splitlines() if line[:1] not in "#"] == [suites, checks]
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.rstrip().splitlines()[-1] == checks


def test_the_chips_the_set_up_offers_are_the_platforms() -> None:
    """The first command names a chip, and the README lists every one the main job runs."""
    (listed,) = re.findall(r"Pick your chip, one of (.*?) \(`hil vendors`", README, re.S)
    chips = re.split(r",\s+|\s+and\s+", listed)
    assert sorted(chips) == sorted(run_vendor(None, ROOT).platforms)  # the pinned vendor's
    suites, _ = set_up_commands()
    assert suites.split("--platform ")[1] in chips


@needs_toolkit
def test_git_ignores_the_results_folders_the_readme_writes() -> None:
    folders = sorted(set(re.findall(r"HIL_RESULTS=(results[\w-]*)", README)))
    assert "results-pow" in folders
    files = [f"{folder}/report.md" for folder in folders]
    check = subprocess.run(
        ["git", "check-ignore", *files], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert check.stdout.split() == files, check.stderr


def test_the_first_run_prints_what_the_readme_shows(tmp_path: Path) -> None:
    lines = _console_block("A first run")
    assert lines[0].startswith(f"$ {COMMAND}")
    args = shlex.split(lines[0].removeprefix(f"$ {COMMAND}"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HIL_RESULTS": str(tmp_path / "results-pow")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    for name in ("CI", "HIL_KNOWN_ISSUES"):  # the job's defaults, as on a user's machine
        env.pop(name, None)
    run = subprocess.run(
        ["bash", "tools/tox-job.sh", "suites", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    output = (run.stdout + run.stderr).replace(f"{tmp_path}{os.sep}", "")
    assert run.returncode == 0, output
    assert_printed_in_order(lines[1:], output, "README, A first run")

    # The README's reading of the report: the overview cell it quotes, and the verdict.
    report = tmp_path / "results-pow" / "report.html"
    (chip,) = re.findall(r"\*\*Operators × platforms\*\*: .*?\(`([^`]+)`", README, re.S)
    (verdict,) = re.findall(r"One verdict, read: `([^`]+)`", README)
    width, height = FIRST_SCREEN
    with Browser() as browser:
        browser.open(report.as_uri(), width, height)
        text = browser.evaluate("document.body.textContent")  # folded parts too
        assert chip in text
        assert verdict in text
        box = browser.evaluate(
            "(() => { const r = document.querySelector('#verdicts + table')"
            ".getBoundingClientRect(); return [r.top, r.bottom]; })()"
        )
        assert 0 <= box[0] < box[1] <= height  # the counts are on the first screen
        if SCREENSHOT:
            browser.screenshot(Path(SCREENSHOT))
