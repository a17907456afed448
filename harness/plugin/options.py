"""The plugin's options (``pytest_addoption``) and their checks (``check_options``), which
stop a run with a usage error before collection. Two groups live in modules of their own:
the run's vendor and platforms (``vendor_options``) and the run policy's (``policy_options``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cases import case_cache
from harness.diskcache import CacheFolder, CacheFolderError, claim
from harness.judge import comparison_cache
from harness.judge.verdict import ARRAYS_DROPPED_FOR
from harness.models import reference as reference_cache
from harness.models.budget import size_budget
from harness.plugin.outcome import BOARD_DOWN_EXIT
from harness.plugin.policy_options import add_policy_options
from harness.plugin.vendor_options import add_vendor_options
from harness.scheduler import DEFAULT_BATCH
from harness.timeouts import timeout_problem
from harness.vendors import cache_help, fill_run_defaults
from harness.vendors.base import Vendor


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("npu-hil", "npu-hil constraint suites")
    add_vendor_options(group)
    group.addoption(
        "--backend",
        choices=("auto", "sim", "board"),
        default="auto",
        help="where cases run: the configured boards if any (a board that is down stops the "
        f"run, exit status {BOARD_DOWN_EXIT}), else the simulator (auto); always the simulator "
        "(sim); a board or an error (board)",
    )
    group.addoption(
        "--board-fallback",
        choices=("none", "simulator"),
        default="none",
        help="a configured board that is down at the start: the run stops (none), or its cases "
        "run on the simulator, every record saying so (simulator)",
    )
    group.addoption(
        "--op",
        action="append",
        default=[],
        metavar="ONNX_TYPE",
        help="only the cases of the entries documenting this ONNX operator type (Conv: "
        "Convolution and Depthwise Convolution, no fused entry or model-I/O row); repeatable",
    )
    group.addoption(
        "--entry",
        action="append",
        default=[],
        metavar="NAME",
        help="only the cases of this entry of the vendor's document, as headed (Convolution, "
        "'Depthwise Convolution'); repeatable",
    )
    group.addoption("--strict-docs", action="store_true", help="fail on documentation drift")
    group.addoption("--results", default="results", help="results directory (default results)")
    group.addoption(
        "--resume", action="store_true", help="skip cases already finished in --results"
    )
    group.addoption(
        "--append",
        action="store_true",
        help="add this run to a --results folder of another job (another platform, say), as "
        "a run of its own in its run.json and the history store",
    )
    group.addoption(
        "--boards",
        default="boards",
        metavar="PATH",
        help="a folder of board files, or one board file (default ./boards)",
    )
    group.addoption(
        "--require-board",
        action="store_true",
        help="with --backend auto: no board file for the platform is an error (a configured "
        "board that is down stops the run anyway)",
    )
    group.addoption(
        "--board-down",
        choices=("error", "sim"),
        default="error",
        help="a board that stays down: its remaining cases are infra errors (error) or run "
        "on the simulator (sim)",
    )
    group.addoption(
        "--keep-arrays",
        choices=tuple(ARRAYS_DROPPED_FOR),
        default="findings",
        help="which case folders keep their observed outputs (up to 1 MiB a case, above it "
        "their statistics and first differing elements): every case but the confirmed, "
        "limit-confirmed and limit-rewritten ones (findings), only failures and errors "
        "(failures: not doc-drift or doc-inconsistent either); or every case every array, "
        "inputs, references and calibration data too, uncapped (all). Bundles draw the "
        "arrays a folder did not keep again from the case's recipe",
    )
    group.addoption(
        "--hil-timeout",
        type=float,
        default=600.0,
        help="seconds one case may take (600; above 0, at most a day)",
    )
    group.addoption(
        "--hil-batch",
        type=int,
        default=DEFAULT_BATCH,
        help=f"largest batch of cases handed to a board or simulator at once ({DEFAULT_BATCH}; "
        "batches start at 2 and double; 1 runs one case at a time)",
    )
    group.addoption(
        "--sdk",
        default=None,
        metavar="VERSION[,VERSION...]|all",
        help="run every case on each of these toolkit releases (2.3.2 or V2.3.2; hil sdk "
        "install VERSION; 'all': every installed one); default: this environment's",
    )
    group.addoption(
        "--hil-cache",
        default=None,
        help=f"simulator result cache directory ({cache_help('simulator_cache')}; size cap "
        "default 2G); 'off' disables it",
    )
    group.addoption(
        "--hil-reference-cache",
        default=str(reference_cache.CACHE.directory()),
        help=f"host reference cache directory (env {reference_cache.CACHE.dir_env}; size cap "
        f"{reference_cache.CACHE.cap_env}, default 2G); 'off' disables it",
    )
    group.addoption(
        "--hil-comparison-cache",
        default=str(comparison_cache.CACHE.directory()),
        help=f"comparison cache directory (env {comparison_cache.CACHE.dir_env}; size cap "
        f"{comparison_cache.CACHE.cap_env}, default 2G); 'off' disables it",
    )
    group.addoption(
        "--hil-case-cache",
        default=str(case_cache.CACHE.directory()),
        help=f"generated case list cache directory (env {case_cache.CACHE.dir_env}; size cap "
        f"{case_cache.CACHE.cap_env}, default 2G); 'off' disables it",
    )
    group.addoption(
        "--hil-conversion-cache",
        default=None,
        help="converted models for boards, shared by every results directory "
        f"({cache_help('conversion_cache')}; size cap default 2G)",
    )
    add_policy_options(group)
    _add_farm_options(group)
    group.addoption("--models", default=None, help="folder of ONNX models (suites/test_models.py)")
    group.addoption(
        "--models-select",
        default="",
        help="with --models: comma-separated name globs, or 'catalogue' for the models made "
        "only of the catalogue's operators",
    )
    group.addoption(
        "--no-freeze",
        action="store_true",
        help="with --models: keep operator parameters given as graph inputs as inputs",
    )


def _add_farm_options(group: pytest.OptionGroup) -> None:
    """labgrid places as the run's boards (docs/farms.md); ``--lg-coordinator`` and
    ``--lg-env`` (an environment file naming the place) are labgrid's own pytest options (its
    plugin comes with the ``farm`` extra)."""
    group.addoption("--lg-place", default=None, metavar="NAME", help="run on this labgrid place")
    group.addoption(
        "--lg-tags",
        default=None,
        metavar="K=V[,K=V...]",
        help="run on a labgrid place with these tags",
    )
    group.addoption(
        "--lg-wait", type=float, default=600.0, help="seconds to wait for a free place (600)"
    )


def check_options(config: pytest.Config, vendor: Vendor) -> None:
    """Stop with a usage error (exit 4) before collection when an option value is unusable
    (the vendor, the platform and ``--sdk`` are checked as the run configuration reads them);
    the options left to the run's ``vendor`` take its defaults."""
    fill_run_defaults(config.option, vendor)
    _check_timeouts(config, "hil_timeout", "lg_wait")
    if config.getoption("backend") == "board" and config.getoption("board_fallback") != "none":
        raise pytest.UsageError("--board-fallback simulator: not with --backend board")
    if config.getoption("hil_batch") < 1:
        raise pytest.UsageError(f"--hil-batch {config.getoption('hil_batch')}: at least 1")
    _check_folder(config, "results")
    try:
        size_budget()
    except ValueError as exc:  # it names the variable and the value
        raise pytest.UsageError(str(exc)) from None
    if config.getoption("hil_cache") != "off":
        _check_cache(config, "hil_cache", vendor.simulator_cache)
    if config.getoption("hil_reference_cache") != "off":
        _check_cache(config, "hil_reference_cache", reference_cache.CACHE)
    if config.getoption("hil_comparison_cache") != "off":
        _check_cache(config, "hil_comparison_cache", comparison_cache.CACHE)
    if config.getoption("hil_case_cache") != "off":
        _check_cache(config, "hil_case_cache", case_cache.CACHE, case_cache.check)
    if config.getoption("backend") != "sim" and config.getoption("hil_conversion_cache") != "off":
        _check_cache(config, "hil_conversion_cache", vendor.conversion_cache)
    _check_timeouts(config, "case_budget", "slow_timeout")
    every = config.getoption("progress_every")
    if every < 0:
        raise pytest.UsageError(f"--progress-every {every}: must be 0 or more")


