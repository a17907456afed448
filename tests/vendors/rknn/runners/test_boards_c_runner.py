"""Runtime c-runner over a real loopback SSH board, through RknnBoardTarget.

The C runner (``board_files/c-runner``) really compiled here against the C API test double
(tests/fakes/c_api_double, built as librknnmrt.so), pushed to the board by the harness and driven by
its ``sh`` driver. The board is an sshd on 127.0.0.1 whose sessions see only a busybox-like
PATH (``BOARD_TOOLS``: sh, tar and the coreutils the lock, discovery and driver use; no python)
and a fake RV1106 sysroot. The runner finds the double through its RPATH (``build_runner(rpath=)``
/ ``hil boards build-runner --rpath``), as on a board whose library is outside the loader's path.

Models: the double cannot read a real .rknn, so ``DoubleModels`` (TEST ONLY) converts each ONNX
model for real (the build log still gives placement) and then hands the board the double's
text descriptor for that case instead of the .rknn. Outputs are the double's
``1 + sum (k+2)*in_k``, not the ONNX operator's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shlex
import shutil
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import psutil
import pytest
from tests.fakes.c_double import DOUBLE, build_double, descriptor
from tests.fakes.sshd import SshServer, alive, onnx_model, wait_until, write_sysroot
from tests.fakes.sysfs import write_sysfs
from tests.helpers.boards import BOARD_TOOLS
from tests.helpers.cli import hil_boards

from harness.boards.inventory import Board, BoardFileError, load_board
from harness.targets.job import Job
from harness.targets.observation import Observation
from harness.targets.timing import JobTiming, timing_record
from harness.vendors.rknn.board import RknnBoardTarget
from harness.vendors.rknn.documents.properties import W_STRIDE
from harness.vendors.rknn.model_io import checks as io_checks
from harness.vendors.rknn.model_io.cases import platform_cases
from harness.vendors.rknn.model_io.layout import (
    InputStride,
    OutputLayout,
    input_stride,
    output_layout,
)
from harness.vendors.rknn.runners.c_runner import CROSS_TOOLCHAINS, RUNNER_BINARY, build_runner
from harness.vendors.rknn.runtimes import RUNTIMES
from harness.vendors.rknn.toolkit.convert import Conversion, ConversionCache

SMALL = (1, 1, 2, 3)
SMALL_MODEL = descriptor(
    "input name=x type=UINT8 shape=1,1,2,3 align=16",
    "output name=y type=INT8 shape=1,1,2,3 fmt=NC1HWC2 c2=16 hw=4 from=0 scale=0.5",
)
SMALL_X = np.array([[[[1, 2, 3], [4, 5, 6]]]], np.float32)
SMALL_Y = 1 + 2 * SMALL_X  # what the double computes; exact at scale 0.5


class DoubleModels(ConversionCache):
    """TEST ONLY: real host conversions, but the board gets the double's descriptor per case."""

    def __init__(self, directory: Path, folder: Path, models: Mapping[str, bytes]) -> None:
        super().__init__(directory)
        self.folder = folder
        self.models = models

    def convert_many(self, requests: Sequence[Job]) -> list[Conversion]:
        self.folder.mkdir(parents=True, exist_ok=True)
        conversions = []
        for request, conversion in zip(requests, super().convert_many(requests), strict=True):
            assert conversion.rknn_path is not None, conversion.error or conversion.infra_error
            path = self.folder / f"{len(list(self.folder.iterdir()))}.rknn"
            path.write_bytes(self.models[request.case_id])
            conversions.append(dataclasses.replace(conversion, rknn_path=path))
        return conversions


