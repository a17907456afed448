"""Configuring a run: the one run configuration (``RunConfig``), computed once at
``pytest_configure`` and kept in ``config.stash[RUN]``, then the boards of every process
(``harness.plugin.boards``) and the run's metadata (``run.json``), which ``--collect-only``
neither builds nor writes.

The run configuration is the one place the plugin reads the vendor's record.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from harness.boards.inventory import Board, BoardFileError
from harness.boards.labgrid_env import env_platform_boards
from harness.cases.case import Case, CaseSet
from harness.cases.case_cache import CaseCache
from harness.cases.model_dir import DirectoryCases, directory_cases
from harness.cases.operators import operator_cases
from harness.documented.operators import OperatorCatalogue
from harness.modelfiles.prepare import ModelFileError
from harness.names import sdk_version
from harness.pipeline import host_versions
from harness.plugin.boards import assign_boards, assigned
from harness.plugin.operator_selection import selected_operators
from harness.plugin.options import check_options
from harness.plugin.outcome import BOARD_DOWN_EXIT, PUBLIC_MODULE, QUIET
from harness.plugin.run_policy import PLUGIN_NAME, RunPolicy
from harness.plugin.summary import SUMMARY_NAME, Summary
from harness.plugin.vendor_options import the_platforms, the_vendor
from harness.report.matrix import BOARD_DOWN_KEY, MODELS_NOT_RUN_KEY, UNPROBED_KEY
from harness.report.sdk_matrix import DOCUMENTS_KEY
from harness.results.journal import RUN_META_NAME, JournalError, write_run_metadata
from harness.results.runs import VENDOR_KEY, append_run, check_unused
from harness.targets.selection import BoardDown, farm_options, platform_boards
from harness.text import printable, warn_weak_secrets
from harness.vendors import ALL_PLATFORMS, case_dtypes
from harness.vendors.base import Vendor


@dataclasses.dataclass
class RunConfig:
    """The run as its options configure it, computed once per process; what it reads of the
    vendor's record, only it reads (a vendor's cases, documents and catalogues are read when
    first asked for, once)."""

    config: pytest.Config
    given: str  # --platform as given, or the default (the history store's configuration)
    platform: str  # as the vendor spells it: one platform, several ("rk3588,rv1106") or "all"
    platforms: list[str]  # each once, in the order given ("all": the vendor's)
    vendor: Vendor  # the run's, resolved once (harness.plugin.vendor_options)
    sdks: list[str]  # the SDK releases every case runs on (--sdk), oldest first
    policy: RunPolicy
    summary: Summary
    # --op/--entry: each platform's operators they name (None: no such selection)
    selected_operators: dict[str, frozenset[str]] | None = None

    @classmethod
    def of(cls, config: pytest.Config) -> RunConfig:
        """The run configuration of ``config``'s options; an unusable option is a usage
        error."""
        vendor = the_vendor(config)
        given, platform, platforms = the_platforms(config, vendor)
        try:
            spec = config.getoption("sdk")  # releases as the SDK spells them: V2.3.2 is 2.3.2
            sdks = vendor.sdks(spec and ",".join(map(sdk_version, spec.split(","))))
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        check_options(config, vendor)
        policy = RunPolicy(config, vendor, given)
        selected = selected_operators(config, vendor, platforms)
        return cls(
            config,
            given,
            platform,
            platforms,
            vendor,
            sdks,
            policy,
            Summary(config, vendor),
            selected,
        )

    @functools.cached_property
    def catalogues(self) -> list[OperatorCatalogue]:
        """The operators probed on each platform of the run."""
        return [self.vendor.operators(platform) for platform in self.platforms]

    @functools.cached_property
    def operator_cases(self) -> list[CaseSet]:
        """Each catalogue's cases and unprobed limits, generated once per run, or read from
        the case cache (``--hil-case-cache``) when an earlier run generated them alike."""
        models = self.vendor.declarations
        folder = self.config.getoption("hil_case_cache")
        if folder == "off":
            return [operator_cases(catalogue, models) for catalogue in self.catalogues]
        cache = CaseCache(Path(folder))
        return [cache.cases(catalogue, models) for catalogue in self.catalogues]

    @functools.cached_property
    def directory(self) -> DirectoryCases:
        """The cases of ``--models`` (none without it); a bad folder is a usage error."""
        option = self.config.getoption
        folder = option("models")
        if not folder:
            return DirectoryCases()
        patterns = [p for p in option("models_select").split(",") if p]
        operators = self.catalogues[0].documented()
        try:
            return directory_cases(
                Path(folder),
                self.platforms[0],
                self.vendor.declarations,
                patterns,
                operators,
                not option("no_freeze"),
                self.vendor.max_opset,
            )
        except ModelFileError as exc:
            raise pytest.UsageError(printable(f"--models: {exc}")) from None  # file names

    @property
    def suites(self) -> Mapping[str, Callable[[str], list[Case]]]:
        """The vendor's own case sources by suite name (``pytest.mark.hil_suite``)."""
        return self.vendor.case_sources

    def documented(self) -> dict[str, Any]:
        """What the vendor's documents say for the run's platforms (run.json entries, lists)."""
        if self.platform == ALL_PLATFORMS:
            return self.vendor.documented(self.platform)
        merged: dict[str, Any] = {}
        for platform in self.platforms:
            for key, entries in self.vendor.documented(platform).items():
                merged[key] = [*merged.get(key, []), *entries]
        return merged

    def unprobed(self) -> list[dict[str, str]]:
        """The operator limits no case probes, with the reason, for the report."""
        return [
            {"platform": catalogue.platform, "limit": item.limit.id, "reason": item.reason}
            for catalogue, cases in zip(self.catalogues, self.operator_cases, strict=True)
            for item in cases.unprobed
        ]

    def metadata(self, boards: list[dict[str, Any]]) -> dict[str, Any]:
        """``run.json`` as the run starts."""
        return {
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "platform": self.platform,
            VENDOR_KEY: self.vendor.name,
            "backend": self.config.getoption("backend"),
            "strict_docs": bool(self.config.getoption("strict_docs")),
            "versions": {**host_versions(), **self.vendor.versions()},
            "sdks": self.sdks,
            DOCUMENTS_KEY: "; ".join(c.source.document for c in self.catalogues),
            "boards": boards,
            UNPROBED_KEY: self.unprobed(),
            MODELS_NOT_RUN_KEY: self.directory.not_run,
            **self.documented(),
            **self.policy.run_metadata(),
        }

    def platform_boards(self, platform: str) -> list[Board]:
        """The inventory's boards of ``platform``, each a labgrid place with ``--lg-place`` or
        ``--lg-tags``; an invalid board file or option is a usage error."""
        option = self.config.getoption
        runtimes = self.vendor.runtimes
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
                option("lg_coordinator", None),
                option("lg_place"),
                option("lg_tags"),
                option("lg_wait"),
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


