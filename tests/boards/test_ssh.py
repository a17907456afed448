"""SSH to a real OpenSSH server on 127.0.0.1: host keys verified, auth errors clear, no secrets."""

from __future__ import annotations

import hashlib
import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.fakes.sshd import SshServer, keygen, with_ssh
from tests.helpers import paths

from harness.boards.inventory import Board
from harness.boards.ssh import SEND_PIECE, HostKeyError, connect, fingerprint
from harness.boards.transport import BoardConnectionError, shell_command

HOSTILE = "a b 'c' \"d\" ; e $(touch pwned) `touch pwned2` & f|g > h"


def test_connects_and_runs_a_quoted_command(loopback_board: Board, tmp_path: Path) -> None:
    client = connect(loopback_board)
    try:
        marker = tmp_path / "pwned"
        result = client.run(
            f"cd {shell_command([str(tmp_path)])} && " + shell_command(["printf", "%s", HOSTILE]),
        )
        assert result.status == 0
        assert result.stdout.decode() == HOSTILE
        assert not marker.exists() and not (tmp_path / "pwned2").exists()
        failing = client.run("echo oops >&2; exit 7")
        assert (failing.status, failing.stderr) == (7, b"oops\n")
    finally:
        client.close()


def test_megabytes_arrive_whole_through_a_command_and_a_stream(loopback_board: Board) -> None:
    """Sent in pieces (paramiko's own sendall is quadratic): nothing lost, doubled or reordered
    at the piece boundaries, for a size that is no multiple of a piece."""
    payload = np.random.default_rng(5).bytes(3 * SEND_PIECE + 12345)
    expected = hashlib.sha256(payload).hexdigest()
    client = connect(loopback_board)
    try:
        result = client.run("sha256sum", stdin=payload)
        assert result.stdout.decode().split()[0] == expected
        stream = client.open_stream("sha256sum")
        stream.send(payload, timeout=30)
        stream.close_stdin()
        assert stream.wait(30) == 0
        assert stream.recv(4096, timeout=30).decode().split()[0] == expected
    finally:
        client.close()


def test_unknown_host_key_is_refused_with_its_fingerprint(
    loopback_board: Board, sshd: SshServer
) -> None:
    sshd.known_hosts.write_text("")
    with pytest.raises(HostKeyError) as info:
        connect(loopback_board)
    message = str(info.value)
    assert "not in" in message and str(sshd.known_hosts) in message
    assert "SHA256:" in message and info.value.permanent


def test_missing_known_hosts_file_is_refused(loopback_board: Board, tmp_path: Path) -> None:
    board = with_ssh(loopback_board, known_hosts=tmp_path / "absent")
    with pytest.raises(HostKeyError, match="does not exist"):
        connect(board)


def test_trust_on_first_use_saves_the_key_then_verifies_it(
    loopback_board: Board, sshd: SshServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    board = with_ssh(loopback_board, known_hosts=tmp_path / "new" / "known_hosts")
    with caplog.at_level(logging.WARNING):
        connect(board, trust_on_first_use=True).close()
    saved = board.transport.known_hosts.read_text()
    assert saved == f"[127.0.0.1]:{sshd.port} {sshd.host_public_key}\n"
    assert "trusted new host key" in caplog.text
    connect(board).close()  # now known: no trust needed


def test_changed_host_key_is_refused_even_with_trust_on_first_use(
    loopback_board: Board, sshd: SshServer, tmp_path: Path
) -> None:
    other = keygen(tmp_path / "other_host_key")
    other_public = " ".join(Path(f"{other}.pub").read_text().split()[:2])
    sshd.known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {other_public}\n")
    with pytest.raises(HostKeyError) as info:
        connect(loopback_board, trust_on_first_use=True)
    assert "CHANGED" in str(info.value)
    assert sshd.known_hosts.read_text() == f"[127.0.0.1]:{sshd.port} {other_public}\n"


def test_wrong_user_key_is_an_authentication_error(loopback_board: Board, tmp_path: Path) -> None:
    board = with_ssh(loopback_board, key_file=keygen(tmp_path / "stranger"))
    with pytest.raises(BoardConnectionError) as info:
        connect(board)
    assert "authentication as" in str(info.value) and str(board.transport.key_file) in str(
        info.value
    )
    assert info.value.permanent


def test_password_auth_failure_never_shows_the_password(
    loopback_board: Board, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "pw-Never-Print-Me-42"
    monkeypatch.setenv("HIL_TEST_BOARD_PASSWORD", secret)
    board = with_ssh(loopback_board, key_file=None, password_env="HIL_TEST_BOARD_PASSWORD")
    with pytest.raises(BoardConnectionError) as info:
        connect(board)  # the server's account has no usable password: a real refusal
    assert "$HIL_TEST_BOARD_PASSWORD" in str(info.value)
    assert secret not in str(info.value) and secret not in repr(info.value)


def test_unset_password_variable_is_named(
    loopback_board: Board, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HIL_TEST_UNSET_PASSWORD", raising=False)
    board = with_ssh(loopback_board, key_file=None, password_env="HIL_TEST_UNSET_PASSWORD")
    with pytest.raises(BoardConnectionError, match=r"HIL_TEST_UNSET_PASSWORD.*is not set"):
        connect(board)


def test_a_stopped_server_is_a_retryable_connection_error(
    loopback_board: Board, sshd: SshServer
) -> None:
    sshd.stop()
    with pytest.raises(BoardConnectionError) as info:
        connect(loopback_board, timeout=3)
    assert "cannot connect" in str(info.value) and not info.value.permanent


def test_fingerprint_matches_ssh_keygen(sshd: SshServer) -> None:
    import paramiko

    key = paramiko.Ed25519Key.from_private_key_file(str(sshd.host_key))
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(sshd.host_key)], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    assert fingerprint(key) == f"ssh-ed25519 {listed}"


def test_paramiko_stays_behind_the_transport() -> None:
    """Lock, discovery and the runner sessions name no SSH library: only ssh.py loads it."""
    code = (
        "import sys, harness.boards.lock, harness.boards.discovery, harness.vendors.rknn.board\n"
        "assert 'paramiko' not in sys.modules, 'paramiko imported'"
    )
    root = paths.ROOT
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True)
