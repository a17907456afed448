"""pytest plugin of npu-hil (registered as the ``npu_hil`` pytest11 entry point).

A test that asks for the ``hil_record`` fixture is parametrized with one case per documented
limit boundary (``harness.cases.operators``); the fixture runs the case on the selected backend and
journals it; ``check_verdict`` turns the verdict into a pass, a failure or a warning.
Infrastructure trouble is raised from the fixture, so pytest reports it as an error, never as
a test failure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from harness.boards.inventory import Board, BoardFileError
from harness.boards.labgrid_env import env_platform_boards
from harness.cases.case import Case
from harness.cases.model_dir import KIND as MODELS_KIND
from harness.cases.model_dir import DirectoryCases, directory_cases
from harness.cases.operators import DTYPES, operator_cases
from harness.diskcache import CacheFolder, CacheFolderError, claim
from harness.documented.operators import OperatorCatalogue
from harness.judge import comparison_cache
from harness.judge.compare import Compare, compare_references
from harness.judge.verdict import ARRAYS_DROPPED_FOR, BAD_INPUT, FAILING_VERDICTS, VERDICTS
from harness.modelfiles.prepare import ModelFileError
from harness.models import OPERATOR_SPECS
from harness.models import reference as reference_cache
from harness.models.budget import size_budget
from harness.names import sdk_version
from harness.nightly import perf as latency
from harness.nightly import run as nightly
from harness.pipeline import OBSERVED_CAP, CaseExecutor, Vendor, host_versions
from harness.report.matrix import BOARD_DOWN_KEY, MODELS_NOT_RUN_KEY, UNPROBED_KEY
from harness.report.sdk_matrix import DOCUMENTS_KEY
from harness.results.journal import (
    RUN_META_NAME,
    JournalWriteError,
    finished_ids,
    write_run_metadata,
)
from harness.results.records import CaseRecord, case_key, record_key
from harness.scheduler import DEFAULT_BATCH, BatchSizes, Scheduler, upcoming_cases
from harness.targets.selection import (
    Assignment,
    BoardDown,
    BoardWithFallback,
    assign_boards,
    assigned_board,
    fallback_note,
    farm_options,
    platform_boards,
    watch_lease,
    worker_index,
)
from harness.targets.target import Target
from harness.text import printable, warn_weak_secrets
from harness.timeouts import timeout_problem
from harness.vendors import (
    ALL_PLATFORMS,
    CONVERSION_CACHE,
    DEFAULT_PLATFORM,
    SIMULATOR_CACHE,
    layer_aliases,
    platform_named,
    regenerate,
    vendor_for,
)

_VERDICT_COUNTS: Counter[str] = Counter()  # this process's verdicts, for the summary
# verdict -> [cases whose record holds warnings, warnings], and known issues that changed
_CASE_WARNINGS: dict[str, list[int]] = {}
_KNOWN_CHANGED: list[str] = []
# Warnings the summary counts instead of pytest listing each (-W default::<this> lists them)
_QUIET = ("DocDriftWarning", "KnownIssueChangedWarning")
_NIGHTLY: list[nightly.NightlyRun] = []  # this process's known issues, baseline, tier


# A configured board down at the start (unreachable, no place leased, failed version check):
# not a test result, so neither one of pytest's statuses nor a failure.
BOARD_DOWN_EXIT = 6
_ASSIGNMENTS = pytest.StashKey[dict[str, list[Assignment]]]()  # platform -> one per worker
_WORKER_BOARDS = "npu_hil_boards"  # workerinput key: platform -> this worker's assignment


class InfrastructureError(Exception):
    """Board, SSH, toolkit or timeout trouble: says nothing about the NPU."""


class DocDriftWarning(UserWarning):
    """A documented limit the SDK does not enforce (passes unless --strict-docs)."""


class KnownIssueChangedWarning(UserWarning):
    """A known issue whose case now behaves differently (fails with --strict-known)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("npu-hil", "npu-hil constraint suites")
    group.addoption(
        "--platform",
        default=None,
        metavar="P[,P...]|all",
        help=f"target platforms, in any case (default {DEFAULT_PLATFORM}); 'all': every one of "
        "the vendor",
    )
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
    group.addoption("--strict-docs", action="store_true", help="fail on documentation drift")
    group.addoption("--results", default="results", help="results directory (default results)")
    group.addoption(
        "--resume", action="store_true", help="skip cases already finished in --results"
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
        default=str(SIMULATOR_CACHE.directory()),
        help=f"simulator result cache directory (env {SIMULATOR_CACHE.dir_env}; size cap "
        f"{SIMULATOR_CACHE.cap_env}, default 2G); 'off' disables it",
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
        "--hil-conversion-cache",
        default=str(CONVERSION_CACHE.directory()),
        help="converted models for boards, shared by every results directory "
        f"(env {CONVERSION_CACHE.dir_env}; size cap {CONVERSION_CACHE.cap_env}, default 2G)",
    )
    nightly.add_options(group)
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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hil_case: a generated npu-hil constraint case")
    config.addinivalue_line("markers", "hil_suite(name): the case source of a suite")
    config.addinivalue_line("markers", "outside: the case lies outside a documented limit")
    config.addinivalue_line("markers", "supported: the case is documented as supported")
    for quiet in _QUIET:
        config.addinivalue_line("filterwarnings", f"ignore::{__name__}.{quiet}")
    for dtype in DTYPES:
        config.addinivalue_line("markers", f"{dtype}: a case of data type {dtype} (-m {dtype})")
    _check_options(config)
    _NIGHTLY[:] = [nightly.NightlyRun(config, _vendor(config).known_issues)]
    config.pluginmanager.register(_NIGHTLY[0], nightly.PLUGIN_NAME)
    if not hasattr(config, "workerinput"):  # the xdist controller, or a plain run
        results = Path(config.getoption("results"))
        stopped: BoardDown | None = None
        try:
            boards = _assign_boards(config)
        except BoardDown as exc:
            boards, stopped = exc.reports, exc
        meta = {**_run_metadata(config, boards), **_NIGHTLY[0].run_metadata()}
        downs = [a.down for a in _assigned(config) if a.down] + ([stopped.down] if stopped else [])
        if downs:
            meta[BOARD_DOWN_KEY] = [
                {**down, "cases": "simulator" if stopped is None else "not run"} for down in downs
            ]
        if not config.option.collectonly:  # it runs nothing: an earlier run's results stay
            try:
                write_run_metadata(results, meta)
            except OSError as exc:
                raise pytest.UsageError(
                    f"--results {results}: cannot write {RUN_META_NAME}: {exc.strerror or exc}"
                ) from None
        if stopped is not None:
            pytest.exit(
                f"npu-hil: {stopped}: the run stopped before any case (exit status "
                f"{BOARD_DOWN_EXIT}; --board-fallback simulator runs its cases on the simulator)",
                returncode=BOARD_DOWN_EXIT,
            )
        warn_weak_secrets()


