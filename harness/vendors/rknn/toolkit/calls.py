"""The exact rknn-toolkit2 calls a job becomes, its calibration files and the toolkit version.

``toolkit_calls`` is the single description of how a job is executed: the simulator worker and
the converter call the toolkit with exactly these keyword arguments, and repro bundles write
the same dict, so a vendor report reproduces what the harness ran.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.metadata
import io
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from harness.private_folders import UnsafePathError, private_folder
from harness.targets.job import Job
from harness.vendors.rknn.toolkit.settings import build_keywords, normalises, toolkit_feeds

MODEL_FILE = "model.onnx"
DATASET_FILE = "dataset.txt"  # one line per sample: its .npy files, space separated
DATASET_DIR = "dataset"
DATA_FORMAT = "nchw"
LOG_FILE = "toolkit.log"  # everything the toolkit printed for one job
# The simulator worker writes "<stage> <toolkit call>" here before each call, so that the pool
# knows where a worker that died was (``note_stage``).
STAGE_FILE = "stage"
_STAGE_WIDTH = 64  # bytes; a note is padded to it with spaces
REPRO_SCRIPT = "reproduce.py"
SETTINGS_FILE = "toolkit.json"  # the job's settings, as reproduce.py reads them


def toolkit_calls(job: Job) -> dict[str, dict[str, Any]]:
    """The toolkit calls, in order, with their keyword arguments (JSON-able).

    File arguments are relative to the working folder that holds ``model.onnx`` and, for int8,
    ``dataset.txt`` (written by ``write_dataset``). ``inference`` also receives
    ``inputs=[...]``: the job's arrays, in model input order. ``init_runtime`` without a
    target selects the simulator.
    """
    build = build_keywords(job.config) if job.config else {}  # a user's own settings
    config = {key: value for key, value in job.config.items() if key not in build}
    return {
        "RKNN": {"verbose": True},
        "config": {"target_platform": job.target_platform, **config},
        "load_onnx": {"model": MODEL_FILE},
        "build": {
            "do_quantization": job.quantize,
            "dataset": DATASET_FILE if job.quantize else None,
            **build,
        },
        "init_runtime": {},
        "inference": {"data_format": DATA_FORMAT},
    }


def toolkit_inputs(job: Job) -> list[np.ndarray]:
    """The arrays the toolkit's ``inference`` is fed for ``job.inputs`` (``toolkit_feeds``)."""
    return toolkit_feeds(job.config, job.inputs)


def toolkit_dataset(job: Job) -> Sequence[Sequence[np.ndarray]]:
    """The calibration samples as the toolkit reads them (``toolkit_feeds`` of each); drawn
    samples stay undrawn where the settings normalise nothing."""
    if not normalises(job.config):
        return job.dataset or []
    return [toolkit_feeds(job.config, sample) for sample in job.dataset or []]


def note_stage(folder: Path, text: str) -> None:
    """Write ``text`` into ``folder``'s STAGE_FILE, padded to a fixed width and written over the
    last note in place: ext4 flushes a file truncated and written again when it is closed
    (0.1 ms a call, six calls a case), an overwrite in place it does not."""
    fd = os.open(folder / STAGE_FILE, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, text.encode()[:_STAGE_WIDTH].ljust(_STAGE_WIDTH), 0)
    finally:
        os.close(fd)


def read_stage(folder: Path) -> str:
    """The last ``note_stage`` text in ``folder`` ("" when there is none)."""
    stage = folder / STAGE_FILE
    return stage.read_text().strip() if stage.exists() else ""


def write_dataset(dataset: Sequence[Sequence[np.ndarray]], folder: Path) -> Path:
    """Write the calibration samples as .npy files plus the list file the toolkit reads
    (``dataset_files``); the list file's path."""
    for name, data in dataset_files(dataset).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder / DATASET_FILE


def dataset_files(dataset: Sequence[Sequence[np.ndarray]]) -> Files:
    """The calibration files by relative path: one .npy file per sample and input, and the
    list file, whose paths are relative to its folder, one line per sample, the sample's
    arrays (one per model input) separated by a space. An .npy file's bytes are made when it
    is read (``Files``): the list needs only the counts, and a case folder that keeps no
    arrays never reads them."""
    files: dict[str, Callable[[], bytes]] = {}
    lines = []
    for s in range(len(dataset)):
        names = [f"{DATASET_DIR}/sample{s}_input{i}.npy" for i in range(len(dataset[0]))]
        for i, name in enumerate(names):
            files[name] = functools.partial(_npy, dataset, s, i)
        lines.append(" ".join(names))
    listing = ("\n".join(lines) + "\n").encode()
    files[DATASET_FILE] = lambda: listing
    return Files(files)