@pytest.fixture(scope="module")
def runner_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hil_c_runner built like an RV1106 one (librknnmrt), finding the double by its RPATH."""
    libdir = build_double(tmp_path_factory.mktemp("double"))
    out = tmp_path_factory.mktemp("runner")
    return build_runner(
        out, rknn_include=DOUBLE, rknn_lib=libdir, rknn_libname="rknnmrt", rpath=str(libdir)
    )


@pytest.fixture(scope="module")
def board_tools(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """A folder of links to ``tools`` only: the board's whole PATH."""
    root = tmp_path_factory.mktemp("board-tools")

    def folder(tools: Sequence[str] = BOARD_TOOLS) -> Path:
        path = root / "-".join(tools)
        if not path.exists():
            path.mkdir()
            for tool in tools:
                found = shutil.which(tool)
                assert found, f"{tool} is needed on the loopback board"
                (path / tool).symlink_to(found)
        return path

    return folder


@pytest.fixture
def c_board_for(
    sshd_factory: Callable[..., SshServer],
    board_tools: Callable[..., Path],
    runner_build: Path,
    tmp_path: Path,
) -> Callable[..., tuple[Board, SshServer]]:
    """A loopback RV1106 board with runtime c-runner and its own copy of the runner binary."""

    def make(tools: Sequence[str] = BOARD_TOOLS, **fields: object) -> tuple[Board, SshServer]:
        home = tmp_path / "board-home"
        home.mkdir(exist_ok=True)
        server = sshd_factory({"PATH": str(board_tools(tools)), "HOME": str(home)})
        binary = tmp_path / "host" / RUNNER_BINARY
        if not binary.exists():
            binary.parent.mkdir()
            shutil.copy(runner_build, binary)
        sysroot = write_sysroot(tmp_path / "sysroot", "rockchip,rv1106-ipc\0rockchip,rv1106\0")
        document = {
            "soc": "rv1106",
            "platform": "rv1106",
            "runtime": "c-runner",
            "c_runner": str(binary),
            "python": "python3",  # not on the board's PATH: nothing may need it
            "sysroot": str(sysroot),
            **fields,
        }
        return load_board(server.board_file(tmp_path / "boards", **document), RUNTIMES), server

    return make


@pytest.fixture
def models() -> dict[str, bytes]:
    """Case id -> the double's descriptor, filled in by each test."""
    return {}


@pytest.fixture
def cache(board_cache: ConversionCache, models: dict[str, bytes], tmp_path: Path) -> DoubleModels:
    return DoubleModels(board_cache.directory, tmp_path / "descriptors", models)


def request(
    case_id: str,
    inputs: Sequence[np.ndarray],
    op: str = "Relu",
    platform: str = "rv1106",
    quantize: bool = True,
) -> Job:
    """A case, by default an int8 RV1106 one (that platform builds nothing else); int8 cases
    have a fixed calibration set."""
    shape = inputs[0].shape
    calibration = [np.full(shape, 0.5, np.float32) for _ in inputs]
    return Job(
        model=onnx_model(op, shape, inputs=len(inputs)),
        inputs=list(inputs),
        target_platform=platform,
        quantize=quantize,
        dataset=[calibration] if quantize else None,
        case_id=case_id,
    )


def small(case_id: str, models: dict[str, bytes], *extra: str) -> Job:
    models[case_id] = SMALL_MODEL + "".join(f"{line}\n" for line in extra).encode()
    return request(case_id, [SMALL_X])


def queried(observation: Observation) -> list[dict[str, object]]:
    return [t for t in observation.tensors if t.get("source") == "rknn_query"]


def processes(argv0: str) -> list[psutil.Process]:
    """Live processes whose command line starts with ``argv0``."""
    found = []
    for process in psutil.process_iter(["cmdline", "status", "ppid"]):
        cmdline = process.info["cmdline"] or []
        if process.info["status"] != psutil.STATUS_ZOMBIE and cmdline[:1] == [argv0]:
            found.append(process)
    return found


