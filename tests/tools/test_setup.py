"""tools/setup.sh, the README's set-up: the job's system parts first (tools/provision.sh), and
nothing built when they are missing; then tox in .venv-tox, once.

The fault under test is the script's order of steps, so it runs from a copy in a folder of
the test's, beside a stand-in provision.sh, with a stand-in python3.11 first on PATH whose
``-m venv`` makes a stand-in environment; each logs its call. The real set-up, a real virtual
environment and tox as a user who is not root, is tests/docs/test_newcomer.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from tests.helpers import paths

BASH = shutil.which("bash") or "/bin/bash"


def script(folder: Path, name: str, body: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(f'#!{BASH}\necho "{name} $*" >> {folder.parent}/calls.log\n{body}\n')
    (folder / name).chmod(0o755)


def set_up(clone: Path, job: str, *, provided: int = 0) -> tuple[int, list[str]]:
    """Run the copy of tools/setup.sh in ``clone`` for ``job``, provision.sh exiting
    ``provided``; returns the exit status and the calls made."""
    (clone / "tools").mkdir(parents=True, exist_ok=True)
    shutil.copy(paths.ROOT / "tools" / "setup.sh", clone / "tools" / "setup.sh")
    script(clone / "tools", "provision.sh", f"exit {provided}")
    venv_python = (
        f'echo "python $*" >> {clone}/calls.log\n'
        f'[ "$3" = install ] && mkdir -p {clone}/.venv-tox/bin && '
        f'printf "#!{BASH}\\n" > {clone}/.venv-tox/bin/tox && chmod +x {clone}/.venv-tox/bin/tox'
    )
    makes_venv = (
        f"mkdir -p {clone}/.venv-tox/bin && "
        f"printf '%s\\n' '#!{BASH}' '{venv_python}' > {clone}/.venv-tox/bin/python && "
        f"chmod +x {clone}/.venv-tox/bin/python"
    )
    script(clone / "bin", "python3.11", makes_venv)
    done = subprocess.run(
        [BASH, str(clone / "tools" / "setup.sh"), job],
        cwd=clone,
        env={"PATH": f"{clone / 'bin'}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    log = clone / "calls.log"
    return done.returncode, log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("job", ["suites", "checks"])
def test_tox_goes_into_the_clone_s_virtual_environment_after_the_job_s_parts(
    tmp_path: Path, job: str
) -> None:
    status, calls = set_up(tmp_path, job)
    assert status == 0
    assert calls == [
        f"provision.sh {job}",
        "python3.11 -m venv .venv-tox",
        "python -m pip install --quiet --disable-pip-version-check tox>=4.37",
    ]


def test_missing_system_parts_stop_it_before_anything_is_built(tmp_path: Path) -> None:
    status, calls = set_up(tmp_path, "checks", provided=1)
    assert status == 1
    assert calls == ["provision.sh checks"]
    assert not (tmp_path / ".venv-tox").exists()


def test_a_second_run_only_looks_at_the_system_parts(tmp_path: Path) -> None:
    set_up(tmp_path, "suites")
    (tmp_path / "calls.log").unlink()
    status, calls = set_up(tmp_path, "checks")
    assert (status, calls) == (0, ["provision.sh checks"])
