"""The README's set-up as a newcomer runs it: a user who is not root, in a fresh clone, with
the machine's Python (Debian's refuses ``pip install`` outside a virtual environment, PEP
668) and nothing of this user's own set up or cached before.

``HIL_SETUP_AS_USER`` names that user, and ``.ci/run`` sets it: as root the test makes the
user (``useradd -m``) when missing and runs the commands as them with ``runuser``, in an
environment of nothing but their home, a plain PATH and the machine's proxies and package
sources. The clone is of the commit checked out here (committed work only).

The first command builds the user's whole tox environment, several minutes. What keeps that
short is root's pip configuration handed on as ``PIP_*`` variables (a CI runner's mirror or
local wheels, such as a CPU build of torch, the largest download), since root's own file is
out of the user's reach; no cache of root's is shared, which would hide a step the newcomer
must take, so the run also shows the set-up with empty caches.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import paths
from tests.helpers.readme import set_up_commands

USER = os.environ.get("HIL_SETUP_AS_USER", "")
PROXIES = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
SELECTION = "-m float16 -k Pow"  # fifteen cases, as the README's first run

pytestmark = pytest.mark.skipif(not USER, reason="HIL_SETUP_AS_USER names no user (.ci/run does)")


@pytest.fixture(scope="module")
def newcomer() -> pwd.struct_passwd:
    if os.geteuid() != 0:
        pytest.fail(f"HIL_SETUP_AS_USER={USER}: making and becoming that user needs root")
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", USER], check=True, timeout=60)
        return pwd.getpwnam(USER)


@pytest.fixture
def clone(newcomer: pwd.struct_passwd, request: pytest.FixtureRequest) -> Path:
    """A fresh clone of this checkout's commit in the newcomer's home, theirs. It stays there
    after the test: removing the tox environment the set-up builds took five minutes on a
    loaded machine, nearly as long as building it, so the test's next run removes it before cloning
    again, and a CI machine, discarded after the run, never does."""
    folder = Path(newcomer.pw_dir) / f"npu-hil-{request.node.originalname.removeprefix('test_')}"
    if folder.exists():
        shutil.rmtree(folder)
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(paths.ROOT), str(folder)],
        check=True,
        timeout=300,
    )
    subprocess.run(["chown", "-R", f"{newcomer.pw_uid}:{newcomer.pw_gid}", str(folder)], check=True)
    return folder


def package_sources() -> dict[str, str]:
    """The proxies and pip settings root's pip runs with, as variables (``PIP_FIND_LINKS``...)."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    pip = {
        "PIP_" + key.upper().replace("-", "_"): value
        for key, value in re.findall(r"^(?:global|install|:env:)\.([\w-]+)='(.*)'$", listed, re.M)
    }
    return {k: v for k, v in os.environ.items() if k in PROXIES} | pip


def as_newcomer(
    newcomer: pwd.struct_passwd, clone: Path, command: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """``command`` in bash, in the clone, as the newcomer would type it after logging in."""
    login = {
        "HOME": newcomer.pw_dir,
        "USER": newcomer.pw_name,
        "LOGNAME": newcomer.pw_name,
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }
    settings = [f"{k}={v}" for k, v in (package_sources() | login | env).items()]
    return subprocess.run(
        ["runuser", "-u", newcomer.pw_name, "--", "env", "-i", *settings, "bash", "-c", command],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=3600,
    )


def test_without_postgresql_the_checks_command_says_so_before_building_anything(
    newcomer: pwd.struct_passwd, clone: Path, tmp_path: Path
) -> None:
    """PostgreSQL hidden the way tools/provision.sh looks for it (HIL_POSTGRES_BINS, a folder
    that is not there) rather than uninstalled, which would take it from every other test."""
    _, checks = set_up_commands()
    done = as_newcomer(newcomer, clone, checks, HIL_POSTGRES_BINS=str(tmp_path / "none"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines()[-1] == (
        "npu-hil's checks job needs postgresql: install first "
        "(Debian/Ubuntu: sudo apt-get install postgresql), or run as root to have it done"
    )
    assert done.stdout == ""
    assert not (clone / ".venv-tox").exists() and not (clone / ".tox").exists()


def test_the_set_up_and_main_job_run_as_a_newcomer(
    newcomer: pwd.struct_passwd, clone: Path
) -> None:
    suites, _ = set_up_commands()
    done = as_newcomer(newcomer, clone, f"{suites} {SELECTION}")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "npu-hil verdicts" in output
    assert (clone / "results" / "report.html").is_file()
    # tox's environment is the newcomer's, made with the machine's Python, not root's.
    config = (clone / ".tox" / "hil" / "pyvenv.cfg").read_text()
    assert "/root/" not in config