def drivers(board: Board) -> list[int]:
    """Driver processes; the driver's own subshells (forked just before they exec the runner,
    so for a moment they carry the same command line) are not drivers."""
    runner = f"{board.workdir}/{RUNNER_BINARY}"
    found = [p for p in processes("sh") if p.info["cmdline"][1:] == ["batch/run.sh", runner]]
    pids = {p.pid for p in found}
    return [p.pid for p in found if p.info["ppid"] not in pids]


def runners(board: Board) -> list[int]:
    return [p.pid for p in processes(f"{board.workdir}/{RUNNER_BINARY}")]


def assert_small(observation: Observation) -> None:
    assert observation.infra_error is None and observation.failed_stage is None
    assert observation.outputs is not None
    np.testing.assert_array_equal(observation.outputs[0], SMALL_Y)


def gone(pids: list[int]) -> bool:
    return not any(map(alive, pids))


def test_a_batch_runs_on_a_c_runner_board_in_one_stream(
    c_board_for: Callable[..., tuple[Board, SshServer]],
    cache: DoubleModels,
    models: dict[str, bytes],
) -> None:
    board, _ = c_board_for()
    rng = np.random.default_rng(3)
    wide = rng.integers(0, 100, (1, 3, 5, 223)).astype(np.float32)
    models["wide"] = descriptor(
        "input name=x type=UINT8 shape=1,3,5,223 align=16",  # RV1106 uint8, C = 3: width to 16
        "output name=y type=FP32 shape=1,3,5,223 fmt=NCHW from=0",
    )
    x = rng.integers(0, 30, (1, 19, 3, 7)).astype(np.float32)
    y = (rng.integers(-40, 40, (1, 19, 3, 7)) * 0.25).astype(np.float32)
    models["two inputs"] = descriptor(
        "input name=x type=UINT8 shape=1,19,3,7 align=1",
        "input name=y type=INT8 shape=1,19,3,7 align=1 zp=-3 scale=0.25",
        "output name=q type=INT8 shape=1,19,3,7 fmt=NC1HWC2 c2=16 hw=4 from=0,1 zp=2 scale=0.5",
        "output name=h type=FP16 shape=1,19,3,7 fmt=NC1HWC2 c2=8 hw=4 from=1",
    )
    requests = [
        request("wide", [wide]),
        request("two inputs", [x, y], op="Add"),
        small("small", models, "sleep run 500"),  # the driver is still there to be seen
    ]
    seen: list[list[int]] = []
    with RknnBoardTarget(
        board, cache=cache, on_case_started=lambda _: seen.append(drivers(board))
    ) as target:
        observations = target.run_batch(requests)
    wide_seen, two, tiny = observations
    for observation in observations:
        assert observation.backend == board.name
        assert observation.infra_error is None and observation.failed_stage is None
        assert observation.outputs is not None
        assert all(output.dtype == np.float32 for output in observation.outputs)
    assert len(seen) == 3 and len(seen[0]) == 1 and seen[0] == seen[1] == seen[2]  # one driver

    # Unaligned width: the runner pads rows to w_stride, the double reads them at that stride.
    np.testing.assert_array_equal(wide_seen.outputs[0], 1 + 2 * wide)
    attrs = queried(wide_seen)
    predicted = input_stride("rv1106", "int8", "uint8", (1, 3, 5, 223), "NHWC")
    assert attrs[0]["w_stride"] == predicted.w_stride == 224
    assert attrs[0]["size_with_stride"] == predicted.size_with_stride
    assert (attrs[0]["role"], attrs[0]["format"], attrs[0]["native_shape"]) == (
        "input", "NHWC", [1, 5, 223, 3],
    )  # fmt: skip
    # The judge checks the queried w_stride against a documented one: 224 holds, 240 drifts.
    case = platform_cases("rv1106")["rv1106/input/int8/uint8/4d/c3/w33"]
    (w_stride,) = [e for e in case.expects if e.prop == W_STRIDE]
    for documented, verdict in ((224, "confirmed"), (240, "doc-drift")):
        expects = (dataclasses.replace(w_stride, value=documented),)
        wide_case = dataclasses.replace(case, expects=expects)
        assert io_checks.JUDGE(wide_case, wide_seen, None).verdict == verdict

    # Several inputs; int8 and fp16 NC1HWC2 outputs decoded (and dequantized) to float32.
    value = 1 + 2 * x.astype(np.float64) + 3 * y
    want_q = (np.clip(np.rint(value / 0.5) + 2, -128, 127) - 2) * 0.5
    np.testing.assert_array_equal(two.outputs[0], want_q.astype(np.float32))
    want_h = (1 + 2 * y).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(two.outputs[1], want_h)
    q, h = (t for t in queried(two) if t["role"] == "output")
    assert (q["format"], q["native_shape"], q["dtype"]) == ("NC1HWC2", [1, 2, 3, 7, 16], "INT8")
    assert (
        q["size_with_stride"]
        == output_layout("rv1106", "int8", "NC1HWC2", (1, 19, 3, 7)).size_with_stride
    )
    assert (h["native_shape"], h["dtype"], h["plane"]) == ([1, 3, 3, 7, 8], "FP16", 24)
    assert_small(tiny)

    # Placement and the build log's tensors still come from the host conversion, first.
    assert [layer["target"] for layer in wide_seen.placement if layer["op"] == "Relu"] == ["NPU"]
    assert (
        "source" not in wide_seen.tensors[0] and "Network Layer Information Table" in wide_seen.log
    )
    versions = tiny.versions
    assert (versions["board"], versions["board_soc"]) == (board.name, "rv1106")
    assert versions["board_python"] == "unknown"  # no python on this board
    assert versions["board_sdk"] == "2.3.2-test" and versions["board_rknn_driver"] == "0.9.8-test"
    binary = board.runtime.binary.read_bytes()
    assert versions["board_runtime"] == f"{RUNNER_BINARY} {hashlib.sha256(binary).hexdigest()}"
    assert versions["board_hil_c_runner"] == "hil_c_runner 1" and versions["core_mask"] == "auto"
    assert {"board_run_s", "board_case_s"} <= set(tiny.timings)
    # Closed: no driver or runner left; the work directory keeps only the runner.
    assert drivers(board) == [] and runners(board) == []
    assert [p.name for p in Path(board.workdir).iterdir()] == [RUNNER_BINARY]
    assert Path(board.workdir, RUNNER_BINARY).read_bytes() == binary


