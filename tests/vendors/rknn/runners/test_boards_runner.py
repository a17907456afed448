"""The board runner on its own: frames, tar safety, and its watchdog, as a real local process."""

from __future__ import annotations

import contextlib
import io
import signal
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import psutil
import pytest
from tests.fakes.sshd import wait_until
from tests.helpers.children import default_signals

from harness.vendors.rknn.runners.runner_session import RUNNER_PATH, runner_module

RUNNER = runner_module()


def tar_of(members: list[tarfile.TarInfo]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info in members:
            tar.addfile(info, io.BytesIO(b"x" * info.size) if info.isfile() else None)
    return buffer.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, size: int = 1) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size if kind == tarfile.REGTYPE else 0
    if kind == tarfile.SYMTYPE:
        info.linkname = "/etc/passwd"
    return info


def test_frames_round_trip_and_garbage_is_refused() -> None:
    stream = io.BytesIO(RUNNER.encode_frame({"type": "x", "n": 1}, b"\x00payload"))
    assert RUNNER.read_frame(stream) == ({"type": "x", "n": 1}, b"\x00payload")
    with pytest.raises(EOFError):
        RUNNER.read_frame(stream)
    with pytest.raises(ValueError, match="not a harness frame"):
        RUNNER.read_frame(io.BytesIO(b"HTTP/1.1 200 OK\r\n\r\n"))


def test_unpack_accepts_plain_files(tmp_path: Path) -> None:
    RUNNER.unpack(
        tar_of([member("c0", tarfile.DIRTYPE), member("c0/model.rknn", size=3)]),
        str(tmp_path / "b"),
    )
    assert (tmp_path / "b" / "c0" / "model.rknn").read_bytes() == b"xxx"


@pytest.mark.parametrize(
    "bad",
    [
        member("../escape"),
        member("/abs/path"),
        member("c0/../../x"),
        member("c0/link", tarfile.SYMTYPE),
    ],
)
def test_unpack_refuses_members_that_leave_the_folder(tmp_path: Path, bad: tarfile.TarInfo) -> None:
    with pytest.raises(ValueError, match="refusing tar member"):
        RUNNER.unpack(tar_of([bad]), str(tmp_path / "b"))
    assert not (tmp_path / "escape").exists() and not (tmp_path / "x").exists()


def start(
    tmp_path: Path, *extra: str, runtime: str = "simulator-stand-in"
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-u",
            str(RUNNER_PATH),
            "--workdir",
            str(tmp_path / "w"),
            "--runtime",
            runtime,
            *extra,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def frame(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    header: dict[str, Any] = RUNNER.read_frame(process.stdout)[0]
    return header


def test_an_unknown_runtime_is_reported_not_crashed_on(tmp_path: Path) -> None:
    runner = start(tmp_path, runtime="tflite")
    reply = frame(runner)
    assert reply["type"] == "error" and "unknown runtime 'tflite'" in reply["message"]
    assert runner.wait(timeout=30) == 2


def test_runner_says_hello_refuses_a_hostile_batch_and_exits(tmp_path: Path) -> None:
    runner = start(tmp_path)
    try:
        hello = frame(runner)
        assert hello["type"] == "hello" and hello["pid"] == runner.pid and hello["protocol"] == 1
        assert runner.stdin is not None
        runner.stdin.write(
            RUNNER.encode_frame({"type": "batch", "cases": []}, tar_of([member("../x")]))
        )
        runner.stdin.flush()
        reply = frame(runner)
        assert reply["type"] == "error" and "refusing tar member '../x'" in reply["message"]
        assert runner.wait(timeout=30) == 2
        assert not (tmp_path / "x").exists()
    finally:
        runner.kill()


def test_a_silent_host_makes_the_runner_exit(tmp_path: Path) -> None:
    runner = start(tmp_path, "--idle-timeout", "1")
    try:
        assert frame(runner)["type"] == "hello"
        assert runner.wait(timeout=30) == 5  # the watchdog's idle exit, stdin still open
    finally:
        runner.kill()


def test_the_runner_exits_when_its_parent_session_dies(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-u",
        str(RUNNER_PATH),
        "--workdir",
        str(tmp_path / "w"),
        "--runtime",
        "simulator-stand-in",
    ]
    # A shell in between, standing for the SSH session: it stays the runner's parent.
    session = subprocess.Popen(
        ["sh", "-c", '"$@"; echo ended', "sh", *command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        preexec_fn=default_signals,
    )
    try:
        hello = frame(session)
        runner = psutil.Process(hello["pid"])
        assert runner.ppid() == session.pid
        session.send_signal(signal.SIGKILL)
        session.wait()
        assert wait_until(
            lambda: not runner.is_running() or runner.status() == psutil.STATUS_ZOMBIE, 10
        )
    finally:
        session.kill()
        for process in psutil.process_iter(["cmdline"]):
            if str(tmp_path / "w") in " ".join(process.info["cmdline"] or []):
                with contextlib.suppress(psutil.NoSuchProcess):  # it may have exited meanwhile
                    process.kill()
