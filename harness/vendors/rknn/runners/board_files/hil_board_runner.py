#!/usr/bin/env python3
"""npu-hil board runner: runs batches of compiled models on the board's NPU runtime.

Copied to the board and started by the harness over one channel (SSH, or an adb shell):

    python3 -u hil_board_runner.py --workdir DIR --runtime rknnlite [--start-timeout S]
        [--idle-timeout S]

It needs only python3 (3.7+), numpy and the runtime, and imports nothing of the harness.

Protocol on stdin/stdout, one frame per message: 8 bytes (two big-endian uint32: length of
the JSON header, length of the payload), the UTF-8 JSON header, then the payload bytes.

    runner -> host  {"type": "hello", "protocol", "pid", "runtime", "runtime_version", ...}
    host -> runner  {"type": "batch", "cases": [case, ...]} + payload: ONE tar of all files
    runner -> host  {"type": "started", "case": id} when a case begins
                    {"type": "result", "case": id, "status": "ok" | "runtime-error" |
                     "timeout", "outputs": [{"size", "sha256"}], "timings", ...}
                    + payload: the outputs as .npy files, back to back
                    {"type": "done"} after the batch
    host -> runner  {"type": "exit"}   (or just closing stdin)

A case is {"id", "dir" (folder in the tar), "model", "inputs" (.npy names), "data_format",
"timeout_s", "core_mask", "test_fault", "perf", "conditions"}. With "perf" ({"warmup", "runs",
"cap_s"}) the first inference (whose outputs are sent) is followed by warm-up runs and timed
runs, wall clock around ``inference`` (``timed_runs``), stopping once "cap_s" seconds went into
timed runs;
"conditions" (name -> file, e.g. the NPU's devfreq cur_freq) are read before the warm-up and
after the timed runs. The result's "perf" holds the samples and both readings.

Every case runs under a board-side deadline: when it passes, the runner reports "timeout"
for that case and exits (a hung NPU call cannot be interrupted); the harness starts a new
runner. A watchdog also ends the runner when its SSH
session goes away (parent process gone) or when the host has been silent for --idle-timeout.

Runtimes: "rknnlite" is rknn-toolkit-lite2's RKNNLite. "simulator-stand-in" is for tests only:
the same interface in front of rknn-toolkit2's simulator, which cannot simulate a loaded .rknn,
so it builds the ONNX model shipped next to it (build.json holds the toolkit calls). Only the
stand-in honours a case's "test_fault": "hang" (inference never returns), "wedge" (the whole
runner is stopped with SIGSTOP, so only the host-side timeout can notice),
"corrupt-output" (an output byte is flipped after its checksum was taken), "slow" (timed
inference takes twice as long), "noisy" (each timed inference takes +-10% at random) and
"nan-timing" (the timed runs report NaN seconds, as a broken board clock would). The
stand-in's timed inference is a simulated NPU latency: it sleeps that long and reports it as
its own clock (the simulator's speed says nothing about an NPU, and a sleep's wall time follows
the host's load), so timing tests hold on a busy machine.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import random
import shutil
import signal
import struct
import sys
import tarfile
import threading
import time
import traceback

import numpy as np

PROTOCOL = 1
FRAME = struct.Struct(">II")
MAX_HEADER = 16 * 2**20
TEST_FAULTS = ("hang", "wedge", "corrupt-output", "slow", "noisy", "nan-timing")
# The stand-in's simulated NPU latency: a base plus a share per byte of the ONNX model.
STAND_IN_LATENCY_S = 0.004
STAND_IN_LATENCY_PER_BYTE_S = 2e-9
SLOWDOWN = {"slow": (2.0, 2.0), "noisy": (0.9, 1.1)}  # test fault -> factor drawn uniformly
STAND_IN = "simulator-stand-in"
BUILD_FILE = "build.json"
CORE_MASKS = {
    "auto": "NPU_CORE_AUTO",
    "all": "NPU_CORE_ALL",
    "0": "NPU_CORE_0",
    "1": "NPU_CORE_1",
    "2": "NPU_CORE_2",
    "0_1": "NPU_CORE_0_1",
    "0_1_2": "NPU_CORE_0_1_2",
}


def encode_frame(header: dict, payload: bytes = b"") -> bytes:
    data = json.dumps(header).encode()
    return FRAME.pack(len(data), len(payload)) + data + payload


def read_exact(stream, size: int) -> bytes:
    chunks, missing = [], size
    while missing:
        chunk = stream.read(missing)
        if not chunk:
            raise EOFError("stream closed")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def read_frame(stream) -> tuple:
    """(header dict, payload bytes); EOFError when the host closed stdin."""
    header_size, payload_size = FRAME.unpack(read_exact(stream, FRAME.size))
    if header_size > MAX_HEADER:
        raise ValueError(f"frame header of {header_size} bytes: not a harness frame")
    header = json.loads(read_exact(stream, header_size).decode())
    return header, read_exact(stream, payload_size)


class SimulatorStandIn:
    """TEST ONLY: RKNNLite's interface over the rknn-toolkit2 simulator.

    load_rknn() remembers the folder; init_runtime() builds the shipped model.onnx with the
    toolkit calls in build.json (exactly the host's conversion) and starts the simulator.
    """

    NPU_CORE_AUTO, NPU_CORE_0, NPU_CORE_1, NPU_CORE_2 = 0, 1, 2, 4
    NPU_CORE_0_1, NPU_CORE_0_1_2, NPU_CORE_ALL = 3, 7, 0xFFFF

    def __init__(self) -> None:
        from rknn.api import RKNN

        self._rknn_class = RKNN
        self._rknn = None
        self._folder = ""
        self._outputs = None  # the first inference's, returned by the timed ones
        self._latency_s = STAND_IN_LATENCY_S
        # The runtime's own clock (see timed_runs): the NPU time the last run simulated.
        self.run_duration_s = None
        self.test_fault = None

    def load_rknn(self, path: str) -> int:
        self._folder = os.path.dirname(os.path.abspath(path))
        return 0 if os.path.isfile(os.path.join(self._folder, BUILD_FILE)) else -1

    def init_runtime(self, core_mask: int = 0) -> int:
        with open(os.path.join(self._folder, BUILD_FILE)) as f:
            calls = json.load(f)
        rknn = self._rknn = self._rknn_class(**{**calls["RKNN"], "verbose": False})
        rknn.config(**calls["config"])
        onnx = self._files(calls["load_onnx"], "model")["model"]
        self._latency_s += STAND_IN_LATENCY_PER_BYTE_S * os.path.getsize(onnx)
        ret = rknn.load_onnx(**self._files(calls["load_onnx"], "model"))
        ret = ret or rknn.build(**self._files(calls["build"], "dataset"))
        return ret or rknn.init_runtime()

    def _files(self, kwargs: dict, key: str) -> dict:
        """The toolkit call's file argument made absolute within the case folder."""
        if kwargs.get(key) is None:
            return kwargs
        return dict(kwargs, **{key: os.path.join(self._folder, kwargs[key])})

    def inference(self, inputs: list, data_format=None):
        if self.test_fault == "hang":
            while True:
                time.sleep(60)
        if self.test_fault == "wedge":
            os.kill(os.getpid(), signal.SIGSTOP)
        if self._outputs is not None:  # a timed run: the simulated NPU latency
            low, high = SLOWDOWN.get(self.test_fault, (1.0, 1.0))
            self.run_duration_s = self._latency_s * random.uniform(low, high)
            time.sleep(self.run_duration_s)
            if self.test_fault == "nan-timing":
                self.run_duration_s = float("nan")
            return self._outputs
        self._outputs = self._rknn.inference(inputs=inputs, data_format=data_format)
        return self._outputs

    def get_sdk_version(self) -> str:
        return f"simulator stand-in (rknn-toolkit2 {_distribution_version('rknn-toolkit2')})"

    def release(self) -> None:
        if self._rknn is not None:
            self._rknn.release()
            self._rknn = None


def _distribution_version(name: str) -> str:
    try:
        import importlib.metadata as metadata
    except ImportError:  # Python 3.7
        return "unknown"
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


def load_runtime(name: str):
    """(runtime class, version text) for --runtime."""
    if name == "rknnlite":
        from rknnlite.api import RKNNLite

        return RKNNLite, f"rknn-toolkit-lite2 {_distribution_version('rknn-toolkit-lite2')}"
    if name == STAND_IN:
        import rknn.api  # noqa: F401  (import once, before hello: it takes seconds)

        return SimulatorStandIn, f"rknn-toolkit2 {_distribution_version('rknn-toolkit2')} simulator"
    raise ValueError(f"unknown runtime {name!r} (expected rknnlite or {STAND_IN})")


class Runner:
    """Serves frames from the host until it says exit or closes stdin."""

    def __init__(self, out, workdir: str, runtime: str, idle_timeout: float) -> None:
        self.out = out
        self.out_lock = threading.Lock()
        self.workdir = workdir
        self.runtime = runtime
        self.runtime_class = None
        self.batch_dir = os.path.join(workdir, "batch")
        self.sdk_version = None
        self.watchdog = Watchdog(self, idle_timeout)

    def send(self, header: dict, payload: bytes = b"", timeout: float = -1) -> bool:
        if not self.out_lock.acquire(timeout=timeout):
            return False
        try:
            self.out.write(encode_frame(header, payload))
            self.out.flush()
        finally:
            self.out_lock.release()
        return True

    def serve(self, stdin, start_timeout: float) -> int:
        self.watchdog.start()
        stalled = {"type": "error", "message": "the runtime did not load within the start timeout"}
        self.watchdog.arm(stalled, start_timeout)
        try:
            self.runtime_class, version = load_runtime(self.runtime)
        except Exception as exc:
            self.send({"type": "error", "message": f"cannot load runtime: {_last_line(exc)}"})
            return 2
        self.send(
            {
                "type": "hello",
                "protocol": PROTOCOL,
                "pid": os.getpid(),
                "runtime": self.runtime,
                "runtime_version": version,
                "python": platform.python_version(),
                "numpy": np.__version__,
            }
        )
        self.watchdog.disarm()
        while True:
            try:
                header, payload = read_frame(stdin)
            except EOFError:
                return 0
            self.watchdog.touch()
            if header.get("type") == "exit":
                return 0
            if header.get("type") != "batch":
                self.send({"type": "error", "message": f"unknown frame {header.get('type')!r}"})
                return 2
            shutil.rmtree(self.batch_dir, ignore_errors=True)
            try:
                unpack(payload, self.batch_dir)
            except (ValueError, tarfile.TarError) as exc:
                self.send({"type": "error", "message": f"bad batch: {_last_line(exc)}"})
                return 2
            self.run_batch(header["cases"])

    def run_batch(self, cases: list) -> None:
        for case in cases:
            self.run_case(case, os.path.join(self.batch_dir, case["dir"]))
            shutil.rmtree(os.path.join(self.batch_dir, case["dir"]), ignore_errors=True)
        shutil.rmtree(self.batch_dir, ignore_errors=True)
        self.send({"type": "done"})

    def run_case(self, case: dict, folder: str) -> None:
        self.send({"type": "started", "case": case["id"]})
        result = {"type": "result", "case": case["id"], "core_mask": case["core_mask"]}
        fault = case.get("test_fault")
        if fault is not None and (self.runtime != STAND_IN or fault not in TEST_FAULTS):
            refused = f"test fault {fault!r} refused: only the {STAND_IN} runtime honours "
            result.update(status="runtime-error", error=refused + ", ".join(TEST_FAULTS))
            self.send(result)
            return
        expired = {
            "type": "result",
            "case": case["id"],
            "status": "timeout",
            "error": "no result within the case timeout on the board; runner exits",
        }
        self.watchdog.arm(expired, float(case["timeout_s"]))
        runtime = None
        outputs = None
        timings = {}
        try:
            os.chdir(folder)  # the stand-in's toolkit drops intermediate files in the cwd
            runtime = self.runtime_class()
            if fault is not None:
                runtime.test_fault = fault
            started = time.perf_counter()
            _check("load_rknn", runtime.load_rknn(os.path.join(folder, case["model"])))
            timings["load_s"] = time.perf_counter() - started
            started = time.perf_counter()
            mask = getattr(runtime, CORE_MASKS[case["core_mask"]])
            _check("init_runtime", runtime.init_runtime(core_mask=mask))
            timings["init_s"] = time.perf_counter() - started
            inputs = [np.load(os.path.join(folder, name)) for name in case["inputs"]]
            started = time.perf_counter()
            outputs = runtime.inference(inputs=inputs, data_format=case["data_format"])
            timings["inference_s"] = time.perf_counter() - started
            if outputs is None:
                raise RuntimeError("inference returned None")
            if case.get("perf"):
                result["perf"] = timed_runs(runtime, inputs, case, case["perf"])
            if self.sdk_version is None:
                self.sdk_version = _sdk_version(runtime)
            result.update(status="ok", runtime_version=self.sdk_version)
        except Exception as exc:
            result.update(status="runtime-error", error=_last_line(exc))
            outputs = None
        finally:
            if runtime is not None:
                try:
                    runtime.release()
                except Exception as exc:  # report it, do not die
                    sys.stderr.write(f"release failed: {_last_line(exc)}\n")
            self.watchdog.disarm()
            os.chdir(self.workdir)
        result["timings"] = timings
        payload = b""
        if outputs is not None:
            files = [_npy(array) for array in outputs]
            result["outputs"] = [
                {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()} for data in files
            ]
            payload = b"".join(files)
            if fault == "corrupt-output" and files:
                middle = len(payload) - 1
                payload = payload[:middle] + bytes([payload[middle] ^ 0xFF])
        self.send(result, payload)


def timed_runs(runtime, inputs: list, case: dict, perf: dict) -> dict:
    """Warm-up runs, then timed runs until "runs" are done or "cap_s" seconds went into them;
    the conditions read before and after.

    Each run is timed by the wall clock around ``inference``, unless the runtime keeps its own
    measurement of the last run (``run_duration_s``, as the stand-in does with the NPU time it
    simulates, so that a loaded host does not move it): then by that ("clock": "simulated").
    """
    conditions = case.get("conditions") or {}
    before = read_conditions(conditions)
    for _ in range(int(perf["warmup"])):
        runtime.inference(inputs=inputs, data_format=case["data_format"])
    samples = []
    spent = 0.0
    clock = "wall"
    while len(samples) < int(perf["runs"]) and spent < float(perf["cap_s"]):
        started = time.perf_counter()
        runtime.inference(inputs=inputs, data_format=case["data_format"])
        wall = time.perf_counter() - started
        spent += wall
        own = getattr(runtime, "run_duration_s", None)
        if not samples and own is not None:  # decided on the first run: one clock per case
            clock = "simulated"
        samples.append(own if clock == "simulated" else wall)
    timing = {
        "clock": clock,
        "warmup": int(perf["warmup"]),
        "samples_s": samples,
        "capped": len(samples) < int(perf["runs"]),
        "conditions_before": before,
        "conditions_after": read_conditions(conditions),
    }
    if perf.get("layers"):
        timing["layers_unavailable"] = (
            "rknn-toolkit-lite2 exposes no per-layer times; the C runner queries them "
            "(runtime c-runner)"
        )
    return timing


def read_conditions(files: dict) -> dict:
    """name -> the file's text (first line), or "unreadable"."""
    values = {}
    for name, path in files.items():
        try:
            with open(path) as f:
                values[name] = f.readline().strip()[:200]
        except (OSError, UnicodeDecodeError):
            values[name] = "unreadable"
    return values


def _check(call: str, ret) -> None:
    if ret != 0:
        raise RuntimeError(f"{call} returned {ret!r}")


def _sdk_version(runtime) -> str:
    try:
        return " ".join(str(runtime.get_sdk_version()).split())
    except Exception as exc:  # some runtimes need a device for this
        return f"unknown ({_last_line(exc)})"


def _npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def _last_line(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


def unpack(payload: bytes, folder: str) -> None:
    """Extract the batch tar; only plain files and folders inside ``folder`` are accepted."""
    os.makedirs(folder)
    with tarfile.open(fileobj=io.BytesIO(payload), mode="r:") as tar:
        for member in tar:
            parts = member.name.split("/")
            if (
                member.name.startswith("/")
                or ".." in parts
                or not (member.isfile() or member.isdir())
            ):
                raise ValueError(f"refusing tar member {member.name!r}")
            target = os.path.join(folder, *parts)
            if member.isdir():
                os.makedirs(target, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            source = tar.extractfile(member)
            with open(target, "wb") as f:
                shutil.copyfileobj(source, f)


class Watchdog(threading.Thread):
    """Ends the runner past a deadline (start-up, a case), a lost SSH session or a silent host.

    A hung NPU or toolkit call cannot be interrupted, so past a deadline the watchdog sends
    the frame it was armed with (telling the host what happened) and exits the process.
    """

    def __init__(self, runner: Runner, idle_timeout: float) -> None:
        super().__init__(name="watchdog", daemon=True)
        self.runner = runner
        self.idle_timeout = idle_timeout
        self.parent = os.getppid()
        self.expired = None  # the frame to send when the deadline passes; None when disarmed
        self.deadline = 0.0
        self.last_frame = time.monotonic()

    def touch(self) -> None:
        self.last_frame = time.monotonic()

    def arm(self, expired: dict, timeout: float) -> None:
        self.deadline = time.monotonic() + timeout
        self.expired = expired

    def disarm(self) -> None:
        self.expired = None
        self.touch()

    def run(self) -> None:
        while True:
            time.sleep(0.2)
            if os.getppid() != self.parent:  # the SSH session died; nobody reads our output
                os._exit(4)
            expired, now = self.expired, time.monotonic()
            if expired is not None and now > self.deadline:
                self.runner.send(expired, timeout=5)
                os._exit(3)
            if expired is None and now - self.last_frame > self.idle_timeout:
                os._exit(5)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--runtime", required=True)
    parser.add_argument("--start-timeout", type=float, default=120.0)
    parser.add_argument("--idle-timeout", type=float, default=900.0)
    args = parser.parse_args(argv)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed (Python or C) goes to stderr, never into the protocol
    sys.stdout = sys.stderr
    stdin = os.fdopen(0, "rb")
    os.makedirs(args.workdir, exist_ok=True)
    os.chdir(args.workdir)
    runner = Runner(out, os.path.abspath(args.workdir), args.runtime, args.idle_timeout)
    try:
        return runner.serve(stdin, args.start_timeout)
    finally:
        shutil.rmtree(runner.batch_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