class Files(Mapping[str, bytes]):
    """Files by name, in name order, each made when it is read."""

    def __init__(self, makers: Mapping[str, Callable[[], bytes]]) -> None:
        self.makers = dict(sorted(makers.items()))

    def __getitem__(self, name: str) -> bytes:
        return self.makers[name]()

    def __iter__(self) -> Iterator[str]:
        return iter(self.makers)

    def __len__(self) -> int:
        return len(self.makers)


def _npy(dataset: Sequence[Sequence[np.ndarray]], sample: int, index: int) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(dataset[sample][index]))
    return buffer.getvalue()


def harness_env() -> dict[str, str]:
    """The environment of a child process that runs this package's modules (simulator worker,
    converter): they import npu-hil from here, whether or not the child's interpreter (an SDK
    environment, say) has it installed, and nothing else from here: the folder on PYTHONPATH
    holds only a link to the ``harness`` package, so an installed npu-hil's site-packages
    (numpy 2, onnx 1.18) never shadows an SDK environment's own packages."""
    path = os.pathsep.join(filter(None, [harness_only_folder(), os.environ.get("PYTHONPATH")]))
    # Unbuffered: a build that crashes the child (SIGSEGV) would take the log lines still in
    # its buffer with it, and they name the compiler pass it died in.
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}


@functools.cache
def harness_only_folder() -> str:
    """A folder holding nothing but a link to this ``harness`` package (made once), which only
    this user can use: what it holds is on every toolkit process's PYTHONPATH, so one that
    another user made first in a shared temporary folder (a ``sitecustomize.py`` in it would
    run in each) or that others may change is never used; a fresh private folder (removed when
    this process exits) is, with a warning naming the refused one."""
    package = Path(__file__).resolve().parents[3]
    digest = hashlib.sha256(str(package).encode()).hexdigest()[:12]
    try:
        folder = private_folder(
            Path(tempfile.gettempdir()) / f"npu-hil-path-{os.getuid()}-{digest}"
        )
    except UnsafePathError as refused:
        folder = Path(tempfile.mkdtemp(prefix="npu-hil-path-"))  # mode 0700, a name not known
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        warnings.warn(f"{refused}; toolkit processes import from {folder}", stacklevel=2)
    link = folder / "harness"
    if not link.exists():
        staged = folder / f".harness.{os.getpid()}"
        staged.unlink(missing_ok=True)
        staged.symlink_to(package, target_is_directory=True)
        os.replace(staged, link)  # atomic: concurrent processes agree on the same link
    return str(folder)


# The packages a toolkit process's results depend on besides the toolkit's own code (numpy
# 2.4 fails builds that 2.3 completes): part of every simulator and conversion cache key.
KEY_PACKAGES = ("rknn-toolkit2", "numpy", "onnx", "onnxruntime", "torch", "protobuf")


def key_versions() -> dict[str, str | None]:
    """The ``KEY_PACKAGES`` versions in this interpreter (None: not installed)."""
    found: dict[str, str | None] = {}
    for package in KEY_PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def toolkit_version() -> str:
    """The installed rknn-toolkit2 version, read without importing the (slow) toolkit."""
    try:
        return importlib.metadata.version("rknn-toolkit2")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def recipe(job: Job) -> Files:
    """The files that reproduce ``job`` with rknn-toolkit2 alone, by name in the case folder.

    ``toolkit.json`` (target, config, quantization, dataset, a user's further build
    arguments, inference arguments), the
    calibration files for int8 and ``reproduce.py`` (``repro_template.py``), which a repro
    bundle ships as it is.
    """
    calls = toolkit_calls(job)
    toolkit = {
        "target_platform": job.target_platform,
        "config": {k: v for k, v in calls["config"].items() if k != "target_platform"},
        "do_quantization": job.quantize,
        "dataset": calls["build"]["dataset"],
        "inference": calls["inference"],
    }
    extra = {k: v for k, v in calls["build"].items() if k not in ("do_quantization", "dataset")}
    if extra:  # a user's own RKNN.build() arguments
        toolkit["build"] = extra
    settings = (json.dumps(toolkit, indent=2) + "\n").encode()
    calibration = dataset_files(toolkit_dataset(job)) if job.dataset else Files({})
    return Files(
        {SETTINGS_FILE: lambda: settings, REPRO_SCRIPT: _repro_script, **calibration.makers}
    )


@functools.cache
def _repro_script() -> bytes:
    """``repro_template.py``, read once: every case folder gets it."""
    return resources.files("harness.vendors.rknn").joinpath("repro_template.py").read_bytes()