def _check_options(config: pytest.Config) -> None:
    """Stop with a usage error (exit 4) before collection when an option value is unusable."""
    _vendor(config)
    _sdks(config)
    _check_timeout(config)
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
        _check_cache(config, "hil_cache", SIMULATOR_CACHE)
    if config.getoption("hil_reference_cache") != "off":
        _check_cache(config, "hil_reference_cache", reference_cache.CACHE)
    if config.getoption("hil_comparison_cache") != "off":
        _check_cache(config, "hil_comparison_cache", comparison_cache.CACHE)
    if config.getoption("backend") != "sim":
        _check_cache(config, "hil_conversion_cache", CONVERSION_CACHE)


def _check_cache(config: pytest.Config, option: str, cache: CacheFolder) -> None:
    """A cache folder that is usable and the cache's own (``diskcache.claim``), and its cap."""
    _check_folder(config, option)
    try:
        claim(Path(config.getoption(option)))
    except CacheFolderError as exc:
        raise pytest.UsageError(f"--{option.replace('_', '-')}: {exc}") from None
    try:
        cache.cap()
    except ValueError as exc:  # it names the variable and the value
        raise pytest.UsageError(str(exc)) from None


def _check_timeout(config: pytest.Config) -> None:
    for option in ("hil_timeout", "lg_wait"):
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


