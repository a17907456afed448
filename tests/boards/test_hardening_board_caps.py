"""Caps on everything a board sends, against real hostile peers on 127.0.0.1: a loopback sshd
board whose runner (the board file's ``python``) is a hostile script speaking the real frame
format, measured from a separate host process (``board_host.py``) whose peak memory is read
when it ends. Also the command-output cap of the transport and the C runner's tar reader."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.fakes.sshd import SshServer, onnx_model, write_sysroot
from tests.helpers import paths
from tests.helpers.boards import BOARD_TOOLS
from tests.helpers.cli import hil_boards

from harness.boards.inventory import Board, load_board
from harness.boards.ssh import connect
from harness.boards.transport import MAX_OUTPUT, BoardConnectionError
from harness.vendors.rknn import BOARD_FILES
from harness.vendors.rknn.runners.c_batch import StreamError, read_stream
from harness.vendors.rknn.runners.runner_session import (
    MAX_CASE_BYTES,
    ConnectionLost,
    RunnerFailed,
    RunnerJob,
    RunnerSession,
    runner_module,
)
from harness.vendors.rknn.runtimes import RUNTIMES

REPO = paths.ROOT
HOST = paths.TESTS / "helpers" / "board_host.py"
FLOOD_MIB = 400  # what a flooding board sends before it gives up: far above the host's caps
HOST_RSS_LIMIT = 250 * 2**20  # the host process's peak: its imports plus the caps' worth

# The runner replaced: hello as the real runner says it, the batch read, then `behaviour`.
HOSTILE = """#!{python}
import os, sys, time
sys.path.insert(0, {board_files!r})
import hil_board_runner as real
if "-c" in sys.argv:  # discovery's Python probe
    sys.exit(0)
out = sys.stdout.buffer
def send(header, payload=b""):
    out.write(real.encode_frame(header, payload))
    out.flush()
def flood():
    zeros = bytes(2**20)
    for _ in range({flood_mib}):
        out.write(zeros)
    out.flush()
send({{"type": "hello", "protocol": 1, "pid": os.getpid(), "runtime": "hostile"}})
real.read_frame(sys.stdin.buffer)
{behaviour}
"""
BEHAVIOURS = {
    # a frame header announcing 4 GiB, then an endless (here: FLOOD_MIB) stream
    "huge-header": "out.write(real.FRAME.pack(0xFFFFFFF0, 0))\nflood()",
    # a small result header announcing a 4 GiB payload
    "huge-payload": (
        'send({"type": "started", "case": "c0"})\n'
        'head = b\'{"type": "result", "case": "c0", "status": "ok", "outputs": []}\'\n'
        "out.write(real.FRAME.pack(len(head), 0xFFFFFFF0) + head)\nflood()"
    ),
    # progress without end: the case "starts" again every half second
    "chatty": 'while True:\n    send({"type": "started", "case": "c0"})\n    time.sleep(0.5)',
}


def hostile_board(sshd: SshServer, tmp_path: Path, behaviour: str) -> Path:
    """A board file whose runner is the hostile script acting out ``behaviour``."""
    script = tmp_path / "hostile-python"
    script.write_text(
        HOSTILE.format(
            python=sys.executable,
            board_files=str(BOARD_FILES),
            flood_mib=FLOOD_MIB,
            behaviour=BEHAVIOURS[behaviour],
        )
    )
    script.chmod(0o755)
    sysroot = write_sysroot(tmp_path / "sysroot")
    return sshd.board_file(tmp_path / "boards", sysroot=str(sysroot), python=str(script))


def host(board_file: Path, timeout_s: float, limit_s: float = 120) -> tuple[dict[str, Any], int]:
    """board_host.py's outcome and its peak RSS in bytes, as it measures its own (the rusage
    of a child counts the memory of this test process it was forked from)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, str(HOST), str(board_file), str(timeout_s)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=limit_s)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the host was still busy after {limit_s} s")
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = json.loads(done.stdout)
    return outcome, outcome.pop("peak_rss")