def test_every_runtime_failure_is_classified_and_costs_only_its_case(
    c_board_for: Callable[..., tuple[Board, SshServer]],
    cache: DoubleModels,
    models: dict[str, bytes],
) -> None:
    board, _ = c_board_for()
    requests = [
        small("load failure", models),
        small("unsupported op", models, "fail init -1 Pow is not supported on this platform"),
        small("run failure", models, "fail run -1 failed to submit the task"),
        small("timeout", models, "hang run"),
        small("fine", models),
    ]
    models["load failure"] = b"\x00not a model"
    seen: list[list[int]] = []
    with RknnBoardTarget(
        board,
        cache=cache,
        timeout_s=1,
        host_grace_s=60,  # only the board-side deadline can end the hang
        on_case_started=lambda _: seen.append(drivers(board)),
    ) as target:
        load, unsupported, run, timeout, fine = target.run_batch(requests)
    assert len({pid for pids in seen for pid in pids}) == 1  # no restart for any of them

    assert load.failed_stage is None and load.outputs is None
    assert load.infra_error == (
        "board loopback: model not loadable on this board: init: rknn_init returned -6 "
        "(RKNN_ERR_MODEL_INVALID)"
    )
    assert "runner output:\nE RKNN: invalid RKNN model" in load.log
    for failed, words in ((unsupported, "Pow is not supported"), (run, "failed to submit")):
        assert failed.failed_stage == "runtime" and failed.infra_error is None
        assert words in str(failed.error) and failed.outputs is None
    assert str(unsupported.error).startswith("rknn_init/rknn_query failed: ")
    assert str(run.error).startswith("rknn_run failed: ")
    assert timeout.infra_error == (
        "board loopback: runner timed out: timeout: no answer within 1000 ms during run"
    )
    assert timeout.failed_stage is None and timeout.outputs is None
    assert [t["native_shape"] for t in queried(timeout)] == [[1, 2, 3, 1], [1, 1, 2, 3, 16]]
    assert_small(fine)