_CATALOGUES = pytest.StashKey[list[OperatorCatalogue]]()
_SDKS = pytest.StashKey[list[str]]()
_DIRECTORY = pytest.StashKey[DirectoryCases]()


def _platform(config: pytest.Config) -> str:
    """``--platform`` as the vendor spells it: one platform, several (``rk3588,rv1106``; in
    any case) or ``all``; an unknown name is a usage error naming the closest."""
    spec = str(config.getoption("platform") or DEFAULT_PLATFORM)
    names = [name.strip() for name in spec.split(",")]
    try:
        if len(names) == 1:
            return platform_named(names[0], allow_all=True)
        return ",".join(platform_named(name) for name in names)
    except LookupError as exc:
        raise pytest.UsageError(f"--platform: {exc}") from None


def _platforms(config: pytest.Config) -> list[str]:
    """The run's platforms, each once, in the order given (``all``: the vendor's)."""
    spec = _platform(config)
    if spec == ALL_PLATFORMS:
        return list(_vendor(config).platforms)
    return list(dict.fromkeys(p.strip() for p in spec.split(",")))


def _vendor(config: pytest.Config) -> Vendor:
    """The one vendor of every platform of the run."""
    spec = _platform(config)
    names = [spec] if spec == ALL_PLATFORMS else [p.strip() for p in spec.split(",")]
    try:
        vendors = [vendor_for(name) for name in names]
    except LookupError as exc:
        raise pytest.UsageError(f"--platform: {exc}") from None
    if any(vendor is not vendors[0] for vendor in vendors):
        raise pytest.UsageError(f"--platform {spec}: the platforms of one run share a vendor")
    return vendors[0]


def _sdks(config: pytest.Config) -> list[str]:
    """The SDK releases every case runs on (``--sdk``), oldest first."""
    if _SDKS not in config.stash:
        try:
            spec = config.getoption("sdk")  # releases as the SDK spells them: V2.3.2 is 2.3.2
            spec = spec and ",".join(map(sdk_version, spec.split(",")))
            config.stash[_SDKS] = _vendor(config).sdks(spec)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    return config.stash[_SDKS]


def _run_metadata(config: pytest.Config, boards: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "platform": _platform(config),
        "backend": config.getoption("backend"),
        "strict_docs": bool(config.getoption("strict_docs")),
        "versions": {**host_versions(), **_vendor(config).versions()},
        "sdks": _sdks(config),
        DOCUMENTS_KEY: "; ".join(c.source.document for c in _catalogues(config)),
        "boards": boards,
        UNPROBED_KEY: _unprobed(config),
        MODELS_NOT_RUN_KEY: _directory(config).not_run,
        **_documented(config),
    }


def _documented(config: pytest.Config) -> dict[str, Any]:
    """What the vendor's documents say for the run's platforms (run.json entries, lists)."""
    vendor, spec = _vendor(config), _platform(config)
    if spec == ALL_PLATFORMS:
        return vendor.documented(spec)
    merged: dict[str, Any] = {}
    for platform in _platforms(config):
        for key, entries in vendor.documented(platform).items():
            merged[key] = [*merged.get(key, []), *entries]
    return merged


def _unprobed(config: pytest.Config) -> list[dict[str, str]]:
    """The operator limits no case probes, with the reason, for the report."""
    return [
        {"platform": catalogue.platform, "limit": item.limit.id, "reason": item.reason}
        for catalogue in _catalogues(config)
        for item in operator_cases(catalogue).unprobed
    ]


