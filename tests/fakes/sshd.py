"""A real OpenSSH server on 127.0.0.1 for the board tests, and helpers for such loopback boards.

Each ``SshServer`` has its own folder, keys, port, ``sshd_config`` and a ``known_hosts`` file
holding its host key, so tests can run several "boards" at once. ``stop()`` kills the listener
and every sshd session process (as a crashed or unplugged board would drop connections);
``start()`` brings it back on the same port with the same host key. The helpers at the end
write a fake board filesystem, build tiny ONNX models and find runner processes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import getpass
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import yaml
from tests.helpers.paths import SUITE

from harness.boards.inventory import Board
from harness.boards.settings import SshSettings

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
# sshd refuses to start as root without its privilege-separation directory (a distribution
# service creates it at boot; a container has none).
PRIVSEP_DIR = Path("/run/sshd")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def keygen(path: Path) -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "npu-hil-test", "-f", str(path)],
        check=True,
    )
    return path


class SshServer:
    """One sshd on 127.0.0.1 accepting ``user_key`` for the current user.

    ``env`` is set in every session (sshd ``SetEnv``), e.g. a PATH holding only the tools a
    busybox board has, and a HOME without the user's shell start-up files, which may extend it.
    """

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        if not Path(SSHD).is_file():
            raise RuntimeError(f"{SSHD} not found: install openssh-server")
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.user = getpass.getuser()
        self.host_key = keygen(root / "host_ed25519")
        self.user_key = keygen(root / "user_ed25519")
        self.authorized_keys = root / "authorized_keys"
        shutil.copy(root / "user_ed25519.pub", self.authorized_keys)
        self.authorized_keys.chmod(0o600)
        self.known_hosts = root / "known_hosts"
        self.log = root / "sshd.log"
        self.env = dict(env or {})
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def host_public_key(self) -> str:
        """``ssh-ed25519 AAAA...`` (without the comment)."""
        return " ".join((self.root / "host_ed25519.pub").read_text().split()[:2])

    def _config(self) -> Path:
        config = self.root / "sshd_config"
        config.write_text(
            f"Port {self.port}\n"
            "ListenAddress 127.0.0.1\n"
            f"HostKey {self.host_key}\n"
            f"AuthorizedKeysFile {self.authorized_keys}\n"
            f"PidFile {self.root / 'sshd.pid'}\n"
            "PermitRootLogin yes\n"
            "PubkeyAuthentication yes\n"
            "PasswordAuthentication yes\n"
            "KbdInteractiveAuthentication no\n"
            "UsePAM no\n"
            "StrictModes no\n"
            "MaxStartups 50\n"
            "MaxSessions 50\n"
            "LogLevel ERROR\n"
            + "".join(f'SetEnv "{name}={value}"\n' for name, value in self.env.items())
        )
        return config

    def start(self) -> None:
        """Start (or restart) the server; the first start picks a free port."""
        if os.geteuid() == 0:
            PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        for _ in range(5):
            if not self.port:
                self.port = free_port()
                self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {self.host_public_key}\n")
            with self.log.open("ab") as log:
                self.process = subprocess.Popen(
                    [SSHD, "-D", "-e", "-f", str(self._config())], stderr=log
                )
            if self._wait_listening():
                return
            self.process.kill()
            self.process.wait()
        raise RuntimeError(f"sshd did not start; see {self.log}:\n{self.log.read_text()[-2000:]}")

    def _wait_listening(self) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                time.sleep(0.05)
        return False

    def session_processes(self) -> list[psutil.Process]:
        """The sshd processes serving connections (not the user's commands under them)."""
        if self.process is None:
            return []
        try:
            children = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        return [p for p in children if _name(p) == "sshd"]

    def stop(self) -> None:
        """Kill the listener and all sshd session processes, like a board going away."""
        if self.process is None:
            return
        victims = self.session_processes()
        self.process.kill()
        self.process.wait()
        for process in victims:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        psutil.wait_procs(victims, timeout=5)
        self.process = None

    def board_file(self, folder: Path, **fields: object) -> Path:
        """Write a board file reaching this server; ``fields`` override or add keys."""
        document: dict[str, object] = {
            "name": "loopback",
            "host": "127.0.0.1",
            "port": self.port,
            "user": self.user,
            "auth": {"key_file": str(self.user_key)},
            "known_hosts": str(self.known_hosts),
            "soc": "rk3562",
            "platform": "rk3562",
            "python": sys.executable,
            "workdir": str(self.root / "work dir"),
            "runtime": "simulator-stand-in",
        }
        document.update(fields)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{document['name']}.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return path


SELECTION = [  # a few operator cases, quick to build, with several verdicts between them
    "rk3562/Pow/float16/values=4",
    "rk3562/Pow/float16/values=2",
    "rk3562/Expand/float16/[b,c,1,w]:h=8193",
    "rk3562/Expand/int8/typical",
]


def suite_command(tmp_path: Path, boards: Path, results: str, *args: str) -> list[str]:
    """pytest running SELECTION on ``--backend board`` with the boards of folder ``boards``,
    results in ``tmp_path/results``."""
    node_ids = [f"{SUITE}::test_documented_limit[{case_id}]" for case_id in SELECTION]
    command = [sys.executable, "-m", "pytest", *node_ids, "-p", "no:cacheprovider", "-s"]
    command += ["--results", str(tmp_path / results), "--hil-cache", "off"]
    command += ["--hil-conversion-cache", str(tmp_path / "conversions")]
    return [*command, "--boards", str(boards), "--backend", "board", *args]


def with_ssh(board: Board, **fields: Any) -> Board:
    """``board`` with some of its SSH settings replaced (``port=1``, ``key_file=...``)."""
    assert isinstance(board.transport, SshSettings), f"{board.name}: not an SSH board"
    return dataclasses.replace(board, transport=dataclasses.replace(board.transport, **fields))


def _name(process: psutil.Process) -> str:
    try:
        return process.name()
    except psutil.NoSuchProcess:
        return ""


RUNTIME_LIBRARY = "2.3.2 (429f97ae6b@2025-04-09T09:09:27)"


def write_sysroot(
    root: Path,
    compatible: str = "rockchip,rk3562-evb\0rockchip,rk3562\0",
    runtime: str = RUNTIME_LIBRARY,
    driver: str = "0.9.8",
) -> Path:
    """A fake board filesystem for discovery: device tree, NPU driver and runtime library
    (``runtime``: the version its librknnrt reports, an older one for the version check)."""
    (root / "proc/device-tree").mkdir(parents=True, exist_ok=True)
    (root / "proc/device-tree/compatible").write_bytes(compatible.encode())
    (root / "sys/kernel/debug/rknpu").mkdir(parents=True, exist_ok=True)
    (root / "sys/kernel/debug/rknpu/version").write_text(f"RKNPU driver: v{driver}\n")
    (root / "usr/lib").mkdir(parents=True, exist_ok=True)
    (root / "usr/lib/librknnrt.so").write_bytes(
        b"\x7fELF\x02\x01\x01"
        + bytes(64)
        + f"librknnrt version: {runtime}".encode()
        + bytes(16)
        + b"other strings\x00"
    )
    return root


def write_rknn_server(root: Path, version: str, started: int | None = None) -> None:
    """An rknn_server binary of ``version`` in the fake board filesystem ``root`` and, with
    ``started`` (seconds since the epoch), a running rknn_server process in its /proc."""
    (root / "usr/bin").mkdir(parents=True, exist_ok=True)
    (root / "usr/bin/rknn_server").write_bytes(
        b"\x7fELF" + bytes(32) + f"rknn_server version: {version}".encode() + bytes(8)
    )
    if started is None:
        return
    boot = started - 1000
    (root / "proc/stat").write_text(f"cpu  1 2 3 4\nbtime {boot}\nprocesses 99\n")
    process = root / "proc/4242"
    process.mkdir(parents=True, exist_ok=True)
    (process / "comm").write_text("rknn_server\n")
    fields = ["S", *["0"] * 18, str(1000 * 100), "0"]  # field 22: start, in ticks since boot
    (process / "stat").write_text(f"4242 (rknn_server) {' '.join(fields)}\n")


def onnx_model(op: str = "Relu", shape: tuple[int, ...] = (1, 3, 4, 4), inputs: int = 1) -> bytes:
    """A one-node ONNX model (opset 13) over float32 tensors of ``shape``."""
    from onnx import TensorProto, helper

    names = [f"x{i}" for i in range(inputs)]
    graph = helper.make_graph(
        [helper.make_node(op, names, ["y"], name=f"{op.lower()}_node")],
        f"{op.lower()}_graph",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape)) for n in names],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def runner_processes(workdir: str) -> list[psutil.Process]:
    """Live board-runner processes whose command line mentions ``workdir``: the runners
    themselves, not the short-lived children the toolkit forks off them (which share the
    runner's command line and may exit at any moment, so their parent is read in the same
    snapshot as the rest)."""
    found = []
    for process in psutil.process_iter(["cmdline", "status", "ppid"]):
        cmdline = process.info["cmdline"] or []
        if process.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if any("hil_board_runner.py" in arg for arg in cmdline) and any(
            arg.startswith(workdir) for arg in cmdline
        ):
            found.append(process)
    pids = {process.pid for process in found}
    return [process for process in found if process.info["ppid"] not in pids]


def alive(pid: int) -> bool:
    """True while process ``pid`` exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_until(condition: Callable[[], object], timeout: float = 10.0) -> bool:
    """Poll ``condition`` until it is true or ``timeout`` passes; its last truth value."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return bool(condition())
        time.sleep(0.05)
    return True
