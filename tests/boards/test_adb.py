"""The adb transport against a fake adb server on 127.0.0.1 (tests/fakes/adbd.py) whose device is a
sandbox folder of this machine: the protocol, board files, discovery, and the same selection
as over SSH with the same verdicts."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import adbutils
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fakes.adbd import STAGES, AdbServer
from tests.fakes.sshd import SELECTION, SshServer, suite_command, write_sysroot
from tests.helpers.boards import SERIAL, adb_board_file

from harness.boards.discovery import check
from harness.boards.inventory import Board, BoardFileError, load_board
from harness.boards.settings import AdbSettings
from harness.boards.transport import (
    MAX_OUTPUT,
    BoardConnectionError,
    open_transport,
    shell_command,
)
from harness.results.journal import read_records
from harness.vendors.rknn.runtimes import RUNTIMES


@pytest.fixture
def adb_server(tmp_path: Path) -> Iterator[AdbServer]:
    sandbox = tmp_path / "device"
    sandbox.mkdir()
    server = AdbServer({SERIAL: sandbox, "hil-evb-2": None})
    yield server
    server.stop()


@pytest.fixture
def adb_board(adb_server: AdbServer, tmp_path: Path) -> Board:
    sysroot = write_sysroot(tmp_path / "sysroot")
    return load_board(adb_board_file(adb_server, tmp_path / "boards", sysroot), RUNTIMES)


def test_an_adb_board_file_loads_its_settings(adb_board: Board, adb_server: AdbServer) -> None:
    assert adb_board.transport == AdbSettings(SERIAL, "127.0.0.1", adb_server.port)
    assert adb_board.address == f"adb:{SERIAL}@127.0.0.1:{adb_server.port}"


@pytest.mark.parametrize(
    ("fields", "key", "says"),
    [
        ({"host": "10.0.0.5"}, "host", "names one transport"),  # adb and SSH keys both
        ({"ssh": {"host": "h", "user": "u", "auth": {"agent": True}}}, "adb", "one transport"),
        ({"adb": {"serial": "a b"}}, "adb.serial", "adb.serial is the serial adb devices lists"),
        ({"adb": {"serial": "x", "server_port": 0}}, "adb.server_port", "from 1 to 65535"),
        ({"adb": {"serial": "x", "speed": 3}}, "adb", "adb: unknown key speed"),
    ],
)
def test_bad_adb_board_files_name_file_and_key(
    adb_server: AdbServer, tmp_path: Path, fields: dict[str, object], key: str, says: str
) -> None:
    path = adb_board_file(adb_server, tmp_path, tmp_path, **fields)
    with pytest.raises(BoardFileError) as info:
        load_board(path, RUNTIMES)
    assert info.value.key_path == key and says in str(info.value)
    assert str(path) in str(info.value)


def test_an_ssh_section_is_the_same_board_as_top_level_ssh_keys(
    sshd: SshServer, tmp_path: Path
) -> None:
    flat = load_board(sshd.board_file(tmp_path / "a"), RUNTIMES)
    section = {k: v for k, v in yaml.safe_load(flat.source.read_text()).items()}
    ssh = {key: section.pop(key) for key in ("host", "port", "user", "auth", "known_hosts")}
    path = tmp_path / "b" / "loopback.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump({**section, "ssh": ssh}))
    assert load_board(path, RUNTIMES).transport == flat.transport
    path.write_text(yaml.safe_dump(section))  # no transport at all
    with pytest.raises(BoardFileError, match="names one transport"):
        load_board(path, RUNTIMES)


def test_commands_exit_codes_stdin_and_files_go_through_the_adb_server(
    adb_board: Board, adb_server: AdbServer, tmp_path: Path
) -> None:
    transport = open_transport(adb_board)
    try:
        result = transport.run(
            shell_command(["sh", "-c", 'cat; echo "$1" >&2; pwd; exit 3', "sh", "it's $HOME"]),
            stdin=b"in\x00put\n" * 50000,
        )
        assert result.status == 3
        assert result.stdout == b"in\x00put\n" * 50000 + f"{tmp_path / 'device'}\n".encode()
        assert result.stderr == b"it's $HOME\n"
        target = tmp_path / "device" / "pushed.bin"
        transport.put(str(target), b"\x00\x01 runner", 0o640)
        assert target.read_bytes() == b"\x00\x01 runner" and target.stat().st_mode & 0o777 == 0o640
    finally:
        transport.close()
    device = adbutils.AdbClient("127.0.0.1", adb_server.port).device(SERIAL)
    assert device.sync.read_bytes(str(target)) == b"\x00\x01 runner"  # RECV
    assert device.sync.stat(str(target)).size == len(b"\x00\x01 runner")  # STAT
    assert "host:version" in adb_server.requests and "host:devices" in adb_server.requests
    assert f"host:transport:{SERIAL}" in adb_server.requests
    assert "sync:" in adb_server.requests


def test_a_command_flooding_its_output_over_adb_is_stopped_at_the_cap(adb_board: Board) -> None:
    transport = open_transport(adb_board)
    try:
        flood = shell_command(["sh", "-c", "cat /dev/zero; : >&2 < /dev/zero"])
        with pytest.raises(BoardConnectionError, match=f"more than {MAX_OUTPUT} bytes"):
            transport.run(flood, timeout=20)
        # stderr is bounded too: a command that floods it still ends with the cap kept
        result = transport.run(
            shell_command(["sh", "-c", f"head -c {3 * MAX_OUTPUT} /dev/zero >&2"]), timeout=20
        )
        assert result.status == 0 and len(result.stderr) == MAX_OUTPUT
    finally:
        transport.close()


@pytest.mark.parametrize(
    ("serial", "says"),
    [("hil-evb-2", "state offline"), ("nosuch", r"not listed; devices: hil-evb-1 \(device\)")],
)
def test_a_device_the_server_does_not_offer_is_named(
    adb_server: AdbServer, tmp_path: Path, serial: str, says: str
) -> None:
    path = adb_board_file(
        adb_server, tmp_path, tmp_path, adb={"serial": serial, "server_port": adb_server.port}
    )
    with pytest.raises(BoardConnectionError, match=says):
        open_transport(load_board(path, RUNTIMES))


def test_a_stopped_adb_server_makes_the_board_unreachable(
    adb_board: Board, adb_server: AdbServer
) -> None:
    adb_server.stop()
    report = check(adb_board, timeout=3)
    assert report["status"] == "unreachable"
    assert "cannot reach the adb server" in report["problems"][0]


# A broken or hostile server's replies: each named break, where adbutils raised its own
# ValueError, struct.error or AssertionError.
BAD_REPLIES = {
    "length-not-hex": ("host:devices", b"OKAYzz!!hil-evb-1\tdevice\n"),
    "version-not-hex": ("host:version", b"OKAY0004\x1b[2J"),
    "short-stat": ("sync:STAT", b"STAT\x00\x00"),
    "wrong-reply-id": ("sync:STAT", b"DATA" + bytes(12)),
}


def _use_the_board(board: Board) -> None:
    """What a run does over the transport: connect, run a command, push a file."""
    transport = open_transport(board, timeout=5)
    try:
        transport.run(shell_command(["true"]), timeout=5)
        transport.put(f"{board.workdir}.pushed", b"runner")
    finally:
        transport.close()


@pytest.mark.parametrize(("stage", "reply"), BAD_REPLIES.values(), ids=BAD_REPLIES)
def test_a_malformed_adb_reply_is_the_transports_own_error(
    adb_board: Board, adb_server: AdbServer, stage: str, reply: bytes
) -> None:
    adb_server.tamper[stage] = reply
    with pytest.raises(BoardConnectionError, match=r"reply while .* is not the adb protocol"):
        _use_the_board(adb_board)


def test_boards_check_reports_a_malformed_adb_reply_without_a_traceback(
    adb_board: Board, adb_server: AdbServer
) -> None:
    adb_server.tamper["host:devices"] = b"OKAYzz!!"
    hil = Path(sys.executable).with_name("hil")
    result = subprocess.run(
        [str(hil), "boards", "check", "--boards", str(adb_board.source.parent), "--timeout", "5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert "unreachable" in result.stdout and "not the adb protocol" in result.stdout


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stage=st.sampled_from(STAGES), reply=st.binary(max_size=40))
def test_any_adb_reply_is_served_or_the_transports_own_error(
    adb_board: Board, adb_server: AdbServer, stage: str, reply: bytes
) -> None:
    adb_server.tamper = {stage: reply}
    # anything else (ValueError, struct.error, AssertionError, ...) fails the test
    with contextlib.suppress(BoardConnectionError):
        _use_the_board(adb_board)


def test_discovery_over_adb_reads_the_board_facts(adb_board: Board) -> None:
    report = check(adb_board)
    assert report["status"] == "ok", report["problems"]
    assert (report["soc"], report["npu_driver"]) == ("rk3562", "0.9.8")
    assert report["runtime_library"].startswith("2.3.2")


def run_suite(tmp_path: Path, boards: Path, results: str) -> subprocess.CompletedProcess[str]:
    command = suite_command(tmp_path, boards, results)
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)


def test_the_same_selection_over_adb_and_ssh_gives_the_same_verdicts(
    adb_server: AdbServer, sshd: SshServer, tmp_path: Path
) -> None:
    sysroot = write_sysroot(tmp_path / "sysroot")
    over_ssh = run_suite(
        tmp_path, sshd.board_file(tmp_path / "ssh", sysroot=str(sysroot)).parent, "r-ssh"
    )
    assert over_ssh.returncode in (0, 1), over_ssh.stdout + over_ssh.stderr
    over_adb = run_suite(
        tmp_path, adb_board_file(adb_server, tmp_path / "adb", sysroot).parent, "r-adb"
    )
    assert over_adb.returncode == over_ssh.returncode, over_adb.stdout + over_adb.stderr
    assert "running on loopback-adb" in over_adb.stdout
    ssh_records = {r.id: r for r in read_records(tmp_path / "r-ssh")}
    adb_records = {r.id: r for r in read_records(tmp_path / "r-adb")}
    assert set(adb_records) == set(ssh_records) == set(SELECTION)
    assert {r.backend for r in adb_records.values()} == {"loopback-adb"}
    assert {r.id: r.verdict for r in adb_records.values()} == {
        r.id: r.verdict for r in ssh_records.values()
    }
    assert not any(r.verdict == "infra-error" for r in adb_records.values())
    assert any("shell,v2,raw:" in request for request in adb_server.requests)