def _assign_boards(config: pytest.Config) -> list[dict[str, Any]]:
    """Choose every process's board of each platform before any case (leases held until the
    run ends); the discovery reports of the boards checked. ``BoardDown``: a configured board
    is down and no fallback was asked for; a usage error when a board is required and none is
    configured."""
    config.stash[_ASSIGNMENTS] = {}
    if config.getoption("backend") == "sim" or config.option.collectonly:
        return []
    leases = ExitStack()
    config.add_cleanup(leases.close)
    reports: list[dict[str, Any]] = []
    for platform in _platforms(config):
        boards = _platform_boards(config, platform)
        required = config.getoption("backend") == "board" or config.getoption("require_board")
        if not boards and required:
            where = config.getoption("boards")
            raise pytest.UsageError(f"no board file for platform {platform} in {where}")
        config.stash[_ASSIGNMENTS][platform], checked = assign_boards(
            boards,
            _workers(config),
            fallback=config.getoption("board_fallback") == "simulator",
            sdk=_sdks(config)[0],
            leases=leases,
            progress=functools.partial(_say, config),
        )
        reports += checked
    return reports


def _say(config: pytest.Config, text: str) -> None:
    """A line on the terminal now, outside pytest's capture (it runs before the reporter)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        sys.stderr.write(printable(text) + "\n")
        sys.stderr.flush()


def _workers(config: pytest.Config) -> int:
    """How many processes run cases: xdist's workers (``-n N``, ``--tx``), else this one."""
    if config.getoption("dist", "no") == "no":
        return 1
    specs = config.getoption("tx", None) or []
    return sum(int(s.split("*")[0]) if s.split("*")[0].isdigit() else 1 for s in specs) or 1


