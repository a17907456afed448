"""ONNX -> .rknn for a board's platform with rknn-toolkit2, cached on disk.

The host build is where placement is observed for a board run: its verbose log carries the
layer and tensor tables, so every cache entry keeps ``build.log`` next to ``model.rknn``. The
key is sha256 over the model bytes, the toolkit calls (target, config, quantization), the
calibration arrays and the toolkit version. A toolkit rejection is cached like a success (it
is deterministic); a hang is not. A converter that dies building a model builds it once more
in a fresh converter: the same death in the same toolkit call is a compiler crash, cached as a
rejection with how it died (``Conversion.aborted``); anything else is not cached
(``harness.vendors.rknn.toolkit.crash``).

Builds run in one long-lived converter process per cache (``python -m
harness.vendors.rknn.toolkit.convert``, started by ``toolkit.process`` with the cache's interpreter,
so another SDK's environment can convert): it imports the toolkit once and then builds one staged
folder per job. A child process, because a boundary-probing model can crash or hang the compiler
(that costs the build in flight; the next build starts a new converter), and because
the compiler's tables come from C and can only be captured at the file-descriptor level.
Parallel pytest-xdist workers share the cache safely: each key is built under an flock on
``<key>.lock`` (taken in sorted order, so no two workers deadlock) in a staging folder that is
renamed into place.

The cache is shared by every results directory (``CACHE``: ``~/.cache/npu-hil/rknn``, or
``HIL_CONVERSION_CACHE``) and capped (``HIL_CONVERSION_CACHE_MAX``, default 2 GiB): after new
entries are built, the least recently used ones go (``harness.diskcache``).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.diskcache import (
    CacheFolder,
    DiskCache,
    check_entry,
    content_key,
    mark_entry,
    remove,
    touch,
)
from harness.targets.job import Job, calibration_key
from harness.vendors.rknn.toolkit.calls import (
    MODEL_FILE,
    key_versions,
    toolkit_calls,
    toolkit_dataset,
    write_dataset,
)
from harness.vendors.rknn.toolkit.crash import Death, after_two_deaths
from harness.vendors.rknn.toolkit.process import ToolkitProcess, parent_pipes

FORMAT = 1  # bump when the entry layout changes
RKNN_FILE = "model.rknn"
LOG_FILE = "build.log"
META_FILE = "meta.json"
CALLS_FILE = "calls.json"
STARTED_FILE = "started"
START_TIMEOUT_S = 120.0  # importing the toolkit takes seconds; allow for a loaded machine
_KEEP = (RKNN_FILE, LOG_FILE, META_FILE)
CACHE = CacheFolder(
    "conversions",
    "rknn",
    "HIL_CONVERSION_CACHE",
    "HIL_CONVERSION_CACHE_MAX",
    "models converted for boards",
)


@dataclass(frozen=True)
class Conversion:
    """The outcome of converting one job's model."""

    key: str
    rknn_path: Path | None  # None when the toolkit rejected the model or the converter failed
    log: str  # the verbose build log (layer and tensor tables)
    error: str | None = None  # the toolkit's rejection: a "build" failure of the case
    aborted: str | None = None  # with ``error``, a confirmed crash: "SIGSEGV", "exit code 1"
    infra_error: str | None = None  # converter crash or timeout: says nothing about the model
    build_s: float = 0.0
    cached: bool = False


def build_calls(job: Job) -> dict[str, dict[str, Any]]:
    """The simulator's toolkit calls up to ``build``: the same compile for board and simulator."""
    calls = toolkit_calls(job)
    return {name: calls[name] for name in ("RKNN", "config", "load_onnx", "build")}


