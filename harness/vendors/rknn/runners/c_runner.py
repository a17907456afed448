"""The C runner (``board_files/c-runner``): build it, write requests, read results.

Boards of the RV1103/RV1106/RK2118 class have only the RKNN C API, so cases run there through
``hil_c_runner``. Nothing here uses SSH: a request is a folder (model, ``in/input_<i>.npy``, an
``out/`` for the runner) that the board layer copies over and back
(``harness.vendors.rknn.runners.c_batch``);
``read_request`` turns what came back into an ``Observation``. Output buffers are decoded from
the native layout the runner reports (NC1HWC2 or channel-padded NHWC) through
``harness.vendors.rknn.model_io.layout``.
"""

from __future__ import annotations

import io
import json
import math
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.targets.observation import Observation
from harness.text import clipped
from harness.vendors.rknn import BOARD_FILES, QUERIED_TENSOR
from harness.vendors.rknn.model_io.layout import LayoutError, unpack_nc1hwc2, unpack_nhwc_output
from harness.vendors.rknn.toolkit.buildlog import parse_layer_times

RUNNER_SOURCE = BOARD_FILES / "c-runner"
RUNNER_BINARY = "hil_c_runner"
RESULT_FILE = "result.json"
# Board-file core masks (harness.vendors.rknn.platforms.CORE_MASKS) as rknn_core_mask values.
CORE_MASK_VALUES = {"auto": 0, "0": 1, "1": 2, "2": 4, "0_1": 3, "0_1_2": 7, "all": 0xFFFF}


@dataclass(frozen=True)
class ExitMeaning:
    name: str
    infra: bool  # True: says nothing about the NPU; False: the runtime refused or failed


# The runner's exit codes (harness/vendors/rknn/runners/board_files/c-runner/README.md).
EXIT_CODES = {
    0: ExitMeaning("ok", False),
    10: ExitMeaning("runner usage error", True),
    20: ExitMeaning("model not loadable on this board", True),
    21: ExitMeaning("rknn_init/rknn_query failed", False),
    22: ExitMeaning("NPU core mask refused", True),
    30: ExitMeaning("rknn_set_io_mem failed", False),
    31: ExitMeaning("rknn_create_mem failed", True),
    40: ExitMeaning("rknn_run failed", False),
    50: ExitMeaning("runner timed out", True),
    60: ExitMeaning("runner file I/O error", True),
    61: ExitMeaning("input files do not fit the model", True),
}

_DTYPES = {
    "FP32": np.float32,
    "FP16": np.float16,
    "INT8": np.int8,
    "UINT8": np.uint8,
    "INT16": np.int16,
    "UINT16": np.uint16,
    "INT32": np.int32,
    "UINT32": np.uint32,
    "INT64": np.int64,
    "BOOL": np.bool_,
}
_FEEDABLE = {np.dtype(d) for d in _DTYPES.values()}


class RunnerBuildError(RuntimeError):
    """make failed (the message ends with the tail of its output), or its compiler is missing."""


@dataclass(frozen=True)
class CrossToolchain:
    """A Debian/Ubuntu cross compiler for a board architecture (glibc targets)."""

    prefix: str  # CROSS_COMPILE
    packages: tuple[str, ...]  # the compiler and the target's C library headers
    sysroot: Path  # the target's libc; also qemu-user's -L

    def problem(self) -> str | None:
        """Why this toolchain cannot build here (with the install line), or None."""
        if shutil.which(f"{self.prefix}gcc") and (self.sysroot / "include" / "stdio.h").is_file():
            return None
        packages = " ".join(self.packages)
        return (
            f"no {self.prefix}gcc with its C library here: install {packages} "
            f"(Debian/Ubuntu: sudo apt-get install {packages})"
        )


# RV1103/RV1106 (32-bit Cortex-A7) and the aarch64 SoCs. Debian's armhf compiler targets glibc:
# boards whose image is uclibc-based need their SDK's toolchain (--cross-compile) instead.
CROSS_TOOLCHAINS = {
    "armhf": CrossToolchain(
        "arm-linux-gnueabihf-",
        ("gcc-arm-linux-gnueabihf", "libc6-dev-armhf-cross"),
        Path("/usr/arm-linux-gnueabihf"),
    ),
    "aarch64": CrossToolchain(
        "aarch64-linux-gnu-",
        ("gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"),
        Path("/usr/aarch64-linux-gnu"),
    ),
}


class RunnerOutputError(ValueError):
    """The runner's sidecar or output files cannot be decoded."""


