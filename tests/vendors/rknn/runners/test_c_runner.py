"""The C runner, really compiled with the host gcc and run against a test double of the C API.

The double (tests/fakes/c_api_double) is built as librknnmrt.so and librknnrt.so; its "models" are
text descriptors (see rknn_double.c). Every run goes through ``CRunnerJob.argv`` and
``observation_from_run``, the same path the board layer takes after copying files back.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import tarfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from tests.fakes.c_double import DOUBLE, build_double, descriptor
from tests.fakes.sshd import alive, wait_until

from harness.targets.observation import Observation
from harness.vendors.rknn.model_io.layout import input_stride, output_layout
from harness.vendors.rknn.platforms import CORE_MASKS
from harness.vendors.rknn.runners import c_runner_cli
from harness.vendors.rknn.runners.c_batch import BatchCase, StreamError, batch_files, read_stream
from harness.vendors.rknn.runners.c_runner import (
    CORE_MASK_VALUES,
    CROSS_TOOLCHAINS,
    RUNNER_SOURCE,
    CRunnerJob,
    RunnerBuildError,
    build_runner,
    core_mask_value,
    decode_outputs,
    observation_from_run,
    read_request,
    request_files,
    write_request,
)
from harness.vendors.rknn.runners.runner_session import MAX_CASE_BYTES

RUN_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def libdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The double as librknnmrt.so (no rknn_set_core_mask, like the real one) and librknnrt.so."""
    return build_double(tmp_path_factory.mktemp("double"))


