"""The fixtures a suite's test asks for: ``hil_record`` (its case run on its SDK and platform,
journaled), ``hil_policy`` (what ``check_verdict`` asks), ``hil_sdk``, and the session's
executors and schedulers behind them."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from harness.boards.inventory import Board
from harness.cases.case import Case
from harness.judge import comparison_cache
from harness.judge.compare import Compare, compare_references
from harness.judge.verdict import ARRAYS_DROPPED_FOR, BAD_INPUT
from harness.modelfiles.prepare import ModelFileError
from harness.models import reference as reference_cache
from harness.pipeline import OBSERVED_CAP, CaseExecutor
from harness.plugin.boards import ASSIGNMENTS, WORKER_BOARDS
from harness.plugin.configure import run_config
from harness.plugin.outcome import InfrastructureError
from harness.plugin.run_policy import RunPolicy
from harness.policy import perf as latency
from harness.report.matrix import one_line_cause
from harness.results.journal import JournalWriteError, finished_ids
from harness.results.records import CaseRecord, case_key, record_key
from harness.scheduler import BatchSizes, Scheduler, upcoming_cases
from harness.targets.selection import (
    Assignment,
    BoardWithFallback,
    assigned_board,
    fallback_note,
    watch_lease,
)
from harness.targets.target import Target
from harness.text import printable
from harness.vendors.stages import stages_for


@pytest.fixture
def hil_sdk(pytestconfig: pytest.Config) -> str:
    """The SDK release of this test (parametrized by ``--sdk``; else this environment's)."""
    return run_config(pytestconfig).sdks[0]


@pytest.fixture(scope="session")
def hil_policy(pytestconfig: pytest.Config) -> RunPolicy:
    """The run's policy: known issues, baseline, flaky cases, the performance gate
    (``check_verdict(hil_record, strict_docs, hil_policy)``)."""
    return run_config(pytestconfig).policy


@pytest.fixture(scope="session")
def hil_executors(
    pytestconfig: pytest.Config,
) -> Iterator[Callable[[str, str], CaseExecutor]]:
    """(SDK release, platform) -> this pytest process's executor for them, on its target (the
    platform's board, else the SDK's one reused simulator worker, which compiles for any
    platform), each started when its first case comes."""
    option = pytestconfig.getoption
    run = run_config(pytestconfig)
    results = Path(option("results"))
    vendor, policy = run.vendor, run.policy
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
        stages = functools.partial(
            stages_for,
            vendor,
            run.catalogues,
            models=run.directory.specs,
            # a model of one catalogue operator is compared with that operator's tolerance
            documented=run.directory.documented,
            timeout_for=policy.timeout_for,
            perf=policy.perf,
            references=references,
            reference_deadline_s=option("hil_timeout"),  # a --models model's
            comparisons=comparisons,
            drop_arrays_for=ARRAYS_DROPPED_FOR[option("keep_arrays")],
            observed_cap=None if option("keep_arrays") == "all" else OBSERVED_CAP,
        )

        @functools.cache
        def simulator(sdk: str) -> Target:
            if vendor.simulator is None:  # its cases run on its boards only
                pytest.skip(vendor.not_runnable())
            cache_dir = option("hil_cache")
            cache = None if cache_dir == "off" else Path(cache_dir)
            return stack.enter_context(vendor.simulator(option("hil_timeout"), cache, sdk))

        @functools.cache
        def executor(sdk: str, platform: str) -> CaseExecutor:
            sim = option("backend") == "sim"  # reads no board file
            boards = [] if sim else run.platform_boards(platform)
            board, assignment = _board(pytestconfig, platform, boards)
            annotate = policy.mark
            target: Target
            if board is None:
                target = simulator(sdk)
                if assignment.down is not None:
                    note = fallback_note(assignment.down)
                    annotate = lambda record: policy.mark(_noted(record, note))  # noqa: E731
            else:

                def on_board(board: Board) -> BoardWithFallback:
                    target = stack.enter_context(
                        vendor.on_board(
                            board, Path(option("hil_conversion_cache")), option("hil_timeout"), sdk
                        )
                    )
                    fallback = functools.partial(simulator, sdk)
                    return BoardWithFallback(target, fallback, option("board_down") == "sim")

                target = watch_lease(on_board, board, boards, assignment, sdk, stack)
            return CaseExecutor(results, target, stages(annotate=annotate), sdk)

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
        assignment = Assignment.from_json(worker[WORKER_BOARDS][platform])
    else:
        assignment = config.stash[ASSIGNMENTS][platform][0]
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
    properties.append(("cause", one_line_cause(record)))  # --junitxml's line (plugin.junit)
    properties.append(("duration_s", f"{record.duration_s:.3f}"))  # its time (plugin.junit)
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


def _placement_text(record: CaseRecord) -> str:
    return ", ".join(f"{layer.get('op')}:{layer.get('target')}" for layer in record.placement)


def _mapping_text(mapping: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(mapping.items()))