def build_runner(
    out_dir: Path,
    *,
    rknn_include: Path,
    rknn_lib: Path,
    rknn_libname: str = "rknnrt",
    cross_compile: str = "",
    core_mask: bool | None = None,
    rpath: str | None = None,
    source: Path = RUNNER_SOURCE,
    make: str = "make",
    timeout_s: float = 300.0,
) -> Path:
    """Build ``hil_c_runner`` into ``out_dir`` with the runner's Makefile; its path.

    ``core_mask`` defaults to what the library offers (librknnmrt has no rknn_set_core_mask).
    """
    if rknn_libname not in ("rknnrt", "rknnmrt"):
        raise ValueError(f"rknn_libname must be rknnrt or rknnmrt, got {rknn_libname!r}")
    out_dir = Path(out_dir).resolve()
    argv = [
        make,
        "-C",
        str(source),
        f"OUT={out_dir}",
        f"CROSS_COMPILE={cross_compile}",
        f"RKNN_INCLUDE={Path(rknn_include).resolve()}",
        f"RKNN_LIB={Path(rknn_lib).resolve()}",
        f"RKNN_LIBNAME={rknn_libname}",
    ]
    if core_mask is not None:
        argv.append(f"CORE_MASK={int(core_mask)}")
    if rpath:
        argv.append(f"RPATH={rpath}")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RunnerBuildError(f"{shlex.join(argv)}: {exc}") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
        raise RunnerBuildError(f"{shlex.join(argv)} exited with {done.returncode}:\n{tail}")
    return out_dir / RUNNER_BINARY


def core_mask_value(name: str) -> int:
    """The ``--core-mask`` number for a board file's ``core_mask`` name."""
    try:
        return CORE_MASK_VALUES[name]
    except KeyError:
        raise ValueError(f"core mask must be one of {', '.join(CORE_MASK_VALUES)}") from None


@dataclass(frozen=True)
class CRunnerJob:
    """One case's folder; the runner is started inside it with ``argv``."""

    directory: Path
    model: str = "model.rknn"
    inputs: str = "in"
    outputs: str = "out"

    def argv(
        self,
        runner: str,
        *,
        core_mask: int | None = None,
        timeout_ms: int | None = None,
        perf: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """The runner's command line, paths relative to ``directory``; ``perf``: a
        ``JobTiming.to_json()`` (timed runs, and the per-layer table if it asks)."""
        argv = [runner, self.model, self.inputs, self.outputs]
        if core_mask is not None:
            argv += ["--core-mask", str(core_mask)]
        if timeout_ms is not None:
            argv += ["--timeout-ms", str(timeout_ms)]
        if perf:
            cap_ms = max(1, round(float(perf["cap_s"]) * 1000))
            argv += ["--perf", f"{perf['warmup']},{perf['runs']},{cap_ms}"]
            argv += ["--layers-perf"] if perf.get("layers") else []
        return argv


def request_files(
    model: bytes, inputs: Sequence[np.ndarray], layout: str = "NCHW"
) -> dict[str, bytes]:
    """One case's files, relative to its folder: the model, then ``in/input_<i>.npy`` in order.

    Arrays keep their dtype (the type fed to the NPU); 4-D ones given as NCHW are stored NHWC,
    the order the zero-copy API takes. The runner adds the width padding itself.
    """
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"layout must be NCHW or NHWC, got {layout!r}")
    request = CRunnerJob(Path())
    files = {request.model: model}
    for i, array in enumerate(inputs):
        array = np.asarray(array)
        if array.dtype not in _FEEDABLE:
            raise ValueError(f"input {i}: dtype {array.dtype} cannot be fed to the runner")
        if array.ndim == 4 and layout == "NCHW":
            array = array.transpose(0, 2, 3, 1)
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
        files[f"{request.inputs}/input_{i}.npy"] = buffer.getvalue()
    return files


def write_request(
    directory: Path, model: bytes, inputs: Sequence[np.ndarray], layout: str = "NCHW"
) -> CRunnerJob:
    """Lay out one case in ``directory`` (see ``request_files``)."""
    request = CRunnerJob(Path(directory))
    for name, data in request_files(model, inputs, layout).items():
        path = request.directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return request


def read_request(
    request: CRunnerJob,
    backend: str,
    exit_code: int | None = None,
    stderr: str | None = None,
) -> Observation:
    """The Observation of a finished request; exit code and stderr default to run.sh's files."""
    folder = request.directory
    if exit_code is None:
        try:
            exit_code = int((folder / "exit_code").read_text().strip())
        except (OSError, ValueError):
            return Observation(backend, infra_error="runner left no exit code: did it run?")
    if stderr is None:
        path = folder / "stderr.txt"
        stderr = path.read_text(errors="replace") if path.exists() else ""
    return observation_from_run(backend, exit_code, stderr, folder / request.outputs)