@pytest.fixture(scope="module")
def mrt_runner(libdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built like an RV1106 runner: against librknnmrt, so without --core-mask."""
    out = tmp_path_factory.mktemp("mrt")
    return build_runner(
        out, rknn_include=DOUBLE, rknn_lib=libdir, rknn_libname="rknnmrt", rpath=str(libdir)
    )


@pytest.fixture(scope="module")
def rt_runner(libdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rt")
    return build_runner(out, rknn_include=DOUBLE, rknn_lib=libdir, rpath=str(libdir))


def run(
    runner: Path, request: CRunnerJob, *, extra: Sequence[str] = (), timeout_ms: int = 10000
) -> tuple[Observation, subprocess.CompletedProcess[str]]:
    argv = request.argv(str(runner), timeout_ms=timeout_ms) + list(extra)
    done = subprocess.run(
        argv, cwd=request.directory, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )
    out = request.directory / request.outputs
    return observation_from_run("double", done.returncode, done.stderr, out), done


def sidecar(request: CRunnerJob) -> dict:
    return json.loads((request.directory / request.outputs / "result.json").read_text())


def test_unaligned_width_is_padded_to_w_stride_and_padding_never_leaks(
    mrt_runner: Path, tmp_path: Path
) -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(0, 100, (1, 3, 5, 223), dtype=np.uint8)  # NCHW
    model = descriptor(
        "input name=x type=UINT8 shape=1,3,5,223 align=16",
        "output name=y type=FP32 shape=1,3,5,223 fmt=NCHW from=0",
    )
    observation, done = run(mrt_runner, write_request(tmp_path, model, [x]))

    assert done.returncode == 0, done.stderr
    attr = sidecar(CRunnerJob(tmp_path))["inputs"][0]["attr"]
    # The catalogue's RV1106 uint8 row (width aligned to 16) predicts what the runtime reports.
    predicted = input_stride("rv1106", "int8", "uint8", x.shape, "NHWC")
    assert (attr["w_stride"], attr["size_with_stride"]) == (224, predicted.size_with_stride)
    assert predicted.w_stride == 224
    # The double reads rows 224 wide from a buffer it filled with garbage: any mis-strided or
    # unpadded copy shifts every row after the first and breaks this equality.
    assert observation.outputs is not None
    np.testing.assert_array_equal(observation.outputs[0], 1 + 2 * x.astype(np.float32))
    assert observation.failed_stage is None and observation.infra_error is None


def test_several_inputs_to_int8_and_fp16_nc1hwc2_outputs(mrt_runner: Path, tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    x = rng.integers(0, 30, (1, 19, 3, 7), dtype=np.uint8)
    y = rng.integers(-128, 128, (1, 19, 3, 7), dtype=np.int8)
    model = descriptor(
        "input name=x type=UINT8 shape=1,19,3,7 align=1",
        "input name=y type=INT8 shape=1,19,3,7 align=1 zp=-3 scale=0.25",
        "output name=q type=INT8 shape=1,19,3,7 fmt=NC1HWC2 c2=16 hw=4 from=0,1 zp=2 scale=0.5",
        "output name=h type=FP16 shape=1,19,3,7 fmt=NC1HWC2 c2=8 hw=4 from=1",
    )
    request = write_request(tmp_path, model, [x, y])
    observation, done = run(mrt_runner, request)
    assert done.returncode == 0, done.stderr

    y_real = (y.astype(np.float64) + 3) * 0.25
    value = 1 + 2 * x.astype(np.float64) + 3 * y_real
    want_q = np.clip(np.rint(value / 0.5) + 2, -128, 127).astype(np.int8)
    want_h = (1 + 2 * y_real).astype(np.float16)
    result = sidecar(request)
    q, h = decode_outputs(result, tmp_path / "out")
    assert (q.dtype, h.dtype) == (np.int8, np.float16)
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_array_equal(h, want_h)
    assert observation.outputs is not None
    np.testing.assert_array_equal(observation.outputs[0], (want_q.astype(np.float32) - 2) * 0.5)
    np.testing.assert_array_equal(observation.outputs[1], want_h.astype(np.float32))

    # Same sizes as the layout module predicts from the documented RK3588 alignments
    # (non-conv int8 C2 16, fp16 C2 8, H*W aligned to 4: 21 -> 24 pixels per plane).
    native_q, native_h = (entry["native"] for entry in result["outputs"])
    assert native_q["dims"] == [1, 2, 3, 7, 16] and native_h["dims"] == [1, 3, 3, 7, 8]
    for native, precision in ((native_q, "int8"), (native_h, "float16")):
        predicted = output_layout("rk3588", precision, "NC1HWC2", (1, 19, 3, 7))
        assert native["size_with_stride"] == predicted.size_with_stride
    assert [t.get("plane") for t in observation.tensors if t["role"] == "output"] == [24, 24]
    # The padding really holds garbage (channels 19..31, pixels 21..23), so decoding must skip it.
    raw = np.fromfile(tmp_path / "out" / "output_0.bin", dtype=np.uint8).reshape(1, 2, 24, 16)
    assert (raw[0, 1, :, 3:] == 0x7B).all() and (raw[0, :, 21:, :] == 0x7B).all()
    assert observation.versions == {
        "hil_c_runner": "hil_c_runner 1",
        "rknn_api": "2.3.2-test",
        "rknn_driver": "0.9.8-test",
    }
    assert observation.timings["run_s"] >= 0 and observation.timings["total_s"] > 0


def test_nchw_reported_fp16_input_and_channel_padded_nhwc_output(
    rt_runner: Path, tmp_path: Path
) -> None:
    x = np.linspace(-4, 4, 2 * 5 * 6 * 9).reshape(2, 5, 6, 9).astype(np.float16)
    model = descriptor(
        "input name=x type=FP16 shape=2,5,6,9 align=8 fmt=NCHW",
        "output name=y type=FP16 shape=2,5,6,9 fmt=NHWC from=0",
    )
    request = write_request(tmp_path, model, [x])
    observation, done = run(rt_runner, request)

    assert done.returncode == 0, done.stderr
    bound = sidecar(request)["inputs"][0]["bound"]
    assert (bound["fmt"], bound["type"], bound["w_stride"]) == ("NHWC", "FP16", 16)
    assert observation.outputs is not None
    want = (1 + 2 * x.astype(np.float64)).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(observation.outputs[0], want)


def _case(tmp_path: Path, *lines: str) -> CRunnerJob:
    x = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(1, 2, 3, 4)
    model = descriptor(
        "input name=x type=UINT8 shape=1,2,3,4 align=16",
        "output name=y type=INT8 shape=1,2,3,4 fmt=NC1HWC2 c2=16 hw=4 from=0",
        *lines,
    )
    return write_request(tmp_path, model, [x])


@pytest.mark.parametrize(
    ("lines", "code", "stage", "words"),
    [
        (["fail init -1 Pow is not supported on this platform"], 21, "runtime", "Pow"),
        (["fail set_io -5 zero-copy input type refused"], 30, "runtime", "type refused"),
        (["fail run -1 failed to submit the task"], 40, "runtime", "failed to submit"),
        (["fail init -13 model built for rk3588"], 20, None, "TARGET_PLATFORM_UNMATCH"),
        (["hang run"], 50, None, "during run"),
        (["hang init"], 50, None, "during init"),
    ],
)
def test_runtime_failures_are_classified(
    mrt_runner: Path,
    tmp_path: Path,
    lines: list[str],
    code: int,
    stage: str | None,
    words: str,
) -> None:
    started = time.monotonic()
    observation, done = run(mrt_runner, _case(tmp_path, *lines), timeout_ms=300)

    assert done.returncode == code, done.stderr
    assert time.monotonic() - started < 10
    assert observation.outputs is None
    assert observation.failed_stage == stage
    if stage:
        assert observation.infra_error is None
        assert words in str(observation.error)
    else:
        assert observation.error is None
        assert words in str(observation.infra_error)
    assert done.stderr.count("hil_c_runner:") == 1  # one line, and no warning from cleanup


def test_a_hang_in_run_still_leaves_the_queried_attributes(
    mrt_runner: Path, tmp_path: Path
) -> None:
    request = _case(tmp_path, "hang run")
    observation, done = run(mrt_runner, request, timeout_ms=200)

    assert done.returncode == 50
    assert (sidecar(request)["status"], sidecar(request)["stage"]) == ("running", "run")
    assert [t["native_shape"] for t in observation.tensors] == [[1, 3, 4, 2], [1, 1, 3, 4, 16]]
    assert observation.infra_error == (
        "runner timed out: timeout: no answer within 200 ms during run"
    )


def test_a_corrupt_model_is_a_load_failure(mrt_runner: Path, tmp_path: Path) -> None:
    request = _case(tmp_path)
    (tmp_path / request.model).write_bytes(b"\x00garbage, not a model")
    observation, done = run(mrt_runner, request)

    assert done.returncode == 20
    assert observation.failed_stage is None
    assert observation.infra_error is not None
    assert "RKNN_ERR_MODEL_INVALID" in observation.infra_error
    assert "E RKNN: invalid RKNN model" in observation.log


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([], "expected MODEL.rknn INPUT_DIR OUTPUT_DIR, got 0"),
        (["m", "i", "o", "extra"], "unexpected argument 'extra'"),
        (["m", "i", "o", "--timeout-ms", "soon"], "--timeout-ms wants"),
        (["m", "i", "o", "--timeout-ms"], "--timeout-ms needs a value"),
        (["m", "i", "o", "--verbose"], "unknown option '--verbose'"),
        (["m", "i", "o", "--core-mask=1"], "librknnmrt lacks it"),
    ],
)
def test_bad_arguments_exit_10(
    mrt_runner: Path, tmp_path: Path, argv: list[str], words: str
) -> None:
    done = subprocess.run(
        [str(mrt_runner), *argv], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 10
    assert words in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "o").exists()
    observation = observation_from_run("double", done.returncode, done.stderr, tmp_path / "o")
    assert observation.infra_error is not None
    assert observation.infra_error.startswith("runner usage error: usage error: ")


def test_help_exits_0(mrt_runner: Path) -> None:
    done = subprocess.run([str(mrt_runner), "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("usage: hil_c_runner MODEL.rknn")


def _drop_input(request: CRunnerJob) -> None:
    (request.directory / "in" / "input_0.npy").unlink()


def _wrong_shape(request: CRunnerJob) -> None:
    np.save(request.directory / "in" / "input_0.npy", np.zeros((1, 3, 3, 2), np.uint8))


def _wrong_dtype(request: CRunnerJob) -> None:
    np.save(request.directory / "in" / "input_0.npy", np.zeros((1, 3, 4, 2), np.float64))


def _extra_input(request: CRunnerJob) -> None:
    np.save(request.directory / "in" / "input_1.npy", np.zeros((1, 3, 4, 2), np.uint8))


def _truncated(request: CRunnerJob) -> None:
    path = request.directory / "in" / "input_0.npy"
    path.write_bytes(path.read_bytes()[:-5])


def _drop_model(request: CRunnerJob) -> None:
    (request.directory / request.model).unlink()


@pytest.mark.parametrize(
    ("damage", "code", "words"),
    [
        (_drop_input, 60, "input_0.npy: No such file"),
        (_drop_model, 60, "cannot open model model.rknn"),
        (_wrong_shape, 61, "has shape (1, 3, 3, 2); input 0 'x' needs (1, 3, 4, 2) (NHWC)"),
        (_wrong_dtype, 61, "element type '<f8' cannot be fed"),
        (_extra_input, 61, "input_1.npy exists but the model has 1 inputs"),
        (_truncated, 61, "holds 19 data bytes"),
    ],
)
def test_input_problems_are_infrastructure_errors(
    mrt_runner: Path, tmp_path: Path, damage: object, code: int, words: str
) -> None:
    request = _case(tmp_path)
    assert callable(damage)
    damage(request)
    observation, done = run(mrt_runner, request)

    assert done.returncode == code, done.stderr
    assert observation.failed_stage is None
    assert observation.infra_error is not None and words in observation.infra_error
    assert sidecar(request)["status"] == "error"


def test_core_mask_with_librknnrt(rt_runner: Path, tmp_path: Path) -> None:
    _, done = run(rt_runner, _case(tmp_path / "a"), extra=["--core-mask", "0x7"])
    assert done.returncode == 0, done.stderr
    assert sidecar(CRunnerJob(tmp_path / "a"))["core_mask"] == 7
    refused, done = run(rt_runner, _case(tmp_path / "b"), extra=["--core-mask", "8"])
    assert done.returncode == 22
    assert refused.infra_error is not None and "rknn_set_core_mask(0x8)" in refused.infra_error


def test_core_mask_names_match_the_board_files() -> None:
    assert set(CORE_MASK_VALUES) == set(CORE_MASKS)
    assert core_mask_value("0_1_2") == 7
    with pytest.raises(ValueError, match="core mask must be one of"):
        core_mask_value("3")


def write_files(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def batch_case(name: str, model: bytes, x: np.ndarray, timeout_ms: int = 5000) -> BatchCase:
    args = CRunnerJob(Path(name)).argv("", timeout_ms=timeout_ms)[1:]
    return BatchCase(name, request_files(model, [x]), args)


SMALL = descriptor(
    "input name=x type=UINT8 shape=1,1,2,3 align=16",
    "output name=y type=INT8 shape=1,1,2,3 fmt=NC1HWC2 c2=16 hw=4 from=0",
)


def test_a_batch_runs_through_its_driver_as_one_stream(mrt_runner: Path, tmp_path: Path) -> None:
    x = np.full((1, 1, 2, 3), 5, np.uint8)
    bad = SMALL + b"fail run -1 failed to submit\n"
    cases = [batch_case("c0", SMALL, x), batch_case("c1", bad, x)]
    write_files(tmp_path / "batch", batch_files(cases))
    runner = os.path.relpath(mrt_runner, tmp_path)  # relative paths are resolved by run.sh
    with subprocess.Popen(
        ["sh", "batch/run.sh", runner], cwd=tmp_path, stdout=subprocess.PIPE
    ) as driver:
        assert driver.stdout is not None
        stream = read_stream(driver.stdout.read, tmp_path / "host", {"c0", "c1"}, MAX_CASE_BYTES)
        events = list(stream)
    assert driver.returncode == 0

    assert [(e.case, e.started) for e in events] == [
        ("c0", True),
        ("c0", False),
        ("c1", True),
        ("c1", False),
    ]
    assert events[0].pids[0] == driver.pid == events[2].pids[0]  # the driver, then each runner
    assert events[0].pids[1] != events[2].pids[1]
    first, second = (
        read_request(CRunnerJob(tmp_path / "host" / c), "double") for c in ["c0", "c1"]
    )
    assert first.outputs is not None and first.outputs[0].tolist() == [[[[11.0] * 3] * 2]]
    assert second.failed_stage == "runtime" and "failed to submit" in str(second.error)
    assert sorted(p.name for p in (tmp_path / "batch").iterdir()) == ["run.sh"]  # cases sent
    assert read_request(CRunnerJob(tmp_path / "never-ran"), "double").infra_error == (
        "runner left no exit code: did it run?"
    )


def test_the_driver_stops_when_nobody_reads_its_stream(mrt_runner: Path, tmp_path: Path) -> None:
    x = np.full((1, 1, 2, 3), 5, np.uint8)
    cases = [
        batch_case("c0", SMALL + b"hang run\n", x, timeout_ms=1000),
        batch_case("c1", SMALL, x),
    ]
    write_files(tmp_path, batch_files(cases))
    driver = subprocess.Popen(
        ["sh", "run.sh", str(mrt_runner)], cwd=tmp_path, stdout=subprocess.PIPE
    )
    assert driver.stdout is not None
    started = next(read_stream(driver.stdout.read, tmp_path / "host", {"c0", "c1"}, MAX_CASE_BYTES))
    assert started.case == "c0" and started.started
    driver.stdout.close()  # the host went away
    assert driver.wait(timeout=20) == 1
    assert (tmp_path / "c0" / "exit_code").read_text() == "50\n"  # the runner's own timeout
    assert not (tmp_path / "c1" / "started").exists()  # the next case never began


def test_a_driver_that_cannot_announce_a_case_kills_its_runner(
    mrt_runner: Path, tmp_path: Path
) -> None:
    x = np.full((1, 1, 2, 3), 5, np.uint8)
    write_files(tmp_path, batch_files([batch_case("c0", SMALL + b"hang run\n", x, 60000)]))
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read the stream
    with subprocess.Popen(
        ["sh", "run.sh", str(mrt_runner)], cwd=tmp_path, stdout=write_end
    ) as driver:
        os.close(write_end)
    assert driver.returncode == 1
    runner = int((tmp_path / "c0" / "started").read_text().split()[1])
    assert wait_until(lambda: not alive(runner), timeout=5)  # not left to hang for 60 s
    assert not (tmp_path / "c0" / "exit_code").exists()


def tar_bytes(*members: tuple[str, bytes, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            info.type, info.size = kind, len(data)
            info.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("stream", "words"),
    [
        (tar_bytes(("../c0/x", tarfile.REGTYPE, b"1")), "unexpected member '../c0/x'"),
        (tar_bytes(("c0/../../x", tarfile.REGTYPE, b"1")), "unexpected member"),
        (tar_bytes(("c7/exit_code", tarfile.REGTYPE, b"0")), "unexpected member 'c7/exit_code'"),
        (tar_bytes(("c0/out", tarfile.SYMTYPE, b"")), "of type b'2'"),
        (tar_bytes(("c0/started", tarfile.REGTYPE, b"12 x")), "does not hold two pids"),
        (tar_bytes(("c0/stderr.txt", tarfile.REGTYPE, b"x" * 600))[:1024], "ends inside"),
        (b"\x01" * 512, "not a tar header"),
        (b"\x00" * 1024 + b"\x01" * 100, "ends inside a tar header"),
    ],
)
def test_a_stream_that_run_sh_cannot_write_is_refused(
    tmp_path: Path, stream: bytes, words: str
) -> None:
    with pytest.raises(StreamError, match=re.escape(words)):
        list(read_stream(io.BytesIO(stream).read, tmp_path, {"c0"}, MAX_CASE_BYTES))
    assert not any(tmp_path.parent.glob("x")) and not (tmp_path / "c7").exists()


def test_unreadable_outputs_and_signals_are_infrastructure_errors(
    mrt_runner: Path, tmp_path: Path
) -> None:
    request = _case(tmp_path)
    _, done = run(mrt_runner, request)
    assert done.returncode == 0
    out = tmp_path / "out"
    (out / "output_0.bin").write_bytes(b"\x00" * 10)
    cut = observation_from_run("b", 0, "", out)
    assert cut.outputs is None
    assert cut.infra_error == "runner output unreadable: " + (
        f"{out / 'output_0.bin'}: 10 bytes, expected 192"
    )
    assert observation_from_run("b", -9, "", out).infra_error == "runner killed by signal 9"
    assert observation_from_run("b", 139, "", out).infra_error == "runner killed by signal 11"
    assert observation_from_run("b", 99, "", out).infra_error == (
        "runner exited with unexpected code 99"
    )
    (out / "result.json").unlink()
    assert observation_from_run("b", 0, "", out).infra_error == (
        "runner output unreadable: no result.json: No such file or directory"
    )


def test_write_request_refuses_dtypes_the_runner_cannot_feed(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="dtype complex64 cannot be fed"):
        write_request(tmp_path, b"m", [np.zeros((1, 1, 1, 1), np.complex64)])


def test_build_errors_say_what_is_missing(libdir: Path, tmp_path: Path) -> None:
    with pytest.raises(RunnerBuildError, match=r"holds no rknn_api\.h"):
        build_runner(tmp_path, rknn_include=tmp_path, rknn_lib=libdir)


def test_build_runner_command(
    libdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    c_runner_cli.register(parser.add_subparsers())
    paths = ["--rknn-include", str(DOUBLE), "--rknn-lib", str(libdir), "--rpath", str(libdir)]
    args = parser.parse_args(["build-runner", "--platform=rv1106", *paths, f"--out={tmp_path}"])
    assert args.handler(args) == 0
    binary = Path(capsys.readouterr().out.strip())
    assert binary == tmp_path / "rv1106" / "hil_c_runner"
    # Linked against librknnmrt (the RV1106 library), hence no core-mask support.
    done = subprocess.run([str(binary), "m", "i", "o", "--core-mask", "1"], capture_output=True)
    assert done.returncode == 10 and b"librknnmrt lacks it" in done.stderr


@pytest.mark.parametrize(
    ("arch", "packages"),
    [
        ("armhf", "gcc-arm-linux-gnueabihf libc6-dev-armhf-cross"),
        ("aarch64", "gcc-aarch64-linux-gnu libc6-dev-arm64-cross"),
    ],
)
def test_build_runner_names_a_missing_cross_compiler_and_its_install_line(
    libdir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    arch: str,
    packages: str,
) -> None:
    parser = argparse.ArgumentParser()
    c_runner_cli.register(parser.add_subparsers())
    paths = ["--rknn-include", str(DOUBLE), "--rknn-lib", str(libdir), f"--out={tmp_path}"]
    args = parser.parse_args(["build-runner", "--platform=rk3588", f"--arch={arch}", *paths])
    monkeypatch.setenv("PATH", str(tmp_path))  # no compiler of any kind on it
    assert args.handler(args) == 1
    prefix = CROSS_TOOLCHAINS[arch].prefix
    assert capsys.readouterr().err == (
        f"hil boards build-runner: --arch {arch}: no {prefix}gcc with its C library here: "
        f"install {packages} (Debian/Ubuntu: sudo apt-get install {packages})\n"
    )
    assert not (tmp_path / "rk3588").exists()
    with pytest.raises(SystemExit):  # one toolchain or the other
        parser.parse_args(
            ["build-runner", "--platform=rk3588", "--arch=armhf", "--cross-compile=x-"]
        )


@pytest.mark.skipif(
    not os.environ.get("HIL_RKNN_INCLUDE"),
    reason="set HIL_RKNN_INCLUDE to the folder of the vendor's rknn_api.h",
)
def test_runner_compiles_against_the_vendor_header() -> None:
    for core_mask in ("0", "1"):
        include = f"RKNN_INCLUDE={os.environ['HIL_RKNN_INCLUDE']}"
        source = str(RUNNER_SOURCE)
        argv = ["make", "-C", source, "syntax", include, f"CORE_MASK={core_mask}"]
        subprocess.run(argv, check=True)


def test_decoding_follows_the_plane_the_runtime_reports(mrt_runner: Path, tmp_path: Path) -> None:
    """A runtime padding H*W further than documented (21 -> 32, not 24) still decodes right."""
    x = np.arange(1 * 5 * 3 * 7, dtype=np.uint8).reshape(1, 5, 3, 7)
    model = descriptor(
        "input name=x type=UINT8 shape=1,5,3,7 align=1",
        "output name=y type=FP32 shape=1,5,3,7 fmt=NC1HWC2 c2=4 hw=16 from=0",
    )
    observation, done = run(mrt_runner, write_request(tmp_path, model, [x]))

    assert done.returncode == 0, done.stderr
    assert observation.tensors[-1]["plane"] == 32
    assert observation.outputs is not None
    np.testing.assert_array_equal(observation.outputs[0], 1 + 2 * x.astype(np.float32))
