"""The runtimes an RKNN board file can name, and what each means for running cases on it.

``RUNTIMES`` is the registry that ``harness.boards.inventory.load_inventory`` takes: runtime
name -> class. Each class declares the platforms it serves and its own board-file keys; its
``load`` checks that part of the file and makes the board's runtime (``Board.runtime``), which
knows the session that runs it on the board, how a Job becomes its runner's files, and whether
it acts out test faults.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from harness.boards.inventory import (
    Board,
    BoardDiscovery,
    BoardFileError,
    VersionCheck,
    board_path,
    validate,
)
from harness.targets.job import Job
from harness.vendors.rknn.documents.compatibility import check_versions
from harness.vendors.rknn.documents.properties import C_RUNNER_OBSERVES, PYTHON_RUNNER_OBSERVES
from harness.vendors.rknn.platforms import (
    CORE_MASKS,
    LITE2_PLATFORMS,
    MRT_PLATFORMS,
    NPU_CORES,
    PLATFORMS,
)
from harness.vendors.rknn.runners.c_runner import request_files
from harness.vendors.rknn.runners.c_session import CRunnerSession
from harness.vendors.rknn.runners.discovery import PROBE
from harness.vendors.rknn.runners.runner_session import RunnerSession, runner_module
from harness.vendors.rknn.toolkit.calls import (
    MODEL_FILE,
    dataset_files,
    toolkit_dataset,
    toolkit_inputs,
    toolkit_version,
)
from harness.vendors.rknn.toolkit.convert import build_calls

_R = TypeVar("_R", bound="RknnRuntime")


@dataclass(frozen=True, kw_only=True)
class RknnRuntime:
    """What the RKNN runtimes share: the board file's NPU core mask, the Python board runner."""

    name: ClassVar[str]
    software: ClassVar[str]  # what runs the model on the board, for messages
    platforms: ClassVar[tuple[str, ...]] = PLATFORMS
    keys: ClassVar[Mapping[str, Any]] = {"core_mask": {"enum": list(CORE_MASKS)}}
    discovery: ClassVar[BoardDiscovery] = PROBE  # what discovery looks for on the board
    test_faults: ClassVar[bool] = False  # acts out RknnBoardTarget's TEST ONLY faults
    # What the runner reports beyond the outputs decides which properties a board observes.
    observes: ClassVar[frozenset[str]] = PYTHON_RUNNER_OBSERVES
    core_mask: str = "auto"
    # TEST ONLY (the stand-in's board-file ``test_faults``): case id -> the fault it acts out
    faults: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls: type[_R], path: Path, document: Mapping[str, Any]) -> _R:
        """This runtime's part of the board file at ``path``, checked."""
        platform = document["platform"]
        if platform not in cls.platforms:
            raise BoardFileError(
                path,
                "runtime",
                cls.name,
                f"{cls.software} does not support platform {platform}; "
                "use runtime c-runner for boards with the C API only",
            )
        own = {key: document[key] for key in cls.keys if key in document}
        if isinstance(own.get("core_mask"), int):
            raise BoardFileError(
                path,
                "core_mask",
                own["core_mask"],
                'quote the core mask (e.g. "0_1"): YAML reads an unquoted 0_1 as the number 1',
            )
        validate(path, own, {"type": "object", "properties": dict(cls.keys)})
        return cls(**cls._fields(path, platform, own))

    @classmethod
    def _fields(cls, path: Path, platform: str, own: Mapping[str, Any]) -> dict[str, Any]:
        """The dataclass fields from this runtime's (schema-checked) keys."""
        core_mask = str(own.get("core_mask", "auto"))
        cores = NPU_CORES.get(platform, 0)
        if core_mask not in ("auto", "all") and max(map(int, core_mask.split("_"))) >= cores:
            raise BoardFileError(
                path,
                "core_mask",
                core_mask,
                f"platform {platform} has no such NPU core to choose "
                f"(selectable cores: {', '.join(map(str, range(cores))) or 'none; use auto'})",
            )
        return {"core_mask": core_mask}

    def ready(self, board: Board) -> None:
        """Refuse ``board`` while it cannot run cases; the Python runner ships with the harness."""

    def check_versions(self, facts: Mapping[str, Any], sdk: str | None = None) -> VersionCheck:
        """The board's versions against rknn-toolkit2 ``sdk`` (None: this environment's)."""
        return check_versions(sdk or toolkit_version(), facts)

    def session(self, board: Board, token: str, **options: Any) -> RunnerSession:
        """A closed session of this runtime on ``board`` (options: ``RunnerSession``'s)."""
        return RunnerSession(board, token, **options)

    def case_files(
        self, job: Job, model: bytes, data_format: str
    ) -> tuple[dict[str, bytes], list[str]]:
        """The runner's files for one case (``model`` is its .rknn), and its input files in
        model input order."""
        files = {"model.rknn": model}
        inputs = []
        for position, array in enumerate(toolkit_inputs(job)):
            inputs.append(f"input{position}.npy")
            files[inputs[-1]] = _npy(array)
        return files, inputs