def _check_cache(
    config: pytest.Config,
    option: str,
    cache: CacheFolder | None,
    own: Callable[[Path], object] | None = None,
) -> None:
    """A cache folder that is usable and the cache's own (``diskcache.claim``), and its cap;
    ``own``, the cache's own check of its folder (made by it when missing: CacheFolderError)."""
    try:
        if own is not None and config.getoption(option):
            own(Path(config.getoption(option)))
        _check_folder(config, option)
        claim(Path(config.getoption(option)))
    except CacheFolderError as exc:
        raise pytest.UsageError(f"--{option.replace('_', '-')}: {exc}") from None
    try:
        if cache is not None:  # None: the run's vendor has none of this kind
            cache.cap()
    except ValueError as exc:  # it names the variable and the value
        raise pytest.UsageError(str(exc)) from None


def _check_timeouts(config: pytest.Config, *options: str) -> None:
    for option in options:
        value = config.getoption(option)
        problem = timeout_problem(value)
        if problem is not None:
            raise pytest.UsageError(f"--{option.replace('_', '-')} {value:g}: {problem}")


def _check_folder(config: pytest.Config, option: str) -> None:
    """The folder an option names exists afterwards, created if need be; "" is refused because
    it would silently mean the working directory."""
    value = config.getoption(option)
    name = "--" + option.replace("_", "-")
    if not value:
        raise pytest.UsageError(f"{name} {value!r}: give a folder")
    try:
        Path(value).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise pytest.UsageError(f"{name} {value!r}: not a usable folder: {exc.strerror}") from None
    if not os.access(value, os.W_OK | os.X_OK):
        raise pytest.UsageError(f"{name} {value!r}: folder is not writable")
