"""The one place an executor's stages are put together from a vendor (``stages_for``).

The plugin, ``hil probe``, ``hil run``, ``hil reduce`` and the benchmarks all build their
``CaseExecutor``'s stages here, so a record of a case carries the same fields whichever of
them ran it; ``default_sdk`` is the SDK release their records name when no ``--sdk`` chose
one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from harness.cases.case import Case
from harness.documented.operators import OperatorCatalogue
from harness.judge.compare import Compare, compare_references
from harness.models import BuiltModel
from harness.models.builder import OperatorSpec
from harness.models.reference import References, host_references
from harness.pipeline import OBSERVED_CAP, Stages
from harness.results.records import CaseRecord
from harness.targets.timing import JobTiming
from harness.vendors.base import Vendor


def stages_for(
    vendor: Vendor,
    catalogues: Sequence[OperatorCatalogue] = (),
    *,
    models: Mapping[str, OperatorSpec] | None = None,
    documented: Mapping[str, str] | None = None,
    annotate: Callable[[CaseRecord], CaseRecord] | None = None,
    timeout_for: Callable[[Case], float | None] | None = None,
    perf: JobTiming | None = None,
    references: Callable[[BuiltModel], References] = host_references,
    reference_deadline_s: float | None = None,
    comparisons: Compare = compare_references,
    drop_arrays_for: Collection[str] = (),
    observed_cap: int | None = OBSERVED_CAP,
) -> Stages:
    """``vendor``'s stages for cases of ``catalogues`` (their tolerances; none for a user's
    model). ``models``: declarations beyond the operators' and the vendor's (a ``--models``
    folder's); ``documented``: case op -> the catalogue operator whose tolerance it takes (a
    model made of one catalogue operator). The other arguments are the ``Stages`` fields of
    the same name; the vendor gives the judge, the recipe and ``judged_against``."""
    tolerances = {
        op: tolerance
        for catalogue in catalogues
        for op, tolerance in catalogue.tolerances().items()
        if tolerance
    }
    tolerances |= {
        case_op: tolerances[op] for case_op, op in (documented or {}).items() if op in tolerances
    }
    defaults = Stages()
    return Stages(
        models={**vendor.declarations.specs, **(models or {})},
        tolerances=tolerances,
        judge=vendor.judge,
        recipe=vendor.recipe,
        judged_against=vendor.judged_against,
        annotate=annotate or defaults.annotate,
        timeout_for=timeout_for or defaults.timeout_for,
        perf=perf,
        references=references,
        reference_deadline_s=reference_deadline_s,
        comparisons=comparisons,
        drop_arrays_for=drop_arrays_for,
        observed_cap=observed_cap,
        vendor=vendor.name,
    )


def default_sdk(vendor: Vendor) -> str:
    """The SDK release this environment runs without ``--sdk`` (what the suites' records
    name then too)."""
    return vendor.sdks(None)[0]
