"""The labgrid farms of the farm tests: a real coordinator and exporters on 127.0.0.1 whose
NetworkService resources are loopback sshd boards, and each test's own folder of lease marks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.fakes.labgrid_farm import Farm
from tests.fakes.sshd import SshServer

from harness.boards.leases import LEASE_DIR_ENV


@pytest.fixture
def farm(
    sshd_factory: Callable[[], SshServer], tmp_path: Path
) -> Iterator[tuple[Farm, list[SshServer]]]:
    """Two loopback boards exported as places rk3562-a and rk3562-b, tagged soc=rk3562."""
    servers = [sshd_factory(), sshd_factory()]
    farm = Farm(tmp_path / "farm")
    try:
        farm.export({"board-a": servers[0], "board-b": servers[1]})
        farm.place("rk3562-a", "board-a", soc="rk3562")
        farm.place("rk3562-b", "board-b", soc="rk3562")
        yield farm, servers
    finally:
        farm.stop()


@pytest.fixture(autouse=True)
def lease_marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own folder of lease marks (the harness processes it starts inherit it)."""
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path / "leases"))
    return tmp_path / "leases"


@pytest.fixture
def two_exporters(
    sshd_factory: Callable[[], SshServer], tmp_path: Path
) -> Iterator[tuple[Farm, list[SshServer]]]:
    """Places rk3562-a and rk3562-b (tagged soc=rk3562), each on its own exporter."""
    servers = [sshd_factory(), sshd_factory()]
    farm = Farm(tmp_path / "farm")
    try:
        farm.export({"board-a": servers[0]}, name="exp-a")
        farm.export({"board-b": servers[1]}, name="exp-b")
        farm.place("rk3562-a", "board-a", exporter="exp-a", soc="rk3562")
        farm.place("rk3562-b", "board-b", exporter="exp-b", soc="rk3562")
        yield farm, servers
    finally:
        farm.stop()