def test_a_wedged_runner_is_killed_by_the_host_timeout(
    c_board_for: Callable[..., tuple[Board, SshServer]],
    cache: DoubleModels,
    models: dict[str, bytes],
) -> None:
    board, _ = c_board_for()
    requests = [small("wedges", models, "hang run"), small("after", models)]
    wedged: list[int] = []

    def stop(case_id: str) -> None:
        if case_id == "wedges":  # stopped, its own timer cannot fire: only the host's can
            wedged.extend(drivers(board) + runners(board))
            os.kill(runners(board)[0], signal.SIGSTOP)

    with RknnBoardTarget(
        board, cache=cache, timeout_s=2, host_grace_s=2, on_case_started=stop
    ) as target:
        stopped, after = target.run_batch(requests)
    assert stopped.infra_error is not None and "host-side timeout" in stopped.infra_error
    assert "runner killed" in stopped.infra_error and stopped.outputs is None
    assert_small(after)
    assert len(wedged) == 2 and wait_until(lambda: gone(wedged), timeout=5)


def test_a_dropped_connection_retries_the_case_and_the_orphaned_driver_stops(
    c_board_for: Callable[..., tuple[Board, SshServer]],
    cache: DoubleModels,
    models: dict[str, bytes],
) -> None:
    board, server = c_board_for()
    requests = [small("before", models), small("victim", models, "sleep run 1500")]
    orphans: list[int] = []

    def drop(case_id: str) -> None:
        if case_id == "victim" and not orphans:
            orphans.extend(drivers(board) + runners(board))
            server.stop()  # the connection dies mid-case
            server.start()

    with RknnBoardTarget(board, cache=cache, on_case_started=drop) as target:
        before, victim = target.run_batch(requests)
        assert target.down is None
    assert_small(before)
    assert_small(victim)
    assert "retried once after: board loopback: SSH connection lost" in victim.log
    # The orphan finishes its case, cannot write the stream and exits; nothing is left.
    assert len(orphans) == 2 and wait_until(lambda: gone(orphans), timeout=10)
    assert drivers(board) == [] and runners(board) == []


def test_the_runner_is_pushed_when_missing_or_changed_and_only_then(
    c_board_for: Callable[..., tuple[Board, SshServer]],
    cache: DoubleModels,
    models: dict[str, bytes],
) -> None:
    board, _ = c_board_for()
    on_board = Path(board.workdir, RUNNER_BINARY)
    host = board.runtime.binary
    assert host is not None and not on_board.exists()

    def run_once() -> os.stat_result:
        with RknnBoardTarget(board, cache=cache) as target:
            assert_small(target.run(small("case", models)))
        assert on_board.read_bytes() == host.read_bytes()
        return on_board.stat()

    first = run_once()  # missing: pushed
    again = run_once()  # same binary: left alone
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)
    on_board.write_bytes(b"#!/bin/sh\nexit 99\n")  # changed on the board: would fail if run
    tampered = run_once()
    assert tampered.st_ino != first.st_ino
    with host.open("ab") as f:  # a new build on the host (trailing bytes do not change an ELF)
        f.write(b"\0rebuilt")
    rebuilt = run_once()
    assert rebuilt.st_ino != tampered.st_ino and on_board.read_bytes().endswith(b"\0rebuilt")