def _assigned(config: pytest.Config) -> list[Assignment]:
    return [a for each in config.stash.get(_ASSIGNMENTS, {}).values() for a in each]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """An xdist worker starting: the boards the controller chose for it."""
    index = worker_index(node.gateway.id)
    node.workerinput[_WORKER_BOARDS] = {
        platform: assignments[index % len(assignments)].to_json()
        for platform, assignments in node.config.stash[_ASSIGNMENTS].items()
    }


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Where each process runs its cases, on the terminal before any case (outside capture)."""
    lines = []
    for platform, assignments in config.stash.get(_ASSIGNMENTS, {}).items():
        for index, assignment in enumerate(assignments):
            who = f" gw{index}" if len(assignments) > 1 else ""
            lines.append(
                printable(
                    f"npu-hil{who}: {platform} running on {assignment.backend_name}: "
                    f"{assignment.why}"
                )
            )
    return lines


def _platform_boards(config: pytest.Config, platform: str) -> list[Board]:
    """The inventory's boards of ``platform``, each a labgrid place with ``--lg-place`` or
    ``--lg-tags``; an invalid board file or option is a usage error."""
    option = config.getoption
    runtimes = _vendor(config).runtimes
    if option("lg_env", None):  # labgrid's own option, as --lg-coordinator
        if option("lg_place") or option("lg_tags"):
            raise pytest.UsageError("--lg-env and --lg-place/--lg-tags: give one of them")
        where = (Path(option("boards")), option("lg_wait"), option("lg_coordinator", None))
        try:
            return env_platform_boards(Path(option("lg_env")), platform, runtimes, *where)
        except (BoardFileError, ValueError) as exc:
            raise pytest.UsageError(f"--lg-env: {exc}") from None
    try:
        farm = farm_options(
            option("lg_coordinator", None), option("lg_place"), option("lg_tags"), option("lg_wait")
        )
        boards = platform_boards(Path(option("boards")), platform, runtimes)
    except BoardFileError as exc:  # it quotes the board file
        raise pytest.UsageError(printable(f"--boards: {exc}")) from None
    except ValueError as exc:
        raise pytest.UsageError(printable(str(exc))) from None
    if farm and not boards:
        raise pytest.UsageError(
            f"--lg-place/--lg-tags: no board file for platform {platform} in "
            f"{option('boards')}: a labgrid place needs one for its keys, known_hosts, work "
            "directory and runtime"
        )
    return [dataclasses.replace(board, farm=farm) for board in boards] if farm else boards


def _catalogues(config: pytest.Config) -> list[OperatorCatalogue]:
    """The operators probed on each platform of the run."""
    if _CATALOGUES not in config.stash:
        vendor = _vendor(config)
        config.stash[_CATALOGUES] = [vendor.operators(p) for p in _platforms(config)]
    return config.stash[_CATALOGUES]


def _directory(config: pytest.Config) -> DirectoryCases:
    """The cases of ``--models`` (none without it); a bad folder is a usage error."""
    if _DIRECTORY not in config.stash:
        folder = config.getoption("models")
        found = DirectoryCases()
        if folder:
            patterns = [p for p in config.getoption("models_select").split(",") if p]
            operators = _catalogues(config)[0].documented()
            freeze = not config.getoption("no_freeze")
            try:
                found = directory_cases(
                    Path(folder), _platforms(config)[0], patterns, operators, freeze
                )
            except ModelFileError as exc:
                raise pytest.UsageError(printable(f"--models: {exc}")) from None  # file names
        config.stash[_DIRECTORY] = found
    return config.stash[_DIRECTORY]


def _operator_cases(config: pytest.Config) -> list[Case]:
    return [case for c in _catalogues(config) for case in operator_cases(c).cases]


def _vendor_cases(config: pytest.Config, source: Callable[[str], list[Case]]) -> list[Case]:
    """A vendor source's cases of the run's platforms (``all``: the source's own reading)."""
    if _platform(config) == ALL_PLATFORMS:
        return source(ALL_PLATFORMS)
    return [case for platform in _platforms(config) for case in source(platform)]


def _case_sources(config: pytest.Config) -> dict[str, Callable[[], list[Case]]]:
    """Suite name (``pytest.mark.hil_suite("<name>")``) -> its cases for this run."""
    return {
        "operators": lambda: _operator_cases(config),
        "models": lambda: _directory(config).cases,
        **{
            name: functools.partial(_vendor_cases, config, source)
            for name, source in _vendor(config).case_sources.items()
        },
    }


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "hil_case" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("hil_suite")
    sources = _case_sources(metafunc.config)
    if marker is None or marker.args[0] not in sources:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: a test using hil_case needs "
            f"pytest.mark.hil_suite(<one of {sorted(sources)}>)"
        )
    cases = sources[marker.args[0]]()
    params = [
        pytest.param(
            case,
            id=case.id,
            marks=[pytest.mark.hil_case, _documented_mark(case), _dtype_mark(case)],
        )
        for case in cases
    ]
    if marker.args[0] == MODELS_KIND:  # the folder's models that are not cases: skipped tests
        platform = _platforms(metafunc.config)[0]
        params += [
            pytest.param(None, id=f"{platform}/{MODELS_KIND}/{item['model']}", marks=_skip(item))
            for item in _directory(metafunc.config).not_run
        ]
    metafunc.parametrize("hil_case", params)
    if metafunc.config.getoption("sdk") is not None:  # ids end "-sdk2.3.2"
        sdks = _sdks(metafunc.config)
        metafunc.parametrize("hil_sdk", sdks, ids=[f"sdk{sdk}" for sdk in sdks])


def _dtype_mark(case: Case) -> pytest.MarkDecorator:
    """``-m float16``: exactly the cases of that data type (``-k float16`` also matches
    ``Pow/int8/exponent_dtype=float16``)."""
    return getattr(pytest.mark, case.dtype)


def _skip(not_run: dict[str, str]) -> pytest.MarkDecorator:
    return pytest.mark.skip(reason=not_run["reason"])


@pytest.fixture
def hil_sdk(pytestconfig: pytest.Config) -> str:
    """The SDK release of this test (parametrized by ``--sdk``; else this environment's)."""
    return _sdks(pytestconfig)[0]


def _documented_mark(case: Case) -> pytest.MarkDecorator:
    return pytest.mark.supported if case.documented == "supported" else pytest.mark.outside


