"""tools/provision.sh, the set-up's first step on a fresh machine (and the checks job's):
Python 3.11's venv for every job, and for the checks sshd, chromium and postgresql, are
installed through apt-get when run as root, else named in one line, and the job stops; the
ARM cross compilers and qemu-user are installed too, else named, and the job goes on (the
tests that need them skip).

The machine running this has them, so each test hides them: PATH is a folder of stand-ins
(``id`` for root or not, an ``apt-get`` that records its calls and may provide the tools),
HIL_TOOL_DIRS, where the script looks beside PATH, is empty, and HIL_POSTGRES_BINS, where it
looks for PostgreSQL's initdb, is a folder of the test's (``initdb`` in ``have``). The real
uninstalled machine is the README's fresh-machine check.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.helpers import paths

SCRIPT = paths.ROOT / "tools" / "provision.sh"
BASH = shutil.which("bash") or "/bin/bash"
ALL = "openssh-server chromium postgresql"
CROSS = (
    "arm-linux-gnueabihf-gcc",
    "aarch64-linux-gnu-gcc",
    "qemu-arm-static",
    "qemu-aarch64-static",
)
OPTIONAL = (
    "gcc-arm-linux-gnueabihf libc6-dev-armhf-cross gcc-aarch64-linux-gnu libc6-dev-arm64-cross "
    "qemu-user-static"
)
REQUIRED = ("python3.11", "sshd", "chromium", "initdb")
NEEDS = "npu-hil's checks job needs"


def stand_in(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!{BASH}\n{body}\n")
    path.chmod(0o755)


def machine(
    tmp_path: Path, *, have: tuple[str, ...] = (), uid: int = 0, apt: str | None = ""
) -> Path:
    """A PATH folder: the tools in ``have``, ``id -u`` printing ``uid``, and an apt-get running
    ``apt`` after logging its arguments (None: no apt-get)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("mktemp", "tail", "rm"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    stand_in(bin_dir, "id", f"echo {uid}")
    postgres = tmp_path / "postgres-bin"
    postgres.mkdir()
    for tool in have:
        stand_in(postgres if tool == "initdb" else bin_dir, tool, "exit 0")
    if apt is not None:
        log = tmp_path / "apt.log"
        stand_in(
            bin_dir, "apt-get", f'echo "DEBIAN_FRONTEND=${{DEBIAN_FRONTEND:-}} $*" >> {log}\n{apt}'
        )
    return bin_dir


def provision(bin_dir: Path, *job: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(bin_dir), "HIL_TOOL_DIRS": "", "HOME": os.environ.get("HOME", "/")}
    env["HIL_POSTGRES_BINS"] = str(bin_dir.parent / "postgres-bin")
    return subprocess.run(
        [BASH, str(SCRIPT), *job], capture_output=True, text=True, env=env, timeout=60
    )


def apt_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "apt.log"
    return log.read_text().splitlines() if log.exists() else []


def test_nothing_to_do_when_all_are_there(tmp_path: Path) -> None:
    done = provision(machine(tmp_path, have=REQUIRED + CROSS))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert apt_calls(tmp_path) == []


@pytest.mark.parametrize(("uid", "apt"), [(1000, ""), (0, None)], ids=["not root", "no apt-get"])
def test_without_root_or_apt_get_it_stops_at_once_naming_the_packages(
    tmp_path: Path, uid: int, apt: str | None
) -> None:
    done = provision(machine(tmp_path, have=("python3.11", *CROSS), uid=uid, apt=apt))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert (
        f"{NEEDS} {ALL}: install first (Debian/Ubuntu: sudo apt-get install {ALL})" in done.stderr
    )
    assert apt_calls(tmp_path) == []


def test_as_root_it_installs_what_is_missing_quietly(tmp_path: Path) -> None:
    sshd = tmp_path / "bin" / "sshd"
    chmod = shutil.which("chmod") or "/bin/chmod"
    provides = f'[ "$1" = install ] && echo "exit 0" > {sshd} && {chmod} +x {sshd}; exit 0'
    done = provision(
        machine(tmp_path, have=("python3.11", "chromium", "initdb", *CROSS), apt=provides)
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "npu-hil: installing openssh-server (apt-get)\n"
    assert apt_calls(tmp_path) == [
        "DEBIAN_FRONTEND= update -qq",
        "DEBIAN_FRONTEND=noninteractive install -y -qq --no-install-recommends openssh-server",
    ]


@pytest.mark.parametrize(
    ("apt", "why"),
    [
        (
            'echo "E: Unable to locate package chromium" >&2; exit 100',
            "apt-get could not install it",
        ),
        ("exit 0", "still missing after apt-get"),
    ],
)
def test_a_failed_install_stops_naming_the_packages(tmp_path: Path, apt: str, why: str) -> None:
    done = provision(machine(tmp_path, have=("python3.11",), apt=apt))
    assert done.returncode == 1
    last = done.stderr.splitlines()[-1]
    assert last == f"{NEEDS} {ALL}: {why}; install first and run again"
    assert not any("qemu" in call for call in apt_calls(tmp_path))  # the job stopped first
    if "locate" in apt:
        assert "E: Unable to locate package chromium" in done.stderr  # apt-get's own words


def test_sshd_off_the_users_path_counts_as_there(tmp_path: Path) -> None:
    """As the tests find it: /usr/sbin/sshd is off a normal user's PATH."""
    sbin = tmp_path / "sbin"
    sbin.mkdir()
    stand_in(sbin, "sshd", "exit 0")
    have = ("python3.11", "chromium", "initdb", *CROSS)
    env = {"PATH": str(machine(tmp_path, have=have)), "HIL_TOOL_DIRS": str(sbin)}
    env["HIL_POSTGRES_BINS"] = str(tmp_path / "postgres-bin")
    done = subprocess.run([BASH, str(SCRIPT)], capture_output=True, text=True, env=env)
    assert (done.returncode, done.stderr) == (0, "")


def test_without_root_missing_cross_tools_are_named_and_the_job_goes_on(tmp_path: Path) -> None:
    done = provision(machine(tmp_path, have=(*REQUIRED, "qemu-arm-static"), uid=1000))
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == (
        f"npu-hil tests: the C runner's ARM tests skip without {OPTIONAL} "
        f"(Debian/Ubuntu: sudo apt-get install {OPTIONAL})\n"
    )
    assert apt_calls(tmp_path) == []


def test_as_root_cross_tools_are_installed_apart_from_the_required_ones(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    chmod = shutil.which("chmod") or "/bin/chmod"

    def provides(tools: Sequence[str]) -> str:
        return " ".join(f'echo "exit 0" >{bin_dir / t} && {chmod} +x {bin_dir / t};' for t in tools)

    apt = (
        f'case "$*" in *openssh-server*) {provides(["sshd"])} ;; '
        f"*qemu-user-static*) {provides(CROSS)} ;; esac; exit 0"
    )
    done = provision(machine(tmp_path, have=("python3.11", "chromium", "initdb"), apt=apt))
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        f"npu-hil: installing openssh-server (apt-get)\nnpu-hil: installing {OPTIONAL} (apt-get)\n"
    )
    install = "DEBIAN_FRONTEND=noninteractive install -y -qq --no-install-recommends"
    assert apt_calls(tmp_path) == [
        "DEBIAN_FRONTEND= update -qq",
        f"{install} openssh-server",
        "DEBIAN_FRONTEND= update -qq",
        f"{install} {OPTIONAL}",
    ]


def test_as_root_a_failed_cross_install_is_named_and_the_job_goes_on(tmp_path: Path) -> None:
    apt = 'echo "E: Unable to locate package qemu-user-static" >&2; exit 100'
    done = provision(machine(tmp_path, have=REQUIRED, apt=apt))
    assert done.returncode == 0
    assert "E: Unable to locate package qemu-user-static" in done.stderr  # apt-get's own words
    assert done.stderr.splitlines()[-1] == (
        f"npu-hil tests: the C runner's ARM tests skip without {OPTIONAL} "
        f"(Debian/Ubuntu: sudo apt-get install {OPTIONAL})"
    )


def python(bin_dir: Path, *, venv: bool) -> None:
    """A python3.11 whose ``import ensurepip`` works only with ``venv``, as Debian's works only
    once python3.11-venv is installed."""
    stand_in(bin_dir, "python3.11", f"exit {0 if venv else 1}")


@pytest.mark.parametrize("job", ["suites", "sdk-matrix"])
def test_the_main_job_needs_python_s_venv_and_nothing_the_tests_need(
    tmp_path: Path, job: str
) -> None:
    bin_dir = machine(tmp_path, uid=1000)
    python(bin_dir, venv=False)
    done = provision(bin_dir, job)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"npu-hil's {job} job needs python3.11-venv: install first "
        "(Debian/Ubuntu: sudo apt-get install python3.11-venv), or run as root to have it done\n"
    )
    python(bin_dir, venv=True)
    assert provision(bin_dir, job).returncode == 0


def test_without_python_3_11_it_names_the_interpreter_too(tmp_path: Path) -> None:
    done = provision(machine(tmp_path, have=(*REQUIRED[1:], *CROSS), uid=1000))
    assert done.returncode == 1
    assert f"{NEEDS} python3.11 python3.11-venv: install first" in done.stderr


def test_as_root_python_s_venv_is_installed_with_the_tests_parts(tmp_path: Path) -> None:
    done = provision(machine(tmp_path, have=("sshd", "initdb", *CROSS), apt="exit 0"))
    assert done.returncode == 1  # the stand-in apt-get installs nothing
    assert "npu-hil: installing python3.11 python3.11-venv chromium (apt-get)" in done.stderr


def test_an_unknown_job_is_refused_by_name(tmp_path: Path) -> None:
    done = provision(machine(tmp_path, have=REQUIRED + CROSS), "suite")
    assert done.returncode == 2
    assert done.stderr == (
        "tools/provision.sh JOB: JOB is 'checks', 'suites' or 'sdk-matrix', not 'suite'\n"
    )