def test_without_sha256sum_on_the_board_the_runner_is_pushed_every_time(
    c_board_for: Callable[..., tuple[Board, SshServer]],
    cache: DoubleModels,
    models: dict[str, bytes],
) -> None:
    board, _ = c_board_for(tools=[tool for tool in BOARD_TOOLS if tool != "sha256sum"])
    inodes = []
    for _ in range(2):
        with RknnBoardTarget(board, cache=cache) as target:
            assert_small(target.run(small("case", models)))
        inodes.append(Path(board.workdir, RUNNER_BINARY).stat().st_ino)
    assert inodes[0] != inodes[1]


def test_hostile_work_directory_is_only_data(
    c_board_for: Callable[..., tuple[Board, SshServer]],
    cache: DoubleModels,
    models: dict[str, bytes],
    tmp_path: Path,
) -> None:
    hostile = "work dir 'q' \"dq\"; touch PWNED1; $(touch PWNED2) `touch PWNED3` & | > x \\"
    workdir = tmp_path / hostile / "-n"
    board, _ = c_board_for(workdir=str(workdir))
    with RknnBoardTarget(board, cache=cache) as target:
        first, second = target.run_batch([small("a", models), small("b", models)])
        assert Path(workdir, ".hil-lock").is_dir()
    assert_small(first)
    assert_small(second)
    assert [p.name for p in workdir.iterdir()] == [RUNNER_BINARY]
    for folder in (tmp_path, tmp_path / hostile, workdir, Path.home(), Path("/")):
        assert not list(folder.glob("PWNED*"))


def test_a_board_whose_runner_is_not_built_is_refused(
    c_board_for: Callable[..., tuple[Board, SshServer]], tmp_path: Path
) -> None:
    board, _ = c_board_for()
    built = tmp_path / "not-built" / RUNNER_BINARY
    missing = dataclasses.replace(board, runtime=dataclasses.replace(board.runtime, binary=built))
    with pytest.raises(BoardFileError) as info:
        RknnBoardTarget(missing)
    assert info.value.key_path == "c_runner"
    assert str(board.source) in str(info.value) and "not-built" in str(info.value)


# -- timing (--perf) ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rknnrt_runner(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hil_c_runner built like an RK3588 one (librknnrt: core mask and the perf queries)."""
    libdir = build_double(tmp_path_factory.mktemp("double-rt"))
    out = tmp_path_factory.mktemp("runner-rt")
    return build_runner(out, rknn_include=DOUBLE, rknn_lib=libdir, rpath=str(libdir))


def timed(job: Job, layers: bool = True, platform: str = "rv1106") -> Job:
    perf = JobTiming(warmup=1, runs=6, cap_s=5, layers=layers)
    return dataclasses.replace(job, perf=perf, target_platform=platform)


def test_timed_runs_on_an_mrt_board_use_the_wall_clock_and_read_its_clocks(
    c_board_for: Callable[..., tuple[Board, SshServer]],
    cache: DoubleModels,
    models: dict[str, bytes],
) -> None:
    board, _ = c_board_for()
    write_sysfs(Path(board.sysroot))
    job = timed(small("timed", models, "sleep run 20"))
    with RknnBoardTarget(board, cache=cache) as target:
        [observation] = target.run_batch([job])
    assert_small(observation)
    record = timing_record(observation.perf)
    assert record["clock"] == "wall" and record["runs"] == 6 and record["warmup"] == 1
    assert 0.02 <= record["min_s"] <= record["median_s"] < 1.0
    assert "librknnmrt lacks it" in record["layers_unavailable"]
    before = record["conditions"]["before"]
    # RV1106: CPU, DDR and temperature; its NPU has no devfreq node listed
    assert before["cpu0_governor"] == "schedutil" and before["soc_temp"] == "45000"
    assert before["ddr_freq"] == "1560000000" and "npu_freq" not in before
    assert record["conditions"]["after"] == before and record["clocks_changed"] == []