@dataclass(frozen=True, kw_only=True)
class RknnLite(RknnRuntime):
    """rknn-toolkit-lite2 on the board's Python, through ``board_files/hil_board_runner.py``."""

    name = "rknnlite"
    software = "rknn-toolkit-lite2"
    platforms = LITE2_PLATFORMS


@dataclass(frozen=True, kw_only=True)
class StandIn(RknnRuntime):
    """TEST ONLY: the board runner simulates the shipped ONNX model with rknn-toolkit2's
    simulator, built with the host's very calls; acts out test faults."""

    name = "simulator-stand-in"
    software = "the simulator stand-in"
    test_faults = True
    keys: ClassVar[Mapping[str, Any]] = {
        **RknnRuntime.keys,
        # case id -> a fault the stand-in acts out for it (the runner's TEST_FAULTS)
        "test_faults": {
            "type": "object",
            "additionalProperties": {"enum": list(runner_module().TEST_FAULTS)},
        },
    }

    @classmethod
    def _fields(cls, path: Path, platform: str, own: Mapping[str, Any]) -> dict[str, Any]:
        return {**super()._fields(path, platform, own), "faults": dict(own.get("test_faults", {}))}

    def case_files(
        self, job: Job, model: bytes, data_format: str
    ) -> tuple[dict[str, bytes], list[str]]:
        files, inputs = super().case_files(job, model, data_format)
        files[MODEL_FILE] = job.model
        files[runner_module().BUILD_FILE] = json.dumps(build_calls(job)).encode()
        if job.quantize and job.dataset:
            files.update(dataset_files(toolkit_dataset(job)))
        return files, inputs


@dataclass(frozen=True, kw_only=True)
class CRunner(RknnRuntime):
    """``hil_c_runner`` (``board_files/c-runner``) for boards with only the C API (RV1103,
    RV1106, RK2118): no Python on the board. ``binary`` is the board file's ``c_runner``."""

    name = "c-runner"
    software = "hil_c_runner"
    observes = C_RUNNER_OBSERVES
    keys: ClassVar[Mapping[str, Any]] = {
        **RknnRuntime.keys,
        "c_runner": {"type": "string", "minLength": 1},
    }
    binary: Path  # the hil_c_runner built for this board, on the host

    @classmethod
    def _fields(cls, path: Path, platform: str, own: Mapping[str, Any]) -> dict[str, Any]:
        if "c_runner" not in own:
            raise BoardFileError(
                path,
                "c_runner",
                None,
                f"runtime {cls.name} needs c_runner: the host path of the hil_c_runner built "
                f"for this board (hil boards build-runner --platform {platform} ...)",
            )
        core_mask = own.get("core_mask", "auto")
        if platform in MRT_PLATFORMS and core_mask != "auto":
            raise BoardFileError(
                path,
                "core_mask",
                core_mask,
                f"platform {platform} runs librknnmrt, which cannot choose NPU cores; use auto",
            )
        return {
            **super()._fields(path, platform, own),
            "binary": board_path(path, own["c_runner"], "c_runner"),
        }

    def ready(self, board: Board) -> None:
        """Refuse ``board`` while its runner is not built, naming the board file's field."""
        if not self.binary.is_file():
            raise BoardFileError(
                board.source,
                "c_runner",
                str(self.binary),
                "no such file: build the runner (hil boards build-runner; see the C runner's "
                "README)",
            )

    def session(self, board: Board, token: str, **options: Any) -> CRunnerSession:
        self.ready(board)
        return CRunnerSession(board, token, self.binary, **options)

    def case_files(
        self, job: Job, model: bytes, data_format: str
    ) -> tuple[dict[str, bytes], list[str]]:
        # Inputs NHWC (the zero-copy order) in hil_c_runner's folders.
        files = request_files(model, toolkit_inputs(job), data_format.upper())
        return files, [name for name in files if name != "model.rknn"]


RUNTIMES: dict[str, type[RknnRuntime]] = {kind.name: kind for kind in (RknnLite, CRunner, StandIn)}


def rknn_runtime(board: Board) -> RknnRuntime:
    """The board's runtime, which must be one of ``RUNTIMES``."""
    if not isinstance(board.runtime, RknnRuntime):
        raise ValueError(
            f"board {board.name}: runtime {board.runtime.name} is not an RKNN runtime "
            f"({board.source})"
        )
    return board.runtime


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()