@pytest.fixture(scope="session")
def hil_executors(
    pytestconfig: pytest.Config,
) -> Iterator[Callable[[str, str], CaseExecutor]]:
    """(SDK release, platform) -> the backend of this pytest process for them (the
    platform's board, else the SDK's one reused simulator worker, which compiles for any
    platform), each started when its first case comes."""
    option = pytestconfig.getoption
    results = Path(option("results"))
    tolerances = {
        op: tolerance
        for catalogue in _catalogues(pytestconfig)
        for op, tolerance in catalogue.tolerances().items()
        if tolerance
    }
    # a model of one catalogue operator is compared with that operator's tolerance
    documented = _directory(pytestconfig).documented.items()
    tolerances |= {case_op: tolerances[op] for case_op, op in documented if op in tolerances}
    vendor = _vendor(pytestconfig)
    models = {**OPERATOR_SPECS, **vendor.models, **_directory(pytestconfig).specs}
    with ExitStack() as stack:
        references = reference_cache.host_references
        if option("hil_reference_cache") != "off":
            cached = reference_cache.ReferenceCache(Path(option("hil_reference_cache")))
            stack.callback(cached.keep_to_cap)
            references = cached.references
        comparisons: Compare = compare_references
        if option("hil_comparison_cache") != "off":
            compared = comparison_cache.ComparisonCache(Path(option("hil_comparison_cache")))
            stack.callback(compared.keep_to_cap)
            comparisons = compared.compare_references

        @functools.cache
        def simulator(sdk: str) -> Target:
            cache_dir = option("hil_cache")
            cache = None if cache_dir == "off" else Path(cache_dir)
            return stack.enter_context(vendor.simulator(option("hil_timeout"), cache, sdk))

        @functools.cache
        def executor(sdk: str, platform: str) -> CaseExecutor:
            sim = option("backend") == "sim"  # reads no board file
            boards = [] if sim else _platform_boards(pytestconfig, platform)
            board, assignment = _board(pytestconfig, platform, boards)
            run = _NIGHTLY[0]
            annotate = run.mark
            backend: Target
            if board is None:
                backend = simulator(sdk)
                if assignment.down is not None:
                    note = fallback_note(assignment.down)
                    annotate = lambda record: run.mark(_noted(record, note))  # noqa: E731
            else:

                def on_board(board: Board) -> BoardWithFallback:
                    target = stack.enter_context(
                        vendor.board_target(
                            board, Path(option("hil_conversion_cache")), option("hil_timeout"), sdk
                        )
                    )
                    fallback = functools.partial(simulator, sdk)
                    return BoardWithFallback(target, fallback, option("board_down") == "sim")

                backend = watch_lease(on_board, board, boards, assignment, sdk, stack)
            return CaseExecutor(
                results,
                backend,
                tolerances,
                models,
                vendor.judge,
                vendor.recipe,
                annotate=annotate,
                timeout_for=run.timeout_for,
                sdk=sdk,
                perf=run.perf,
                judged_against=vendor.judged_against,
                references=references,
                comparisons=comparisons,
                drop_arrays_for=ARRAYS_DROPPED_FOR[option("keep_arrays")],
                observed_cap=None if option("keep_arrays") == "all" else OBSERVED_CAP,
            )

        yield executor


def _board(
    config: pytest.Config, platform: str, boards: list[Board]
) -> tuple[Board | None, Assignment]:
    """This process's board of ``platform`` (``boards``: the platform's) as the run's first
    process chose it (None: the simulator), and that choice."""
    if config.getoption("backend") == "sim":
        return None, Assignment(None, "--backend sim")
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        assignment = Assignment.from_json(worker[_WORKER_BOARDS][platform])
    else:
        assignment = config.stash[_ASSIGNMENTS][platform][0]
    return assigned_board(boards, assignment), assignment


def _noted(record: CaseRecord, note: str) -> CaseRecord:
    return dataclasses.replace(record, warnings=[*record.warnings, note])