# -- frames: size and total bytes -------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["huge-header", "huge-payload"])
def test_a_board_announcing_gigabytes_is_refused_before_the_host_reads_them(
    sshd: SshServer, tmp_path: Path, behaviour: str
) -> None:
    outcome, peak = host(hostile_board(sshd, tmp_path, behaviour), timeout_s=30)
    assert peak < HOST_RSS_LIMIT, f"host peak RSS {peak / 2**20:.0f} MiB"  # 508 MiB unfixed
    assert outcome["error"].startswith("RunnerFailed: "), outcome
    assert "4294967280" in outcome["error"], outcome  # the announced size, named
    assert outcome["seconds"] < 10, outcome  # refused at once, not after reading the flood


# -- time: one deadline per case --------------------------------------------------------------


def test_progress_frames_do_not_extend_a_case(sshd: SshServer, tmp_path: Path) -> None:
    outcome, _ = host(hostile_board(sshd, tmp_path, "chatty"), timeout_s=2, limit_s=60)
    assert outcome["error"].startswith("RunnerFailed: runner frame out of turn"), outcome
    assert outcome["seconds"] < 2 + 1  # the case's time and the host's grace, at most


def test_hil_run_on_a_chatty_board_ends_within_its_timeout(sshd: SshServer, tmp_path: Path) -> None:
    """The issue's reproduction: ``hil run --hil-timeout 5`` on a board that says "started"
    every half second ran on for good."""
    board_file = hostile_board(sshd, tmp_path, "chatty")
    model = tmp_path / "relu.onnx"
    model.write_bytes(onnx_model())
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    hil = "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"
    command = [sys.executable, "-c", hil, "run", str(model), "--boards", str(board_file)]
    command += ["--hil-timeout", "5", "--results", str(tmp_path / "results"), "--hil-cache", "off"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 3, run.stdout + run.stderr  # infrastructure trouble
    assert "infra-error" in run.stdout and "frame out of turn" in run.stdout, run.stdout
    journal = (tmp_path / "results" / "journal.jsonl").read_text().splitlines()
    assert [json.loads(line)["verdict"] for line in journal] == ["infra-error"]


# The C runner's batch driver with a board `tar` that, asked for the result stream, trickles
# zero blocks (which the reader skips as padding between archives) and never ends.
TRICKLING_TAR = """#!/bin/sh
case $1 in
-cf) while :; do {head} -c 512 /dev/zero || exit 1; {sleep} 0.2; done ;;
*) exec {tar} "$@" ;;
esac
"""


def trickling_c_board(sshd_factory: Callable[..., SshServer], tmp_path: Path) -> Path:
    """A c-runner board (busybox-like PATH) whose result stream is the trickle above."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in BOARD_TOOLS:
        found = shutil.which(tool)
        assert found, f"{tool} is needed on the loopback board"
        if tool != "tar":
            (tools / tool).symlink_to(found)
    which = {tool: shutil.which(tool) for tool in ("head", "sleep", "tar")}
    (tools / "tar").write_text(TRICKLING_TAR.format(**which))
    (tools / "tar").chmod(0o755)
    (tmp_path / "home").mkdir()
    server = sshd_factory({"PATH": str(tools), "HOME": str(tmp_path / "home")})
    runner = tmp_path / "hil_c_runner"  # pushed, never run: the stream never gets that far
    runner.write_bytes(b"#!/bin/sh\nexit 0\n")
    sysroot = write_sysroot(tmp_path / "sysroot", "rockchip,rv1106\0")
    return server.board_file(
        tmp_path / "boards",
        soc="rv1106",
        platform="rv1106",
        runtime="c-runner",
        c_runner=str(runner),
        python="python3",
        sysroot=str(sysroot),
    )


def test_a_c_runner_stream_that_trickles_forever_ends_at_the_case_deadline(
    sshd_factory: Callable[..., SshServer], tmp_path: Path
) -> None:
    outcome, _ = host(trickling_c_board(sshd_factory, tmp_path), timeout_s=2, limit_s=60)
    assert "RunnerFailed: board loopback: no end from the runner" in outcome["error"], outcome
    assert outcome["seconds"] < 2 + 1 + 2  # the case's time and the host's grace, and a kill


# -- command output ---------------------------------------------------------------------------


def test_a_command_that_floods_its_output_is_stopped_at_the_cap(
    sshd: SshServer, tmp_path: Path
) -> None:
    board = load_board(sshd.board_file(tmp_path / "boards"), RUNTIMES)
    transport = connect(board)
    try:
        assert len(transport.run("head -c 1000 /dev/zero").stdout) == 1000
        for stream in ("", ">&2"):
            with pytest.raises(BoardConnectionError, match=f"more than {MAX_OUTPUT} bytes"):
                transport.run(f"cat /dev/zero {stream}", timeout=60)
        assert transport.run("echo still here").stdout == b"still here\n"
    finally:
        transport.close()


def test_boards_check_on_a_dev_zero_compatible_file_is_bounded(
    sshd: SshServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sysroot = write_sysroot(tmp_path / "sysroot")
    compatible = sysroot / "proc/device-tree/compatible"
    compatible.unlink()
    compatible.symlink_to("/dev/zero")
    folder = tmp_path / "boards"
    sshd.board_file(folder, sysroot=str(sysroot))
    started = time.monotonic()
    assert hil_boards(["check", "--boards", str(folder)]) == 1
    assert time.monotonic() - started < 20  # not the probe's whole 30 s of reading
    out = capsys.readouterr().out
    assert "unreachable" in out and f"more than {MAX_OUTPUT} bytes to stdout" in out


# -- the C runner's result stream ---------------------------------------------------------------


def tar_header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(tarfile.USTAR_FORMAT)


def test_the_c_stream_refuses_a_member_announcing_8_gib_before_reading_it(tmp_path: Path) -> None:
    reads: list[int] = []
    stream = io.BytesIO(tar_header("c0/out/output_0.bin", 8 * 2**30 - 1) + bytes(2**20))

    def read(size: int) -> bytes:
        reads.append(size)
        return stream.read(size)

    with pytest.raises(StreamError, match=f"of {8 * 2**30 - 1} bytes .at most {MAX_CASE_BYTES}"):
        list(read_stream(read, tmp_path, {"c0"}, MAX_CASE_BYTES))
    assert reads == [512] and not (tmp_path / "c0").exists()


# -- fuzzing the frame reader and the C stream reader ----------------------------------------

RUNNER = runner_module()
FUZZ_CAP = 4096  # a small per-case cap, so that fuzzed frames reach it


class BytesStream:
    """A ``Stream`` whose board has sent ``data`` and then ended its output."""

    def __init__(self, data: bytes) -> None:
        self.data = io.BytesIO(data)
        self.largest_read = 0
        self.closed = False

    def send(self, data: bytes, timeout: float) -> None:
        pass

    def close_stdin(self) -> None:
        pass

    def recv(self, size: int, timeout: float) -> bytes:
        self.largest_read = max(self.largest_read, size)
        return self.data.read(min(size, 1000))

    def recv_stderr(self) -> bytes:
        return b""

    def wait(self, timeout: float) -> int | None:
        return 0

    def close(self) -> None:
        self.closed = True


def fed_session(data: bytes, board: Board) -> tuple[RunnerSession, BytesStream]:
    """A session whose runner is up and whose next bytes from the board are ``data``."""
    session = RunnerSession(board, "fuzz", max_case_bytes=FUZZ_CAP, host_grace_s=0)
    session._stream = stream = BytesStream(data)
    session.usable = True
    return session, stream


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
# Output files: real ones, and ones whose header declares 10**10 elements or another dtype.
_output = st.sampled_from(
    [
        npy(np.arange(6, dtype=np.float32).reshape(2, 3)),
        npy(np.zeros((), np.int8)),
        npy(np.zeros(3, np.float32)).replace(b"(3,)", b"(10000000000,)"),
        npy(np.zeros(2, np.float32)).replace(b"<f4", b"|O8"),
        b"\x93NUMPY\x03\x00" + bytes(20),
        b"not an npy file",
    ]
)


@st.composite
def _result_frame(draw: st.DrawFn) -> bytes:
    """A result frame close to the runner's, its outputs' sizes and checksums mostly right."""
    files = draw(st.lists(_output, max_size=2))
    specs: list[Any] = [
        {"size": len(data) + draw(st.sampled_from([0, 0, 0, -1, 1, -(2**40)])),
         "sha256": draw(st.sampled_from([hashlib.sha256(data).hexdigest(), "0" * 64, 5]))}
        for data in files
    ]  # fmt: skip
    header = {
        "type": "result",
        "case": draw(st.sampled_from(["c0", "c1", "c7"])),
        "status": draw(st.sampled_from(["ok", "ok", "runtime-error", "timeout", "odd"]) | _json),
        "outputs": draw(st.just(specs) | _json),
        "timings": draw(st.dictionaries(st.text(max_size=3), st.floats() | _json, max_size=2)),
        "error": draw(_json),
    }
    return bytes(RUNNER.encode_frame(header, b"".join(files)))


_other_frame = st.builds(
    lambda header, payload: bytes(RUNNER.encode_frame(header, payload)),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["started", "done", "error", "hello"]) | st.text(max_size=4)},
        optional={"case": st.sampled_from(["c0", "c1", "c7"]) | _json, "message": _json},
    ),
    st.binary(max_size=50),
)
_raw_frame = st.builds(
    lambda sizes, data: RUNNER.FRAME.pack(*sizes) + data,
    st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
    st.binary(max_size=50),
)
_board_output = st.lists(
    st.one_of(_result_frame(), _other_frame, _raw_frame, st.binary(max_size=40)), max_size=6
).map(b"".join)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def fuzz_board(tmp_path_factory: pytest.TempPathFactory) -> Board:
    """A board for the fuzzed sessions (they never connect)."""
    folder = tmp_path_factory.mktemp("fuzz-board")
    return load_board(SshServer(folder / "sshd").board_file(folder / "boards", port=22), RUNTIMES)


@FUZZ
@given(data=_board_output)
# found by hypothesis: the second case started and reported before the first
@example(
    data=b'\x00\x00\x00!\x00\x00\x00\x00{"type": "started", "case": "c1"}\x00\x00\x00]\x00\x00'
    b'\x00\x00{"type": "result", "case": "c1", "status": "ok", "outputs": [], "timings": {}, '
    b'"error": null}'
)
def test_fuzzed_board_output_ends_in_results_or_a_runner_failure(
    fuzz_board: Board, data: bytes
) -> None:
    jobs = [RunnerJob(f"c{i}", {"model.rknn": b"m"}, [], "nchw", 30, "auto") for i in range(2)]
    session, stream = fed_session(data, fuzz_board)
    results = []
    try:
        results.extend(session.run(jobs))
    except (RunnerFailed, ConnectionLost) as exc:
        assert str(exc) and len(str(exc)) < 6000
    assert stream.largest_read <= max(65536, FUZZ_CAP)  # never reads a frame past the cap
    assert [result.id for result in results] == [job.id for job in jobs][: len(results)]
    for result in results:
        assert result.status in ("ok", "runtime-error", "timeout", "corrupt")
        assert all(isinstance(array, np.ndarray) for array in result.outputs or [])


_member = st.builds(
    lambda name, kind, data: tar_member(name, kind, data),
    st.sampled_from(["c0/started", "c0/out", "c0/out/x.bin", "c0/exit_code", "c1/a", "../x"]),
    st.sampled_from([tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE]),
    st.sampled_from([b"", b"12 34", b"0\n", b"x" * 700]),
)


def tar_member(name: str, kind: bytes, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        info.type, info.size = kind, len(data) if kind == tarfile.REGTYPE else 0
        tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return buffer.getvalue()


@FUZZ
@given(
    data=st.lists(
        _member
        | st.builds(tar_header, st.just("c0/out/big"), st.integers(0, 8 * 2**30 - 1))
        | st.binary(max_size=600),
        max_size=5,
    ).map(b"".join)
)
def test_fuzzed_c_streams_end_in_events_or_a_stream_error(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    root = tmp_path_factory.mktemp("stream")
    stream = io.BytesIO(data)
    try:
        for event in read_stream(stream.read, root, {"c0"}, FUZZ_CAP):
            assert event.case == "c0"
    except StreamError as exc:
        assert str(exc)
    written = [path for path in root.rglob("*") if path.is_file()]
    assert all(path.stat().st_size <= FUZZ_CAP for path in written)
    assert not any(tmp_path_factory.getbasetemp().glob("x"))