class ConversionCache(DiskCache):
    """Converts Jobs' ONNX models to .rknn under ``directory``, at most once per key, and
    keeps the folder under ``cap`` bytes (default ``HIL_CONVERSION_CACHE_MAX``, else 2 GiB)."""

    def __init__(
        self,
        directory: Path,
        *,
        timeout_s: float = 300.0,
        cap: int | None = None,
        python: str = sys.executable,
        environment: Mapping[str, str | None] | None = None,
    ) -> None:
        """``python``: the interpreter the converter runs (an SDK environment of ``hil sdk
        install``), ``environment`` its ``KEY_PACKAGES`` versions, the toolkit's among them
        (default: this interpreter's); they are part of every key, so each SDK's conversions
        are kept apart in the shared folder. A folder that is not a cache's raises
        CacheFolderError (``diskcache.claim``)."""
        super().__init__(directory, CACHE, cap)
        self.python = python  # the interpreter whose rknn-toolkit2 converts
        self._converter: _Converter | None = None
        self.timeout_s = timeout_s
        self.environment = dict(environment if environment is not None else key_versions())

    @property
    def toolkit(self) -> str:
        """The rknn-toolkit2 version that converts."""
        return self.environment.get("rknn-toolkit2") or "not installed"

    def key(self, job: Job) -> str:
        """sha256 (hex) of model, toolkit calls, calibration data (drawn samples by their
        recipe: ``job.calibration_key``) and the converter's package versions."""
        calibration, samples = calibration_key(job)
        header = {"format": FORMAT, "environment": self.environment, "calls": build_calls(job)}
        header["calibration"] = calibration
        return content_key(header, job.model, samples)

    def convert(self, job: Job) -> Conversion:
        return self.convert_many([job])[0]

    def convert_many(self, jobs: Sequence[Job]) -> list[Conversion]:
        """Conversions in job order; misses are built one by one by the converter."""
        keys = [self.key(job) for job in jobs]
        found = {key: self._load(key) for key in set(keys)}
        missing = sorted(key for key, hit in found.items() if hit is None)
        if missing:
            by_key = dict(zip(keys, jobs, strict=True))
            with contextlib.ExitStack() as locks:
                for key in missing:  # sorted: two workers never wait on each other in a cycle
                    locks.enter_context(self._locked(key))
                for key in missing:  # another worker may have built it while we waited
                    found[key] = self._load(key, locked=True)
                found.update(self._build([k for k in missing if found[k] is None], by_key))
            self.keep_to_cap()
        conversions = []
        for key in keys:
            conversion = found[key]
            assert conversion is not None  # every key was loaded, built or failed
            conversions.append(conversion)
        return conversions

    def _load(self, key: str, *, locked: bool = False) -> Conversion | None:
        """The cached conversion, or None on a miss. A damaged entry (unreadable or wrong
        meta.json, missing build log) is a miss; a caller holding the key's lock (``locked``)
        removes it so that the rebuild can take its place. Without the lock it stays: it may
        be a good entry another worker published, and handed out, meanwhile."""
        entry = self.entry(key)
        if not entry.exists():
            return None
        try:
            check_entry(entry)
            meta = json.loads((entry / META_FILE).read_bytes().decode("utf-8"))
            error = meta["error"]
            if not (error is None or isinstance(error, str)):
                raise TypeError(f"error is {error!r}")
            if not error and not (entry / RKNN_FILE).is_file():
                raise FileNotFoundError(entry / RKNN_FILE)
            touch(entry)  # its last use: the cap removes the least recently used first
            return Conversion(
                key=key,
                rknn_path=None if error else entry / RKNN_FILE,
                log=(entry / LOG_FILE).read_text(errors="replace"),
                error=error,
                aborted=meta.get("aborted"),
                build_s=float(meta["build_s"]),
                cached=True,
            )
        except Exception:  # whatever the damage, a rebuild produces the entry again
            if locked:
                remove(entry)
            return None

    @contextlib.contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        path = self.entry(key).parent / f"{key}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield  # the lock goes with the file's closing

    def _build(self, keys: list[str], jobs: dict[str, Job]) -> dict[str, Conversion]:
        """Build ``keys`` one by one; a crash or hang costs only the build in flight, and a
        converter that died is given a second, fresh try (module docstring)."""
        results: dict[str, Conversion] = {}
        for key in keys:
            first = self._attempt(key, jobs[key])
            if isinstance(first, Death):
                second = self._attempt(key, jobs[key], first)
                assert isinstance(second, Conversion)  # a second death is a conversion too
                first = second
            results[key] = first
        return results

    def _attempt(self, key: str, job: Job, died: Death | None = None) -> Conversion | Death:
        """One build of ``key``: its conversion, or how the converter died (``died``: the
        first attempt's death; a second one is judged with it)."""
        folder = self._stage(key, job)
        try:
            failure, code = self._run_converter(folder)
            if failure is None and (folder / META_FILE).exists():
                return self._commit(key, folder)
            failure = failure or "the converter wrote no result"
            if code is None:
                return Conversion(key, None, _read(folder / LOG_FILE), infra_error=failure)
            death = Death.of(code, failure, folder, LOG_FILE)
            if died is None:
                return death
            outcome = after_two_deaths(died, death)
            if "infra_error" in outcome:
                return Conversion(key, None, death.log, infra_error=outcome["infra_error"])
            meta = {"error": outcome["error"], "aborted": outcome["aborted"], "build_s": 0.0}
            (folder / META_FILE).write_text(json.dumps(meta))
            return self._commit(key, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _stage(self, key: str, job: Job) -> Path:
        """A staging folder with the model, the calibration data and the toolkit calls."""
        parent = self.entry(key).parent
        folder = Path(tempfile.mkdtemp(prefix=f".staging-{key[:12]}-", dir=parent))
        (folder / MODEL_FILE).write_bytes(job.model)
        if job.quantize and job.dataset:
            write_dataset(toolkit_dataset(job), folder)
        (folder / CALLS_FILE).write_text(json.dumps(build_calls(job)))
        return folder

    def _run_converter(self, folder: Path) -> tuple[str | None, int | None]:
        """Have the converter build ``folder``: (None, None), or how the converter failed
        (it is then stopped, and the next build starts a new one) and, when it died during
        the build, its exit code."""
        if self._converter is not None and self._converter.process.poll() is not None:
            self._converter.stop()  # it died while idle (killed, out of memory): no model lost
            self._converter = None
        if self._converter is None:
            # The converter dies with the thread that starts it (PR_SET_PDEATHSIG): start it
            # from a thread that lives as long as this process, not from the caller's, which
            # may be a board target's conversion thread that ends before this cache does.
            self._converter = _STARTER.submit(_Converter, self.python).result()
        converter = self._converter
        failure = converter.build(folder, self.timeout_s)
        if failure is not None:
            converter.stop()
            self._converter = None
        return failure, converter.died

    def close(self) -> None:
        """Stop the converter process; safe to call more than once."""
        if self._converter is not None:
            self._converter.stop()
            self._converter = None

    def _commit(self, key: str, folder: Path) -> Conversion:
        """Keep the entry's files and rename the staging folder into place."""
        for path in folder.iterdir():
            if path.is_dir():
                shutil.rmtree(path)
            elif path.name not in _KEEP:
                path.unlink()
        mark_entry(folder)
        if not self.entry(key).exists():
            os.rename(folder, self.entry(key))
        conversion = self._load(key)
        assert conversion is not None  # just renamed into place
        return replace(conversion, cached=False)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


_STARTER = ThreadPoolExecutor(1, thread_name_prefix="npu-hil-converter-start")


class _Converter(ToolkitProcess):
    """The converter process (host side): started once, then one staged folder per job."""

    def __init__(self, python: str) -> None:
        super().__init__("harness.vendors.rknn.toolkit.convert", python)
        self.ready = False
        self.died: int | None = None  # the exit code, when it died during a build
        atexit.register(self.stop)

    def build(self, folder: Path, timeout_s: float) -> str | None:
        """None once ``folder`` holds the build's result, or how the converter failed. The
        build's time starts once the converter has imported the toolkit."""
        try:
            if not self.ready:
                if not self.replies.poll(START_TIMEOUT_S):
                    return f"the converter did not start within {START_TIMEOUT_S:g} s"
                hello = self.replies.recv()
                if "startup_error" in hello:
                    return f"the converter failed to start:\n{hello['startup_error']}"
                self.ready = True
            self.requests.send(str(folder.absolute()))  # the converter runs elsewhere
            if not self.replies.poll(timeout_s):
                self.kill()
                return f"conversion did not finish within {timeout_s:g} s (converter killed)"
            reply: dict[str, Any] = self.replies.recv()
        except (EOFError, OSError):
            code, tail = self.process.wait(), self.stderr_tail()
            self.died = code if self.ready else None
            return f"converter exited with status {code}" + (
                f"; its output ends:\n{tail}" if tail else ""
            )
        return reply.get("infra_error")

    def stop(self) -> None:
        atexit.unregister(self.stop)
        super().stop()


# -- the converter child -----------------------------------------------------------------------


def main() -> int:
    """Serve staged folders: build and export each, write its meta.json (``error`` None on
    success) and reply; exits when the parent closes the job pipe."""
    requests, replies = parent_pipes()
    try:
        from rknn.api import RKNN
    except Exception:
        replies.send({"startup_error": traceback.format_exc()})
        return 1
    replies.send({"ready": True})
    while True:
        try:
            folder = Path(requests.recv())
        except EOFError:  # the parent closed the pipe or died
            return 0
        try:
            (folder / STARTED_FILE).touch()
            started = time.perf_counter()
            error = _build_one(RKNN, folder)
            meta = {"error": error, "build_s": time.perf_counter() - started}
            partial = folder / f"{META_FILE}.part"
            partial.write_text(json.dumps(meta))
            partial.rename(folder / META_FILE)
            reply: dict[str, Any] = {}
        except Exception:
            reply = {
                "infra_error": f"converter error outside the toolkit:\n{traceback.format_exc()}"
            }
        finally:
            os.chdir("/")  # the parent deletes the folder; do not sit in it
        replies.send(reply)


def _build_one(rknn_class: Any, folder: Path) -> str | None:
    """The toolkit's rejection message, or None when model.rknn was exported."""
    from harness.vendors.rknn.toolkit.simulator.worker import Rejected, call_stage, captured_output

    os.chdir(folder)  # the toolkit drops intermediate files into the working directory
    calls = json.loads((folder / CALLS_FILE).read_text())
    calls["load_onnx"]["model"] = str(folder / calls["load_onnx"]["model"])
    if calls["build"].get("dataset"):
        calls["build"]["dataset"] = str(folder / calls["build"]["dataset"])
    rknn = None
    with captured_output(folder / LOG_FILE) as log:
        try:
            rknn = call_stage("build", log, rknn_class, calls["RKNN"])
            for name in ("config", "load_onnx", "build"):
                call_stage("build", log, getattr(rknn, name), calls[name])
            call_stage("build", log, rknn.export_rknn, {"export_path": str(folder / RKNN_FILE)})
        except Rejected as rejected:
            return str(rejected)
        finally:
            if rknn is not None:
                rknn.release()
    return None


if __name__ == "__main__":
    sys.exit(main())