@pytest.fixture(scope="session")
def _hil_finished(pytestconfig: pytest.Config) -> set[str]:
    if not pytestconfig.getoption("resume"):
        return set()
    return finished_ids(Path(pytestconfig.getoption("results")))


@pytest.fixture(scope="session")
def hil_schedulers(
    pytestconfig: pytest.Config, hil_executors: Callable[[str, str], CaseExecutor]
) -> Iterator[Callable[[str, str], Scheduler]]:
    """(SDK release, platform) -> the scheduler running this process's cases on them in
    batches (``harness.scheduler``), one per executor, each with its own batch sizes."""
    largest = pytestconfig.getoption("hil_batch")
    started: dict[tuple[str, str], Scheduler] = {}

    def scheduler(sdk: str, platform: str) -> Scheduler:
        if (sdk, platform) not in started:
            executor = hil_executors(sdk, platform)
            started[sdk, platform] = Scheduler(
                executor.execute_many, BatchSizes(largest), executor.prefetch
            )
        return started[sdk, platform]

    yield scheduler
    for each in started.values():
        each.close()


@pytest.fixture
def hil_record(
    hil_case: Case,
    hil_sdk: str,
    hil_schedulers: Callable[[str, str], Scheduler],
    _hil_finished: set[str],
    request: pytest.FixtureRequest,
) -> CaseRecord:
    """Run the case on its SDK and platform (in a batch with the next cases on both) and
    journal it; infrastructure trouble is raised as an error."""
    if case_key(hil_case.id, hil_sdk) in _hil_finished:
        pytest.skip(f"finished on SDK {hil_sdk} in an earlier run (--resume)")
    upcoming = (
        c for c in upcoming_cases(request.node) if case_key(c.id, hil_sdk) not in _hil_finished
    )
    scheduler = hil_schedulers(hil_sdk, hil_case.platform)
    try:
        record = scheduler.record(hil_case, upcoming)
        if latency.suspect(record):  # slower than the baseline: run just this case again
            record = scheduler.rerun(hil_case)
    except JournalWriteError as exc:  # no later case could keep its record either
        message = f"the journal cannot be written, the run stops: {exc}"
        request.session.shouldstop = printable(message)
        raise InfrastructureError(printable(message)) from None
    properties = request.node.user_properties
    properties.append(("case", record_key(record)))
    properties.append(("verdict", record.verdict))
    properties.append(("documented", record.documented))
    properties.append(("backend", record.backend))
    properties.append(("limit", record.limit))
    properties.append(("placement", _placement_text(record)))
    properties.append(("rewrites", "; ".join(record.rewrites)))
    properties.append(("metrics", _mapping_text(record.metrics)))
    properties.append(("versions", _mapping_text(record.versions)))
    properties.append(("warnings", str(len(record.warnings))))
    properties.append(("known", str((record.known or {}).get("status", ""))))
    if record.verdict == "infra-error":
        raise InfrastructureError(f"{record.backend}: {printable(record.detail)}")
    if record.verdict == BAD_INPUT:
        raise ModelFileError(f"{record.id}: {printable(record.detail)}")
    return record


