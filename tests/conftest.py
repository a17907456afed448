"""Shared fixtures: real OpenSSH servers on 127.0.0.1 standing in for boards (see sshd.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sshd import SshServer, write_sysroot

from harness.boards.inventory import Board, load_board
from harness.vendors.rknn.convert import ConversionCache
from harness.vendors.rknn.runtimes import RUNTIMES


@pytest.fixture
def sshd_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., SshServer]]:
    """Start as many sshd servers as a test needs (``env``: see SshServer); all are stopped."""
    servers: list[SshServer] = []

    def start(env: dict[str, str] | None = None) -> SshServer:
        server = SshServer(tmp_path_factory.mktemp("sshd"), env)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def sshd(sshd_factory: Callable[..., SshServer]) -> SshServer:
    """One running sshd on 127.0.0.1."""
    return sshd_factory()


@pytest.fixture
def loopback_board(sshd: SshServer, tmp_path: Path) -> Board:
    """A board file for ``sshd``: an RK3562 (fake sysroot) running the simulator stand-in."""
    sysroot = write_sysroot(tmp_path / "sysroot")
    return load_board(sshd.board_file(tmp_path / "boards", sysroot=str(sysroot)), RUNTIMES)


@pytest.fixture(scope="session")
def board_cache(tmp_path_factory: pytest.TempPathFactory) -> ConversionCache:
    """One ONNX -> .rknn cache for the whole test session: each tiny model is built once."""
    return ConversionCache(tmp_path_factory.mktemp("rknn-cache"))
