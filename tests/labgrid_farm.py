"""A real labgrid farm on 127.0.0.1 for the farm tests: ``labgrid-coordinator``, one
``labgrid-exporter`` whose NetworkService resources point at loopback sshd boards, and places
made with ``labgrid-client`` as a farm's admin makes them."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import yaml
from sshd import SshServer, free_port

BIN = Path(sys.executable).parent


class Farm:
    """A coordinator and an exporter in ``root``; ``stop()`` ends both."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen[bytes]] = []
        log = (root / "coordinator.log").open("wb")
        self.processes.append(
            subprocess.Popen(
                [str(BIN / "labgrid-coordinator"), "--listen", self.address],
                cwd=root,  # where it keeps its places.yaml
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"coordinator did not start: {log.name}") from None
                time.sleep(0.2)

    def client(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            [str(BIN / "labgrid-client"), "-x", self.address, *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"labgrid-client {' '.join(args)}: {done.stderr}")
        return done.stdout

    def export(self, boards: dict[str, SshServer]) -> None:
        """One exporter with a NetworkService per board (group = board name)."""
        config = {
            name: {"NetworkService": {"address": "127.0.0.1", "port": server.port,
                                      "username": server.user}}
            for name, server in boards.items()
        }  # fmt: skip
        path = self.root / "exporter.yaml"
        path.write_text(yaml.safe_dump(config))
        log = (self.root / "exporter.log").open("wb")
        self.processes.append(
            subprocess.Popen(
                [str(BIN / "labgrid-exporter"), "-c", self.address, "--name", "exp",
                 "--hostname", "127.0.0.1", str(path)],
                cwd=self.root,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not all(f"exp/{name}/NetworkService" in self.client("resources") for name in boards):
            if time.monotonic() > deadline:
                raise RuntimeError(f"exporter resources did not appear: {log.name}")
            time.sleep(0.5)

    def place(self, name: str, board: str, **tags: str) -> None:
        self.client("-p", name, "create")
        self.client("-p", name, "add-match", f"exp/{board}/NetworkService")
        if tags:
            self.client("-p", name, "set-tags", *(f"{k}={v}" for k, v in tags.items()))

    def acquired(self) -> list[str]:
        """The places acquired now."""
        return self.client("places", "--acquired").split()

    def reservations(self) -> str:
        return self.client("reservations")

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def farm_board_file(
    folder: Path, servers: list[SshServer], sysroot: Path, **labgrid: object
) -> Path:
    """A board file for any place of the farm: the servers' user key (one key pair per server
    in the tests: the first one's, after authorizing it on the others) and their host keys."""
    first = servers[0]
    known_hosts = folder / "known_hosts"
    folder.mkdir(parents=True, exist_ok=True)
    known_hosts.write_text("".join(s.known_hosts.read_text() for s in servers))
    for server in servers[1:]:
        server.authorized_keys.write_text((first.root / "user_ed25519.pub").read_text())
    document = {
        "name": "farm-rk3562",
        "labgrid": labgrid,
        "auth": {"key_file": str(first.user_key)},
        "known_hosts": str(known_hosts),
        "soc": "rk3562",
        "platform": "rk3562",
        "python": sys.executable,
        "workdir": str(folder.parent / "farm work dir" / "{place}"),  # one host, many places
        "runtime": "simulator-stand-in",
        "sysroot": str(sysroot),
    }
    path = folder / "farm-rk3562.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path
