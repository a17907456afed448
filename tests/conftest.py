"""Fixtures of every test package: real OpenSSH servers on 127.0.0.1 standing in for boards
(tests/fakes/sshd.py), a second rknn-toolkit2 release for the SDK-matrix tests, installed on
first use, and the store every run the tests start writes (under the session's temporary
folder). A package's own fixtures are in its conftest.py (tests/history/: PostgreSQL)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.fakes.sshd import SshServer, write_sysroot

from harness.boards.inventory import Board, load_board
from harness.vendors.rknn.runtimes import RUNTIMES
from harness.vendors.rknn.toolkit import sdk
from harness.vendors.rknn.toolkit.convert import ConversionCache


@pytest.hookimpl(tryfirst=True)  # before the npu-hil plugin claims the folder
def pytest_configure(config: pytest.Config) -> None:
    """The project's own tests are no suites run: a session of them left at the default
    ``--results results`` writes its run.json into a folder of its own, never into the
    checkout's ``results``, which may hold the main job's run (one folder is one run)."""
    if config.getoption("results") == "results" and not hasattr(config, "workerinput"):
        config.option.results = tempfile.mkdtemp(prefix="npu-hil-tests-")


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


SECOND_SDK = "2.3.2"  # the release the SDK-matrix tests compare with this environment's


@pytest.fixture(scope="session")
def second_sdk(request: pytest.FixtureRequest) -> sdk.Sdk:
    """rknn-toolkit2 2.3.2 in its own environment (``hil sdk install 2.3.2``): installed here
    the first time a test needs it (about 40 s from the package index; kept under the SDK
    folder, ``~/.cache/npu-hil/sdk``), so that a plain ``tox`` does not carry it. A machine
    without the index prepares it beforehand: ``HIL_PREPARE_SDKS=2.3.2 tox --notest``."""
    found = {release.version: release for release in sdk.installed()}
    if SECOND_SDK in found:
        return found[SECOND_SDK]
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")

    def say(line: str) -> None:
        if reporter is not None:
            reporter.write_line(f"npu-hil tests: {line}")

    say(f"installing rknn-toolkit2 {SECOND_SDK} for the SDK-matrix tests (once)")
    try:
        return sdk.install(SECOND_SDK, say=say)
    except sdk.SdkError as error:
        pytest.fail(
            f"the SDK-matrix tests need rknn-toolkit2 {SECOND_SDK} and it did not install: "
            f"{error}; on a machine without the package index, HIL_PREPARE_SDKS={SECOND_SDK} "
            "tox --notest prepares it beforehand"
        )


@pytest.fixture(scope="session", autouse=True)
def _history_store_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Runs started by the tests write their history store under the test session's temporary
    folder, never into the user's home (``HIL_DB``; tests of the store name their own)."""
    saved = os.environ.get("HIL_DB")
    os.environ["HIL_DB"] = str(tmp_path_factory.mktemp("history") / "history.sqlite")
    yield
    if saved is None:
        del os.environ["HIL_DB"]
    else:
        os.environ["HIL_DB"] = saved