def check_verdict(record: CaseRecord, strict_docs: bool) -> None:
    """Pass, fail or warn according to the verdict table (docs/report.md, "Verdicts"); a verdict
    that would fail is an expected failure (xfail) when it is a known issue behaving as
    recorded or the baseline failed the same way (docs/nightly.md)."""
    # Model and file names, toolkit, board and known-issues text may carry terminal escapes.
    where = printable(f"[{record.backend}] {record.limit} at {record.value} ({record.documented})")
    detail = printable(record.detail)
    run = _NIGHTLY[0] if _NIGHTLY else None  # None: called outside a configured run
    changed = run.changed(record) if run else None
    if changed is not None:
        changed = printable(changed)
        if run and run.strict_known:
            pytest.fail(f"{changed} (--strict-known): {where}: {detail}", pytrace=False)
        warnings.warn(KnownIssueChangedWarning(changed), stacklevel=2)
    drift = record.verdict == "doc-drift"
    if record.verdict in FAILING_VERDICTS or (drift and strict_docs):
        excuse = run.excuse(record) if run else None
        if excuse is not None:  # a known issue, or a failure the baseline had too
            pytest.xfail(printable(f"{record.verdict} ({excuse}): {where}: {detail}"))
    if record.verdict in FAILING_VERDICTS:
        pytest.fail(f"{record.verdict}: {where}: {detail}", pytrace=False)
    slower = run.slower(record) if run else None
    if slower is not None:
        why, excuse = slower
        if excuse is not None:  # a known issue's text, or the baseline's path
            pytest.xfail(printable(f"{why} ({excuse}): {where}"))
        pytest.fail(printable(f"{why}: {where}"), pytrace=False)
    if drift:
        message = f"doc-drift: {where}: {detail}"
        if strict_docs:
            pytest.fail(message, pytrace=False)
        warnings.warn(DocDriftWarning(message), stacklevel=2)


def _placement_text(record: CaseRecord) -> str:
    return ", ".join(f"{layer.get('op')}:{layer.get('target')}" for layer in record.placement)


def _mapping_text(mapping: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(mapping.items()))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count verdicts (also on the xdist controller, which receives the workers' reports)."""
    properties = dict(report.user_properties)
    verdict = properties.get("verdict")
    if verdict and (report.when == "call" or (report.when == "setup" and report.failed)):
        _VERDICT_COUNTS[str(verdict)] += 1
        count = int(str(properties.get("warnings", 0)))
        if count:
            cases = _CASE_WARNINGS.setdefault(str(verdict), [0, 0])
            cases[0] += 1
            cases[1] += count
        if properties.get("known") == "changed":
            _KNOWN_CHANGED.append(str(properties.get("case")))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    downs = [a.down for a in _assigned(config) if a.down]
    if downs:
        terminalreporter.section("npu-hil boards down", red=True)
        for down in downs:
            terminalreporter.write_line(fallback_note(down))
    if not _VERDICT_COUNTS:
        return
    terminalreporter.section("npu-hil verdicts")
    width = max(map(len, VERDICTS))
    for verdict in VERDICTS:
        terminalreporter.write_line(f"{verdict:{width}} {_VERDICT_COUNTS.get(verdict, 0)}")
    results = config.getoption("results")
    terminalreporter.write_line(f"results: {results} (hil report {results})")
    _warnings_summary(terminalreporter, results)


def _warnings_summary(terminalreporter: Any, results: str) -> None:
    """One line per kind of warning, with counts and where to read each one."""
    lines = []
    if _VERDICT_COUNTS.get("doc-drift"):
        lines.append(
            f"doc-drift: {_VERDICT_COUNTS['doc-drift']} cases pass with a warning (a documented "
            f"limit not enforced): each in {results}/report.md, or -W "
            f"default::{__name__}.DocDriftWarning here"
        )
    if _KNOWN_CHANGED:
        lines.append(
            f"known issue changed: {len(_KNOWN_CHANGED)} cases: listed under npu-hil known "
            "issues (--strict-known fails them)"
        )
    for verdict in VERDICTS:
        if verdict in _CASE_WARNINGS:
            cases, count = _CASE_WARNINGS[verdict]
            lines.append(
                f"{verdict}: {cases} cases raised {count} warnings while running: in their "
                f'records ("warnings" in {results}/journal.jsonl) and report cards'
            )
    if lines:
        terminalreporter.section("npu-hil warnings")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput") or not _VERDICT_COUNTS:
        return
    from harness.report.bundle import make_bundles_for_failures

    results = Path(session.config.getoption("results"))
    try:
        make_bundles_for_failures(results, layer_aliases(), regenerate)
    except OSError as exc:  # a full disk, say: the journal and case folders are what count
        print(printable(f"npu-hil: no repro bundles written: {exc}"), file=sys.stderr)