RUN = pytest.StashKey[RunConfig]()
# How a suite run names another results folder, in the refusal of a used one
NEW_FOLDER = "--results DIR, or HIL_RESULTS=DIR with tox"


def run_config(config: pytest.Config) -> RunConfig:
    """The run configuration ``pytest_configure`` computed."""
    return config.stash[RUN]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hil_case: a generated npu-hil constraint case")
    config.addinivalue_line("markers", "hil_suite(name): the case source of a suite")
    config.addinivalue_line("markers", "outside: the case lies outside a documented limit")
    config.addinivalue_line("markers", "supported: the case is documented as supported")
    for quiet in QUIET:
        config.addinivalue_line("filterwarnings", f"ignore::{PUBLIC_MODULE}.{quiet}")
    for dtype in case_dtypes():
        config.addinivalue_line("markers", f"{dtype}: a case of data type {dtype} (-m {dtype})")
    run = config.stash[RUN] = RunConfig.of(config)
    config.pluginmanager.register(run.summary, SUMMARY_NAME)
    config.pluginmanager.register(run.policy, PLUGIN_NAME)
    if hasattr(config, "workerinput"):  # an xdist worker: the controller did the rest
        return
    if not config.option.collectonly:  # before any board is leased
        _check_results(run)
    stopped: BoardDown | None = None
    try:
        boards = assign_boards(run.config, run.platforms, run.platform_boards, run.sdks[0])
    except BoardDown as exc:
        boards, stopped = exc.reports, exc
    if not config.option.collectonly:  # it runs nothing: an earlier run's results stay
        _write_metadata(run, boards, stopped)
    if stopped is not None:
        pytest.exit(
            f"npu-hil: {stopped}: the run stopped before any case (exit status "
            f"{BOARD_DOWN_EXIT}; --board-fallback simulator runs its cases on the simulator)",
            returncode=BOARD_DOWN_EXIT,
        )
    warn_weak_secrets()


def _check_results(run: RunConfig) -> None:
    """A usage error when --results holds another job's run (unless --resume or --append)."""
    option = run.config.getoption
    if option("resume") or option("append"):
        return
    job = run.policy.history_entry.get("configuration", "")
    try:
        check_unused(Path(option("results")), NEW_FOLDER, job)
    except JournalError as exc:
        raise pytest.UsageError(str(exc)) from None


def _write_metadata(
    run: RunConfig, boards: list[dict[str, Any]], stopped: BoardDown | None
) -> None:
    meta = run.metadata(boards)
    downs = [a.down for a in assigned(run.config) if a.down] + ([stopped.down] if stopped else [])
    if downs:
        meta[BOARD_DOWN_KEY] = [
            {**down, "cases": "simulator" if stopped is None else "not run"} for down in downs
        ]
    results = Path(run.config.getoption("results"))
    try:
        if run.config.getoption("append"):
            append_run(results, meta)
        else:
            write_run_metadata(results, meta)
    except JournalError as exc:  # the folder's run.json, read to append to it
        raise pytest.UsageError(str(exc)) from None
    except OSError as exc:
        raise pytest.UsageError(
            f"--results {results}: cannot write {RUN_META_NAME}: {exc.strerror or exc}"
        ) from None
