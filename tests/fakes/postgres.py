"""A throwaway PostgreSQL cluster on 127.0.0.1 for the results store's tests.

The distribution's ``postgresql`` package (tools/provision.sh installs it); ``initdb`` and
``postgres`` refuse to run as root, so as root the cluster belongs to the ``postgres`` user,
in a fresh folder of its own. It listens on a free port of 127.0.0.1 only, with a random
password (scram-sha-256), and is stopped and removed by ``stop``.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest


def binaries() -> Path | None:
    """The newest installed PostgreSQL's bin folder, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_major)
    return Path(found[-1]).parent if found else None


def _major(path: str) -> int:
    return int(Path(path).parent.parent.name)


def need_binaries() -> Path:
    """The bin folder; a skip only where PostgreSQL is missing and cannot be installed here
    (not root), a failure where provisioning should have installed it."""
    found = binaries()
    if found is not None:
        return found
    if os.geteuid() != 0:
        pytest.skip("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    pytest.fail("PostgreSQL is not installed: tools/provision.sh installs it")


class Cluster:
    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.folder = Path(tempfile.mkdtemp(prefix="npu-hil-pg-"))
        self.data = self.folder / "data"
        self.password = secrets.token_urlsafe(18)
        self.port = 0
        self.user = "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        if os.geteuid() == 0:
            entry = pwd.getpwnam(self.user)
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        self.folder.chmod(0o700)

    def _run(self, *command: str) -> subprocess.CompletedProcess[str]:
        prefix = ["runuser", "-u", self.user, "--"] if os.geteuid() == 0 else []
        return subprocess.run(
            [*prefix, *command], capture_output=True, text=True, timeout=120, check=False
        )

    def start(self) -> None:
        pwfile = self.folder / "pw"
        pwfile.write_text(self.password + "\n")
        if os.geteuid() == 0:
            entry = pwd.getpwnam(self.user)
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        pwfile.chmod(0o600)
        done = self._run(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "hil",
            "--pwfile",
            str(pwfile),
            "--auth=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
        )
        pwfile.unlink()
        if done.returncode:
            raise RuntimeError(f"initdb failed: {done.stdout}{done.stderr}")
        for _attempt in range(3):  # a free port may be taken between asking and listening
            self.port = _free_port()
            options = f"-p {self.port} -h 127.0.0.1 -k {self.folder} -c fsync=off"
            done = self._run(
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.folder / "log"),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            )
            if done.returncode == 0:
                return
        log = (self.folder / "log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"postgres did not start: {done.stdout}{done.stderr}{log}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://hil:{self.password}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A fresh database of its own for one test; its URL."""
        import psycopg

        name = "hil_" + secrets.token_hex(6)
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.data.exists():
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
