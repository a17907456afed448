"""Collection: a test that asks for ``hil_case`` is parametrized with its suite's cases
(``pytest.mark.hil_suite``), each marked by whether it is documented as supported and by its
data type; ``--sdk`` parametrizes it once more by SDK release. The run policy's tier and shard
deselect at the end of collection (``harness.plugin.run_policy``)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from harness.cases.case import Case
from harness.cases.model_dir import KIND as MODELS_KIND
from harness.plugin.configure import RunConfig, run_config
from harness.vendors import ALL_PLATFORMS, other_vendors_suite


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "hil_case" not in metafunc.fixturenames:
        return
    run = run_config(metafunc.config)
    marker = metafunc.definition.get_closest_marker("hil_suite")
    sources = _case_sources(run)
    if marker and (elsewhere := other_vendors_suite(marker.args[0], run.vendor)):
        skip = pytest.mark.skip(reason=elsewhere)  # another vendor's suite: no error
        metafunc.parametrize("hil_case", [pytest.param(None, id="vendor", marks=skip)])
        return
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
        platform = run.platforms[0]
        params += [
            pytest.param(None, id=f"{platform}/{MODELS_KIND}/{item['model']}", marks=_skip(item))
            for item in run.directory.not_run
        ]
    metafunc.parametrize("hil_case", params)
    if metafunc.config.getoption("sdk") is not None:  # ids end "-sdk2.3.2"
        metafunc.parametrize("hil_sdk", run.sdks, ids=[f"sdk{sdk}" for sdk in run.sdks])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--op``/``--entry``: deselect every case but those of the operators they name."""
    chosen = run_config(config).selected_operators
    if chosen is None:
        return
    kept: list[pytest.Item] = []
    left: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("hil_case") if callspec else None
        selected = isinstance(case, Case) and case.op in chosen.get(case.platform, ())
        (kept if selected else left).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


def _case_sources(run: RunConfig) -> dict[str, Callable[[], list[Case]]]:
    """Suite name (``pytest.mark.hil_suite("<name>")``) -> its cases for this run."""
    return {
        "operators": lambda: [case for cases in run.operator_cases for case in cases.cases],
        "models": lambda: run.directory.cases,
        **{
            name: functools.partial(_vendor_cases, run, source)
            for name, source in run.suites.items()
        },
    }


def _vendor_cases(run: RunConfig, source: Callable[[str], list[Case]]) -> list[Case]:
    """A vendor source's cases of the run's platforms (``all``: the source's own reading)."""
    if run.platform == ALL_PLATFORMS:
        return source(ALL_PLATFORMS)
    return [case for platform in run.platforms for case in source(platform)]


def _documented_mark(case: Case) -> pytest.MarkDecorator:
    return pytest.mark.supported if case.documented == "supported" else pytest.mark.outside


def _dtype_mark(case: Case) -> pytest.MarkDecorator:
    """``-m float16``: exactly the cases of that data type (``-k float16`` also matches
    ``Pow/int8/exponent_dtype=float16``)."""
    return getattr(pytest.mark, case.dtype)


def _skip(not_run: dict[str, str]) -> pytest.MarkDecorator:
    return pytest.mark.skip(reason=not_run["reason"])
