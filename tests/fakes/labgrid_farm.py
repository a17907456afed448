"""A real labgrid farm on 127.0.0.1 for the farm tests: ``labgrid-coordinator``, one
``labgrid-exporter`` whose NetworkService resources point at loopback sshd boards, and places
made with ``labgrid-client`` as a farm's admin makes them."""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml
from tests.fakes.sshd import SshServer, free_port

BIN = Path(sys.executable).parent


class Farm:
    """A coordinator and an exporter in ``root``; ``stop()`` ends both."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen[bytes]] = []
        self.exporters: dict[str, tuple[Path, subprocess.Popen[bytes]]] = {}  # name: config
        self.places: set[str] = set()
        self.processes.append(self._coordinator())
        self._wait_listening()

    def _coordinator(self) -> subprocess.Popen[bytes]:
        log = (self.root / "coordinator.log").open("ab")
        return subprocess.Popen(
            [str(BIN / "labgrid-coordinator"), "--listen", self.address],
            cwd=self.root,  # where it keeps its places.yaml
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"coordinator did not start: {self.root}") from None
                time.sleep(0.2)

    def restart_coordinator(self, down_s: float = 0.0) -> None:
        """Stop the coordinator, wait ``down_s``, start it again on the same port (it keeps
        its places, not their reservations or acquisitions); the exporters, which end when
        their coordinator goes, are started again as a farm's service manager would."""
        # as a farm's coordinator long since would have: its places saved (it saves every 15 s)
        saved = self.root / "places.yaml"
        deadline = time.monotonic() + 60
        while not self.places <= set(
            yaml.safe_load(saved.read_text() if saved.is_file() else "") or {}
        ):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the coordinator did not save its places: {saved}")
            time.sleep(0.5)
        coordinator = self.processes[0]
        coordinator.terminate()
        coordinator.wait(timeout=30)
        for _, exporter in self.exporters.values():
            try:
                exporter.wait(timeout=30)
            except subprocess.TimeoutExpired:
                exporter.kill()
                exporter.wait()
        time.sleep(down_s)
        self.processes[0] = self._coordinator()
        self._wait_listening()
        for name, (config, _) in list(self.exporters.items()):
            self._exporter(name, config)

    def stop_exporter(self, name: str) -> None:
        """Kill exporter ``name`` (as a host that lost power would go)."""
        _, exporter = self.exporters.pop(name)
        exporter.kill()
        exporter.wait()

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

    def export(
        self, boards: dict[str, SshServer], name: str = "exp", power: PowerSwitch | None = None
    ) -> None:
        """Exporter ``name`` with a NetworkService per board (group = board name), and with
        ``power`` a NetworkPowerPort per board on that switch (the board's index in it)."""
        config: dict[str, dict[str, object]] = {
            group: {"NetworkService": {"address": "127.0.0.1", "port": server.port,
                                       "username": server.user}}
            for group, server in boards.items()
        }  # fmt: skip
        if power is not None:
            for group, server in boards.items():
                config[group]["NetworkPowerPort"] = power.port_of(server)
        path = self.root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config))
        self._exporter(name, path)

    def _exporter(self, name: str, config: Path) -> None:
        log = (self.root / f"{name}.log").open("ab")
        process = subprocess.Popen(
            [str(BIN / "labgrid-exporter"), "-c", self.address, "--name", name,
             "--hostname", "127.0.0.1", str(config)],
            cwd=self.root,
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.exporters[name] = (config, process)
        groups = yaml.safe_load(config.read_text())
        deadline = time.monotonic() + 60
        while not all(f"{name}/{group}/NetworkService" in self.client("resources")
                      for group in groups):  # fmt: skip
            if time.monotonic() > deadline:
                raise RuntimeError(f"exporter resources did not appear: {log.name}")
            time.sleep(0.5)

    def place(self, name: str, board: str, exporter: str = "exp", **tags: str) -> None:
        self.client("-p", name, "create")
        self.places.add(name)
        self.client("-p", name, "add-match", f"{exporter}/{board}/NetworkService")
        if tags:
            self.client("-p", name, "set-tags", *(f"{k}={v}" for k, v in tags.items()))

    def acquired(self) -> list[str]:
        """The places acquired now."""
        return self.client("places", "--acquired").split()

    def reservations(self) -> str:
        return self.client("reservations")

    def stop(self) -> None:
        processes = [*self.processes, *(process for _, process in self.exporters.values())]
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class PowerSwitch:
    """A network power switch on 127.0.0.1 that labgrid's ``simplerest`` NetworkPowerPort
    model drives (``GET /relay/I/0`` off, ``/relay/I/1`` on, ``/relay/I`` the state): switching
    a port off stops its loopback board's sshd, switching it on starts it again. ``switched``
    records each change, in order."""

    def __init__(self, boards: list[SshServer]) -> None:
        self.boards = boards
        self.switched: list[tuple[int, int]] = []
        switch = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = self.path.strip("/").split("/")
                index = int(parts[1])
                board = switch.boards[index]
                if len(parts) == 3:
                    value = int(parts[2])
                    switch.switched.append((index, value))
                    if value == 0:
                        board.stop()
                    elif board.process is None:
                        board.start()
                state = b"1" if board.process is not None else b"0"
                self.send_response(200)
                self.send_header("Content-Length", str(len(state)))
                self.end_headers()
                self.wfile.write(state)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def port_of(self, board: SshServer) -> dict[str, object]:
        """The NetworkPowerPort resource switching ``board``."""
        index = self.boards.index(board)
        return {"model": "simplerest", "host": f"{self.url}/relay/{{index}}/{{value}}",
                "index": index}  # fmt: skip

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


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