def test_timed_runs_on_an_rknnrt_board_use_the_runtimes_clock_and_layer_table(
    c_board_for: Callable[..., tuple[Board, SshServer]],
    cache: DoubleModels,
    models: dict[str, bytes],
    rknnrt_runner: Path,
) -> None:
    board, _ = c_board_for(c_runner=str(rknnrt_runner), platform="rk3588", soc="rk3588")
    job = timed(small("timed", models, "sleep run 20"), platform="rk3588")
    with RknnBoardTarget(board, cache=cache) as target:
        [observation] = target.run_batch([job])
    assert_small(observation)
    record = timing_record(observation.perf)
    assert record["clock"] == "rknn_perf_run" and record["runs"] == 6
    assert 0.02 <= record["min_s"] <= record["median_s"] < 1.0
    # RKNN_QUERY_PERF_DETAIL, by layer name with its placement: the double's table
    placed = [(layer["name"], layer["op"], layer["target"]) for layer in record["layers"]]
    assert placed == [
        ("x", "InputOperator", "CPU"),
        ("y", "Add", "NPU"),
        ("y", "OutputOperator", "CPU"),
    ]
    assert record["layers"][1]["time_us"] >= 20000 and record["layers"][1]["io"] is False
    # no fake sysfs on this board: every reading says so, none is made up
    assert set(record["conditions"]["before"].values()) == {"unreadable"}


# -- the runner on emulated ARM ---------------------------------------------------------------

# Per architecture: the platform its runner is built for, the emulator, the ELF class
# (1: 32-bit, 2: 64-bit) and machine (40: ARM, 183: AArch64) the build must have.
ARM = {
    "armhf": ("rv1106", "qemu-arm-static", 1, 40),
    "aarch64": ("rk3588", "qemu-aarch64-static", 2, 183),
}
ARM_PACKAGES = [p for toolchain in CROSS_TOOLCHAINS.values() for p in toolchain.packages]
ARM_INSTALL = f"sudo apt-get install {' '.join([*ARM_PACKAGES, 'qemu-user-static'])}"
RKNN_TYPES = {"uint8": "UINT8", "float16": "FP16"}


