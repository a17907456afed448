"""tools/tox-job.sh's checks job: its exit status is the first failing step's, or 0.

The fault under test is the script's shell logic, so every tool it calls is a stand-in on
PATH (logging its arguments, exiting as told) and ``tools/provision.sh`` is one in the
working folder; the real tools are the checks themselves.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from tests.helpers import paths

SCRIPT = paths.ROOT / "tools" / "tox-job.sh"
BASH = shutil.which("bash") or "/bin/bash"
TOOLS = ("ruff", "mypy", "lint-imports", "mkdocs", "pytest", "coverage")


def checks(tmp_path: Path, *args: str, fail: tuple[str, int] = ("", 0)) -> tuple[int, str]:
    """Run ``tox-job.sh checks ARGS`` with stand-ins exiting 0, but the call starting with
    ``fail[0]`` with ``fail[1]``; returns the job's exit status and the calls, one a line."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bash").symlink_to(BASH)
    log = tmp_path / "calls.log"
    for tool in (*TOOLS, "provision.sh"):
        where = tmp_path / "tools" if tool == "provision.sh" else bin_dir
        where.mkdir(exist_ok=True)
        call = f'"{tool} $*"'
        fails = f'case {call} in "{fail[0]}"?*) exit {fail[1]} ;; esac'
        (where / tool).write_text(f"#!{BASH}\necho {call} >> {log}\n{fails}\n")
        (where / tool).chmod(0o755)
    done = subprocess.run(
        [BASH, str(SCRIPT), "checks", *args],
        cwd=tmp_path,
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, log.read_text()


def test_a_narrowed_run_that_passes_exits_0_without_coverage(tmp_path: Path) -> None:
    status, calls = checks(tmp_path, "tests/tools", "-x")
    assert status == 0
    assert calls.splitlines()[-1] == "pytest tests/tools -x"
    assert "coverage" not in calls


def test_the_whole_run_reports_coverage_and_exits_with_its_status(tmp_path: Path) -> None:
    status, calls = checks(tmp_path, fail=("coverage report", 2))
    assert status == 2  # below the floor
    assert calls.splitlines()[-2:] == [
        "coverage run -m pytest",
        "coverage report --skip-covered --skip-empty",
    ]


@pytest.mark.parametrize("args", [(), ("tests/tools",)], ids=["whole", "narrowed"])
def test_a_failing_step_is_the_exit_status(tmp_path: Path, args: tuple[str, ...]) -> None:
    status, calls = checks(tmp_path, *args, fail=("mypy", 1))
    assert status == 1
    assert calls.splitlines()[-1] == "mypy "
