"""Rockchip RKNN2 as the harness sees it: the ``Vendor`` record the plugin and the CLI use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.report.bundle import RecipeFiles
from harness.report.documented_rows import DOCUMENTED_KEY
from harness.vendors.base import Vendor
from harness.vendors.rknn.board import board_target
from harness.vendors.rknn.bundle_readme import how_to_run
from harness.vendors.rknn.documents.judged import judged_against
from harness.vendors.rknn.documents.layer_aliases import (
    load_layer_aliases,
    load_onnx_operator_names,
)
from harness.vendors.rknn.documents.model_io import ModelIOError
from harness.vendors.rknn.documents.operator_list.committed import documents
from harness.vendors.rknn.documents.operators import cpu_allowed, operator_catalogue
from harness.vendors.rknn.model_io import layout_cli
from harness.vendors.rknn.model_io.cases import documented_rows, model_io_cases
from harness.vendors.rknn.model_io.checks import JUDGE
from harness.vendors.rknn.models import DECLARATIONS
from harness.vendors.rknn.platforms import DEFAULT_PLATFORM, PLATFORMS
from harness.vendors.rknn.runners import c_runner_cli
from harness.vendors.rknn.runtimes import RUNTIMES
from harness.vendors.rknn.toolkit import sdk_cli
from harness.vendors.rknn.toolkit.calls import (
    DATASET_DIR,
    DATASET_FILE,
    REPRO_SCRIPT,
    SETTINGS_FILE,
    recipe,
    toolkit_version,
)
from harness.vendors.rknn.toolkit.convert import CACHE as CONVERSION_CACHE
from harness.vendors.rknn.toolkit.convert import LOG_FILE as BUILD_LOG
from harness.vendors.rknn.toolkit.sdk import SdkError, interpreter, resolve
from harness.vendors.rknn.toolkit.settings import int8_only, read_settings
from harness.vendors.rknn.toolkit.simulator import SimCache, SimulatorPool
from harness.vendors.rknn.toolkit.simulator.cache import CACHE as SIM_CACHE

# The newest ONNX opset rknn-toolkit2 takes: it refuses a model of a newer one
MAX_OPSET = 19

# The toolkit's, runtime's and board tools' names: words no vendor-neutral module says
LIBRARY_NAMES = (
    "rknn",
    "rknnlite",
    "rknn-toolkit2",
    "rknn_toolkit2",
    "rknn-toolkit-lite2",
    "rknn_toolkit_lite2",
    "librknnrt",
    "librknnmrt",
    "rknn_server",
    "rknpu",
)


def _documented(platform: str) -> dict[str, Any]:
    """The seed-003 rows of the platform's group, for the report's "Model I/O" section."""
    try:
        return {DOCUMENTED_KEY: documented_rows(platform)}
    except ModelIOError:  # a platform the model-I/O document does not cover
        return {DOCUMENTED_KEY: []}


def _simulator(timeout_s: float, cache: Path | None, sdk: str | None = None) -> SimulatorPool:
    environment = interpreter(sdk)
    return SimulatorPool(
        workers=1,
        timeout_s=timeout_s,
        cache=SimCache(cache, environment.packages) if cache else None,
        python=environment.python,
    )


def _missing() -> str | None:
    """Without rknn-toolkit2 this host has no simulator and converts no model for a board."""
    if toolkit_version() == "not installed":
        return "rknn-toolkit2 is not installed (README, Set-up)"
    return None


def _sdks(spec: str | None) -> list[str]:
    """``--sdk`` -> toolkit releases; without it, this interpreter's toolkit."""
    if spec is None:
        return [toolkit_version()]
    try:
        return [found.version for found in resolve(spec)]
    except SdkError as error:
        raise ValueError(str(error)) from None


VENDOR = Vendor(
    name="rknn",
    platforms=PLATFORMS,
    default_platform=DEFAULT_PLATFORM,
    versions=lambda: {"rknn_toolkit2": toolkit_version()},
    sdks=_sdks,
    operators=operator_catalogue,
    cpu_allowed=cpu_allowed,
    models=DECLARATIONS,
    case_sources={"model-io": model_io_cases},
    documented=_documented,
    documents=documents,
    judged_against=judged_against,
    judge=JUDGE,
    recipe=recipe,
    bundle_files=RecipeFiles(
        written=(SETTINGS_FILE, DATASET_FILE, DATASET_DIR, BUILD_LOG, REPRO_SCRIPT),
        required=(SETTINGS_FILE, REPRO_SCRIPT),
        script=REPRO_SCRIPT,
        json_files=(SETTINGS_FILE,),
    ),
    max_opset=MAX_OPSET,
    runtimes=RUNTIMES,
    layer_aliases=load_layer_aliases(),
    operator_names=load_onnx_operator_names(),
    simulator=_simulator,
    board_target=board_target,
    simulator_cache=SIM_CACHE,
    conversion_cache=CONVERSION_CACHE,
    known_issues=Path(__file__).with_name("data") / "known-issues",  # one file per group
    missing=_missing,
    library_names=LIBRARY_NAMES,
    how_to_run=how_to_run,
    build_settings=read_settings,
    int8_only=int8_only,
    commands={
        "hil": [sdk_cli.register],
        "boards": [c_runner_cli.register],
        "layout": [layout_cli.register],
    },
)