def observation_from_run(
    backend: str, exit_code: int, stderr: str, output_dir: Path
) -> Observation:
    """Classify one runner run: outputs, a runtime failure, or an infrastructure error.

    ``exit_code`` is negative (as subprocess reports) or 128+N (as sh reports) for signal N.
    """
    result = _load_result(Path(output_dir))
    observation = Observation(backend, log=stderr)
    if isinstance(result, dict):
        try:
            observation.versions = _versions(result)
            observation.timings = _timings(result)
            observation.tensors = _tensors(result)
            observation.perf = _perf(result)
        except (RunnerOutputError, KeyError, TypeError, ValueError, OverflowError) as exc:
            observation.infra_error = f"runner sidecar malformed: {exc!r}"  # inf counts too
            return observation
    signal = -exit_code if exit_code < 0 else exit_code - 128 if 128 < exit_code < 160 else 0
    meaning = EXIT_CODES.get(exit_code)
    if signal:
        observation.infra_error = f"runner killed by signal {signal}"
    elif meaning is None:
        observation.infra_error = f"runner exited with unexpected code {exit_code}"
    elif exit_code == 0:
        _outputs(observation, result, Path(output_dir))
    else:
        message = _message(result, stderr)
        if meaning.infra:
            observation.infra_error = f"{meaning.name}: {message}"
        else:
            observation.failed_stage = "runtime"
            observation.error = "\n".join([f"{meaning.name}: {message}", *_runtime_lines(stderr)])
    return observation


def _load_result(output_dir: Path) -> dict[str, Any] | str:
    """The sidecar, or why there is none."""
    try:
        data = json.loads((output_dir / RESULT_FILE).read_text(errors="replace"))
    except OSError as exc:
        return f"no {RESULT_FILE}: {exc.strerror}"
    except ValueError as exc:
        return f"{RESULT_FILE} is not JSON: {exc}"
    return data if isinstance(data, dict) else f"{RESULT_FILE} is not an object"


def _outputs(observation: Observation, result: dict[str, Any] | str, output_dir: Path) -> None:
    try:
        if not isinstance(result, dict):
            raise RunnerOutputError(result)
        if result.get("status") != "ok":
            raise RunnerOutputError(f"exit 0 but status {result.get('status')!r}")
        arrays = decode_outputs(result, output_dir)
        natives = [entry["native"] for entry in result["outputs"]]
        observation.outputs = [dequantize(a, n) for a, n in zip(arrays, natives, strict=True)]
    except (RunnerOutputError, KeyError, TypeError) as exc:
        observation.infra_error = f"runner output unreadable: {exc}"


def _message(result: dict[str, Any] | str, stderr: str) -> str:
    if isinstance(result, dict) and result.get("status") == "error" and result.get("error"):
        return f"{result.get('stage')}: {result['error']}"
    lines = [line for line in stderr.splitlines() if line.startswith("hil_c_runner: ")]
    return lines[-1].removeprefix("hil_c_runner: ") if lines else "no message"


def _runtime_lines(stderr: str) -> list[str]:
    """What the RKNN runtime itself logged as errors."""
    return [line for line in stderr.splitlines() if line.startswith("E RKNN")]


def _versions(result: dict[str, Any]) -> dict[str, str]:
    versions = {"hil_c_runner": str(result.get("runner", ""))}
    sdk = result.get("sdk")
    if isinstance(sdk, dict):
        versions["rknn_api"] = str(sdk.get("api_version", ""))
        versions["rknn_driver"] = str(sdk.get("drv_version", ""))
    return versions


def _timings(result: dict[str, Any]) -> dict[str, float]:
    timings = result.get("timings_us")
    if not isinstance(timings, dict):
        return {}
    numbers = {k: v for k, v in timings.items() if isinstance(v, int | float)}
    if not all(math.isfinite(v) and v >= 0 for v in numbers.values()):
        raise RunnerOutputError(f"timings_us {clipped(repr(numbers))}: not all microseconds")
    return {f"{k}_s": v / 1e6 for k, v in numbers.items()}