@pytest.fixture(scope="module", params=sorted(ARM))
def arm_runner(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    """The platform, and the runner cross-built for it by ``hil boards build-runner --arch``
    against the double, itself cross-built: a script the board runs, calling the emulator
    explicitly (no binfmt here)."""
    arch = request.param
    platform, qemu, elf_class, machine = ARM[arch]
    toolchain = CROSS_TOOLCHAINS[arch]
    emulator = shutil.which(qemu)
    if toolchain.problem() or not emulator:
        pytest.skip(f"the ARM runner tests need {toolchain.prefix}gcc and {qemu}: {ARM_INSTALL}")
    libdir = build_double(tmp_path_factory.mktemp(f"double-{arch}"), toolchain.prefix)
    out = tmp_path_factory.mktemp(f"runner-{arch}")
    paths = ["--rknn-include", str(DOUBLE), "--rknn-lib", str(libdir), "--rpath", str(libdir)]
    argv = ["build-runner", f"--arch={arch}", f"--platform={platform}", *paths, f"--out={out}"]
    assert hil_boards(argv) == 0
    binary = out / platform / RUNNER_BINARY
    elf = binary.read_bytes()[:20]
    built = (elf[:4], elf[4], int.from_bytes(elf[18:20], "little"))
    assert built == (b"\x7fELF", elf_class, machine)
    script = out / f"{RUNNER_BINARY}-{arch}"
    command = shlex.join([emulator, "-L", str(toolchain.sysroot), str(binary)])
    script.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
    script.chmod(0o755)
    return platform, script


def arm_case(
    platform: str, precision: str, shape: tuple[int, ...], models: dict[str, bytes]
) -> tuple[Job, np.ndarray, InputStride, OutputLayout]:
    """A case (named by its precision) whose input width stride and NC1HWC2 output are the
    catalogue's for the platform; its expected output, and that stride and layout. int8 outputs
    have a signed zero point, float16 ones are FP16."""
    input_type = "uint8" if precision == "int8" else "float16"
    stride = input_stride(platform, precision, input_type, shape, "NHWC")
    layout = output_layout(platform, precision, "NC1HWC2", shape)
    dims = ",".join(map(str, shape))
    output = "type=INT8 zp=-3 scale=0.5" if precision == "int8" else "type=FP16"
    models[precision] = descriptor(
        f"input name=x type={RKNN_TYPES[input_type]} shape={dims} align={stride.align}",
        f"output name=y {output} shape={dims} fmt=NC1HWC2 c2={layout.channel_align} "
        f"hw={layout.hw_align} from=0",
    )
    x = np.random.default_rng(len(models)).integers(0, 30, shape).astype(np.float32)
    job = request(precision, [x], platform=platform, quantize=precision == "int8")
    want = (1 + 2 * x).astype(np.float16).astype(np.float32)  # small integers: exact in both
    return job, want, stride, layout


def test_a_batch_runs_on_an_emulated_arm_board(
    arm_runner: tuple[str, Path],
    c_board_for: Callable[..., tuple[Board, SshServer]],
    cache: DoubleModels,
    models: dict[str, bytes],
) -> None:
    """32-bit (RV1106) and aarch64 (RK3588) builds: every size, stride and attribute crosses the
    target's struct layout, the 64-bit timings its printf, over the loopback board's stream."""
    platform, runner = arm_runner
    board, _ = c_board_for(c_runner=str(runner), platform=platform, soc=platform)
    precisions = ["int8"] if platform == "rv1106" else ["int8", "float16"]
    # width 223 padded to 224; 19 channels in C1 blocks of 8, 21 pixels a plane padded to 24
    shapes = {"int8": (1, 3, 5, 223), "float16": (1, 19, 3, 7)}
    cases = [arm_case(platform, p, shapes[p], models) for p in precisions]
    jobs = [job for job, *_ in cases]
    jobs.append(timed(small("timed", models, "sleep run 20"), platform=platform))
    failing = small("run failure", models, "fail run -1 failed to submit the task")
    jobs.append(dataclasses.replace(failing, target_platform=platform))
    with RknnBoardTarget(board, cache=cache) as target:
        *observations, timed_run, failed = target.run_batch(jobs)

    for (job, want, stride, layout), observation in zip(cases, observations, strict=True):
        assert observation.infra_error is None and observation.failed_stage is None
        assert observation.outputs is not None
        np.testing.assert_array_equal(observation.outputs[0], want)
        x, y = queried(observation)
        assert (x["w_stride"], x["size_with_stride"]) == (stride.w_stride, stride.size_with_stride)
        assert (y["format"], y["dtype"]) == ("NC1HWC2", "INT8" if job.quantize else "FP16")
        assert tuple(y["native_shape"]) == layout.native_shape
        assert y["size_with_stride"] == layout.size_with_stride
        times = observation.timings  # the runner's int64 microseconds, as the board gave them
        assert all(times[f"board_{t}_s"] >= 0 for t in ("init", "query", "set_io"))
        assert 0 <= times["board_run_s"] <= times["board_total_s"] < 60

    assert_small(timed_run)
    record = timing_record(timed_run.perf)
    assert record["runs"] == 6 and 0.02 <= record["min_s"] <= record["median_s"] < 1.0
    if platform == "rv1106":
        assert record["clock"] == "wall" and "librknnmrt lacks it" in record["layers_unavailable"]
    else:
        assert record["clock"] == "rknn_perf_run"
        assert [layer["op"] for layer in record["layers"]] == [
            "InputOperator", "Add", "OutputOperator",
        ]  # fmt: skip
    assert failed.failed_stage == "runtime" and "failed to submit" in str(failed.error)
    assert failed.outputs is None and failed.infra_error is None