def _perf(result: dict[str, Any]) -> dict[str, Any]:
    """The timed runs (``Observation.perf``): clock, samples in seconds, the layer table."""
    perf = result.get("perf")
    if not isinstance(perf, dict) or not perf.get("samples_us"):
        return {}
    samples = [float(us) / 1e6 for us in perf["samples_us"]]
    timing: dict[str, Any] = {
        "clock": str(perf["clock"]),
        "warmup": int(perf["warmup"]),
        "samples_s": samples,
        "capped": len(samples) < int(perf["runs"]),
    }
    if isinstance(perf.get("detail"), str):
        timing["layers"] = parse_layer_times(perf["detail"])
    elif "no_detail" in perf:
        timing["layers_unavailable"] = str(perf["no_detail"])
    return timing


def _tensors(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Per tensor: the queried and native attributes the verdicts and reports look at."""
    tensors = []
    for role in ("inputs", "outputs"):
        for entry in result.get(role) or []:
            if not isinstance(entry, dict) or "native" not in entry:
                continue
            attr, native = entry["attr"], entry["native"]
            tensor = {
                "source": QUERIED_TENSOR,
                "role": role[:-1],
                "name": attr["name"],
                "dtype": (entry.get("bound") or native)["type"],
                "format": native["fmt"],
                "orig_shape": attr["dims"],
                "native_shape": native["dims"],
                "w_stride": attr["w_stride"],
                "size_with_stride": native["size_with_stride"],
            }
            if native["fmt"] == "NC1HWC2" and native["type"] in _DTYPES:
                tensor["plane"] = _plane(native, np.dtype(_DTYPES[native["type"]]).itemsize)
            tensors.append(tensor)
    return tensors


def _plane(native: dict[str, Any], itemsize: int) -> int:
    """Elements per C1 plane of an NC1HWC2 buffer: H*W plus the runtime's alignment padding."""
    n, c1, h, w, c2 = native["dims"]
    plane, rest = divmod(native["size_with_stride"], itemsize * n * c1 * c2)
    if rest or plane < h * w:
        raise RunnerOutputError(
            f"{native['name']}: size_with_stride {native['size_with_stride']} does not hold "
            f"{native['dims']} NC1HWC2 planes"
        )
    return int(plane)


def _logical_shape(attr: dict[str, Any]) -> tuple[int, ...]:
    """The model's output shape; 4-D as N, C, H, W."""
    dims = tuple(int(d) for d in attr["dims"])
    if len(dims) == 4 and attr["fmt"] == "NHWC":
        return dims[0], dims[3], dims[1], dims[2]
    return dims


def decode_outputs(result: dict[str, Any], output_dir: Path) -> list[np.ndarray]:
    """Each output in its native dtype and logical shape (NCHW for 4-D), padding dropped."""
    return [_decode(entry, Path(output_dir)) for entry in result["outputs"]]


def _decode(entry: dict[str, Any], output_dir: Path) -> np.ndarray:
    attr, native = entry["attr"], entry["native"]
    if native["type"] not in _DTYPES:
        raise RunnerOutputError(f"{attr['name']}: cannot decode type {native['type']}")
    dtype = np.dtype(_DTYPES[native["type"]])
    path = output_dir / entry["file"]
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RunnerOutputError(f"{path}: {exc.strerror}") from exc
    if len(data) != entry["buffer_size"] or len(data) % dtype.itemsize:
        raise RunnerOutputError(f"{path}: {len(data)} bytes, expected {entry['buffer_size']}")
    raw = np.frombuffer(data, dtype=dtype)
    shape = _logical_shape(attr)
    dims = [int(d) for d in native["dims"]]
    try:
        if native["fmt"] == "NC1HWC2":
            # unpack_nc1hwc2 pads H*W up to hw_align; the measured plane (>= H*W) is exact.
            return unpack_nc1hwc2(raw, shape, "NCHW", dims[4], _plane(native, dtype.itemsize))
        if native["fmt"] == "NHWC" and len(dims) == 4:
            buffer = raw[: math.prod(dims)].reshape(dims)
            return unpack_nhwc_output(buffer, shape[1]).transpose(0, 3, 1, 2).copy()
        return raw[: math.prod(shape)].reshape(shape).copy()
    except (LayoutError, ValueError, IndexError) as exc:
        raise RunnerOutputError(f"{attr['name']}: {exc}") from exc


def dequantize(array: np.ndarray, native: dict[str, Any]) -> np.ndarray:
    """float32 values of a raw output, per the tensor's quantization (AFFINE, DFP or none)."""
    values = np.asarray(array).astype(np.float32)
    if native.get("qnt_type") == "AFFINE":
        return (values - np.float32(native["zp"])) * np.float32(native["scale"])
    if native.get("qnt_type") == "DFP":
        return values * np.float32(2.0 ** -int(native["fl"]))
    return values
