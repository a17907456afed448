"""Limit probing: the search on synthetic targets with known boundaries, the step cases, the
probe records, the "Real limits" section and boundary diffs; one real simulator probe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from tests.helpers import paths
from tests.helpers.declared import MODELS

from harness.judge.verdict import PLACEMENT_PHASE, Check
from harness.probe.runner import answer_of, select
from harness.probe.search import BUDGET, CAP, FLOOR, FOUND, INFRA, UNTESTABLE, Search, Skip
from harness.probe.steps import behaviour, numeric_bounds
from harness.report.markdown import md_escape, render_markdown
from harness.report.matrix import build_report
from harness.report.real_limits import boundary_changes
from harness.results.journal import JournalError
from harness.results.probes import PROBES_NAME, ProbeRecord, ProbeStep, read_probes
from harness.results.records import CaseRecord
from harness.vendors.rknn.documents.operators import operator_catalogue, seed_catalogue

ROOT = paths.ROOT


def walk(target: Callable[[int], bool | None], **kwargs: object) -> Search:
    """Run a search against ``target`` (value -> behaved) until it stops."""
    search = Search(**kwargs)  # type: ignore[arg-type]
    while (value := search.proposal()) is not None:
        search.observe(value, target(value))
    return search


def neighbours_hold(search: Search, target: Callable[[int], bool | None]) -> None:
    """The reported pair is a real change of the target, one apart."""
    assert search.good is not None and search.bad is not None
    assert abs(search.bad - search.good) == 1
    assert target(search.good) is True and target(search.bad) is False


@pytest.mark.parametrize("real", [7, 8, 12, 100, 8191 * 3])
def test_monotone_upper_bound_is_found_exactly(real: int) -> None:
    target = lambda v: v <= real  # noqa: E731
    search = walk(target, edge=7, direction=1, budget=40)
    assert (search.stop, search.good, search.bad) == (FOUND, real, real + 1)
    assert [v for v, _ in search.tried][:2] == [7, 8]  # the edge, then the first outside value


def test_steps_grow_exponentially_then_bisect() -> None:
    search = walk(lambda v: v <= 1000, edge=7, direction=1, budget=40)
    outward = [v for v, ok in search.tried[: search.tried.index((search.bad or 0, False)) + 1]]
    assert outward[:6] == [7, 8, 16, 32, 64, 128]
    # 1000 within 2 * 7 + ... : doubling to 1024 then at most log2(512) bisection steps
    assert len(search.tried) <= 2 + 8 + 9


def test_failing_edge_searches_inward() -> None:
    target = lambda v: v <= 5  # noqa: E731
    search = walk(target, edge=7, direction=1, budget=20, floor=1)
    assert search.tried[0] == (7, False)
    assert all(value <= 7 for value, _ in search.tried)
    assert (search.stop, search.good, search.bad) == (FOUND, 5, 6)


def test_nothing_inside_behaves_stops_at_the_floor() -> None:
    search = walk(lambda v: False, edge=100, direction=1, budget=20, floor=1)
    assert (search.stop, search.good, search.bad) == (FLOOR, None, 1)
    assert search.tried[-1] == (1, False)


def test_lower_bound_searches_downward() -> None:
    target = lambda v: v >= 3  # noqa: E731
    search = walk(target, edge=16, direction=-1, budget=20)
    neighbours_hold(search, target)
    assert (search.good, search.bad) == (3, 2)


@pytest.mark.parametrize(
    "target",
    [
        lambda v: v <= 10 or 20 <= v <= 30,  # an island past the first change
        lambda v: v <= 10 or v == 12,  # a lone good value just beyond
        lambda v: v <= 9 or 40 <= v <= 100,  # bad stretch between two good ones
    ],
)
def test_non_monotone_target_reports_a_real_neighbouring_change(
    target: Callable[[int], bool],
) -> None:
    search = walk(target, edge=7, direction=1, budget=40)
    assert search.stop == FOUND
    neighbours_hold(search, target)
    # every value tried up to the good neighbour behaved: no change is hidden behind it
    assert all(ok for value, ok in search.tried if value <= (search.good or 0))


def test_budget_stop_keeps_the_bracket() -> None:
    target = lambda v: v <= 10_000  # noqa: E731
    search = walk(target, edge=8192, direction=1, budget=5)
    assert search.stop == BUDGET and len(search.tried) == 5
    assert search.good is not None and search.bad is not None
    assert search.good <= 10_000 < search.bad


def test_budget_of_one_tries_only_the_edge() -> None:
    search = walk(lambda v: True, edge=8, direction=1, budget=1)
    assert (search.stop, search.tried) == (BUDGET, [(8, True)])


def test_a_refused_value_is_never_tried_and_the_cap_is() -> None:
    refused: Skip = lambda v: "over the size budget" if v > 20_000 else None  # noqa: E731
    search = walk(lambda v: True, edge=8192, direction=1, budget=40, skip=refused)
    assert all(value <= 20_000 for value, _ in search.tried)
    assert search.tried[-1] == (20_000, True)
    assert (search.stop, search.stop_detail) == (CAP, "over the size budget")


def test_a_change_below_the_cap_is_still_found() -> None:
    refused: Skip = lambda v: "too big" if v > 20_000 else None  # noqa: E731
    target = lambda v: v <= 19_000  # noqa: E731
    search = walk(target, edge=8192, direction=1, budget=40, skip=refused)
    assert (search.stop, search.good, search.bad) == (FOUND, 19_000, 19_001)


def test_an_infra_error_ends_the_search_without_an_answer_past_it() -> None:
    search = walk(lambda v: None if v > 8 else True, edge=7, direction=1, budget=20)
    assert (search.stop, search.good, search.bad) == (INFRA, 8, None)


def test_bad_search_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="direction"):
        Search(edge=1, direction=0, budget=3)
    with pytest.raises(ValueError, match="budget"):
        Search(edge=1, direction=1, budget=0)


# -- bounds, steps, behaviour ------------------------------------------------------------


def test_bounds_of_the_catalogue_and_their_steps() -> None:
    bounds, skipped = numeric_bounds(seed_catalogue(), MODELS, ops=["MaxPool", "GRU"])
    by_id = {bound.id: bound for bound in bounds}
    kernel = by_id["rk3562/MaxPool/attr/kernel_shape/kernel_h/int8/upper"]
    assert (kernel.edge, kernel.direction, kernel.subject) == (7, 1, "kernel_h")
    step = kernel.case(9)
    # the step is the generator's case at that value: same id scheme and documented status
    assert step.id == "rk3562/MaxPool/int8/kernel_h=9"
    assert step.params["kernel"][0] == 9 and step.documented == "outside"
    assert kernel.case(7).documented == "supported"
    reasons = {item.bound.id: item.reason for item in skipped}
    hidden = reasons["rk3562/GRU/W/hidden_size/float16/upper"]
    assert "over the budget" in hidden


def test_selection_matches_parts_of_the_bound_id() -> None:
    bounds, _ = numeric_bounds(seed_catalogue(), MODELS, ops=["MaxPool", "GlobalMaxPool", "Expand"])
    chosen = select(bounds, "MaxPool and kernel and not float16")
    assert {b.id for b in chosen} == {
        "rk3562/MaxPool/attr/kernel_shape/kernel_h/int8/upper",
        "rk3562/MaxPool/attr/kernel_shape/kernel_w/int8/upper",
    }
    assert {b.op.name for b in select(bounds, "Expand or MaxPool")} == {"Expand", "MaxPool"}


def _record(verdict: str, checks: list[dict[str, object]]) -> CaseRecord:
    return CaseRecord(
        "c",
        "rk3562",
        "MaxPool",
        "int8",
        "l",
        "v",
        "outside",
        "simulator",
        verdict,
        checks=checks,
        metrics={"max_abs": 3.0},
    )


def _check(prop: str, status: str, observed: str) -> dict[str, object]:
    return {"prop": prop, "limits": ["l"], "documented": "", "observed": observed, "status": status}


def test_behaviour_of_a_step() -> None:
    on_npu = _check("placement", "doc-drift", "limit not enforced: MaxPool: on NPU")
    assert behaviour(_record("doc-drift", [on_npu])) == (True, "NPU, correct")
    cpu = _check("placement", "limit-confirmed", "CPU fallback: MaxPool: MaxPool on CPU")
    assert behaviour(_record("limit-confirmed", [cpu])) == (
        False,
        "CPU fallback: MaxPool: MaxPool on CPU",
    )
    wrong = _check("result", "wrong-result", "max_abs 3 > 0.1")
    assert behaviour(_record("wrong-result", [on_npu, wrong])) == (
        False,
        "NPU, wrong-result (max_abs=3)",
    )
    # a fallback resting on a contradicted limit: its own status and observation are read
    # from the check as the judge records it
    observed, contradiction = "build failed: kernel too large", ("l: the document says both",)
    fallback = Check(
        "placement", ("l",), "", observed, "limit-confirmed", PLACEMENT_PHASE, contradiction
    )
    wrapped = fallback.judged().to_json()
    assert (wrapped["status"], wrapped["would_be"]) == ("doc-inconsistent", "limit-confirmed")
    assert behaviour(_record("doc-inconsistent", [wrapped])) == (
        False,
        "build failed: kernel too large",
    )
    assert behaviour(_record("infra-error", []))[0] is None


# -- records, report, diff ---------------------------------------------------------------


def _probe(last_good: int, first_bad: int | None, after: str, toolkit: str) -> ProbeRecord:
    steps = [ProbeStep(7, "rk3562/MaxPool/int8/kernel_h=7", True, "NPU, correct", "confirmed")]
    if first_bad is not None:
        steps.append(
            ProbeStep(
                first_bad,
                f"rk3562/MaxPool/int8/kernel_h={first_bad}",
                False,
                after,
                "limit-confirmed",
            )
        )
    return ProbeRecord(
        id="rk3562/MaxPool/attr/kernel_shape/kernel_h/int8/upper", platform="rk3562",
        op="MaxPool", limit="MaxPool/attr/kernel_shape/kernel_h", dtype="int8", side="upper",
        subject="kernel_h", documented="(0,7]", edge=7, stop="found" if first_bad else "budget",
        budget=16, last_good=last_good, first_bad=first_bad, before="NPU, correct",
        after=after, steps=steps, versions={"rknn_toolkit2": toolkit},
    )  # fmt: skip


def test_probe_records_round_trip_and_bad_lines_are_refused(tmp_path: Path) -> None:
    from harness.results.probes import append_probe

    record = _probe(12, 13, "CPU fallback", "2.5.0")
    append_probe(tmp_path, record)
    (back,) = read_probes(tmp_path)
    assert back == record and back.observed() == "12 | 13"
    assert back.first_bad_case == "rk3562/MaxPool/int8/kernel_h=13"
    with (tmp_path / PROBES_NAME).open("a") as out:
        out.write(json.dumps({**record.to_json(), "stop": "gave-up"}) + "\n")
    with pytest.raises(JournalError, match=r"probes.jsonl:2: field 'stop' has unknown value"):
        read_probes(tmp_path)


def test_real_limits_section_and_moved_boundaries() -> None:
    old = _probe(12, 13, "CPU fallback", "2.3.2")
    new = _probe(20, 21, "build failed: too large", "2.5.0")
    report = replace(build_report([], {"platform": "rk3562"}, {}), probes=[new])
    lines = render_markdown(report).split("## Real limits\n", 1)[1].splitlines()
    row = lines[3]
    assert md_escape("(0,7]") in row and md_escape("20 | 21") in row
    assert "NPU, correct → build failed" in row and "2/16" in row
    (moved,) = boundary_changes([old], [new])
    assert (moved.old, moved.new) == ("12 | 13: CPU fallback", "20 | 21: build failed: too large")
    assert (moved.old_versions, moved.new_versions) == (
        "rknn_toolkit2=2.3.2",
        "rknn_toolkit2=2.5.0",
    )
    assert boundary_changes([old], [old]) == []


def test_hil_probe_rejects_a_bad_selection() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, "probe", "-k", "MaxPool and", "--list"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "-k 'MaxPool and'" in done.stderr
    done = subprocess.run(
        [sys.executable, "-c", code, "probe", "-k", "NoSuchOp", "--list"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "matches no documented limit" in done.stderr


def test_a_selection_of_limits_no_search_can_walk_lists_each_with_its_reason() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = ["probe", "--platform", "rk3588", "-k", "ConvTranspose and strides", "--list"]
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr  # not bad input: a value set is no numeric bound
    assert done.stdout.splitlines() == [
        f"rk3588/ConvTranspose/attr/{limit}\tnot searched: a value set: its cases probe every "
        "member and the values just outside it"
        for limit in ("strides", "strides#2")
    ]


def test_a_product_of_three_factors_is_a_bound_along_each_factor() -> None:
    catalogue = operator_catalogue("rv1106")
    found, skipped = numeric_bounds(catalogue, MODELS, ops=["Hardmax"], dtypes=("int8",))
    product = "rv1106/Hardmax/input/channel*height*width<=8192/int8/upper"
    bounds = [b for b in found if b.id.startswith(product)]
    assert not [s for s in skipped if s.bound.id.startswith(product)]
    assert sorted(b.id for b in bounds) == [
        f"{product}/{f}" for f in ("channel", "height", "width")
    ]
    for bound in bounds:
        assert bound.edge == 20  # 20*20*20 = 8000 <= 8192 < 20*20*21
        assert bound.case(bound.edge).documented == "supported"
        assert bound.case(bound.edge + 1).documented == "outside"


def test_the_answer_of_a_search_stopped_by_infra_trouble() -> None:
    bounds, _ = numeric_bounds(seed_catalogue(), MODELS, ops=["MaxPool"], dtypes=("int8",))
    (bound,) = select(bounds, "kernel_h")
    search = walk(lambda v: None if v > 8 else True, edge=7, direction=1, budget=20)
    seen = {None: ("infra error: timed out", "infra-error"), True: ("NPU, correct", "doc-drift")}
    steps = [ProbeStep(v, bound.case(v).id, ok, *seen[ok]) for v, ok in search.tried]
    first = _record("confirmed", [])
    answer = answer_of(bound, search, steps, {steps[0].case: first})
    assert (answer.stop, answer.stop_detail) == ("infra", "infra error: timed out")
    assert (answer.last_good, answer.first_bad, answer.before, answer.after) == (
        8,
        None,
        "NPU, correct",
        "",
    )
    assert answer.observed() == ">= 8 (infra)" and answer.backend == "simulator"


def test_a_step_refused_like_its_control_leaves_the_bound_untested() -> None:
    bounds, _ = numeric_bounds(seed_catalogue(), MODELS, ops=["MaxPool"], dtypes=("int8",))
    (bound,) = select(bounds, "kernel_h")
    # a step past the edge is judged against the edge, one inside against the typical model
    assert bound.case(9).control.id == bound.case(7).id
    assert bound.case(7).control.id == "rk3562/MaxPool/int8/typical"
    refused = _check("placement", "untestable", "build failed: E; its control did not run")
    behaved, seen = behaviour(_record("untestable", [refused]))
    assert behaved is None
    search = Search(edge=7, direction=1, budget=16)
    search.observe(search.proposal(), behaved)
    search.tested_nothing()
    assert search.proposal() is None and search.stop == UNTESTABLE
    step = ProbeStep(7, bound.case(7).id, behaved, seen, "untestable")
    answer = answer_of(bound, search, [step], {step.case: _record("untestable", [refused])})
    assert answer.observed() == "untested" and answer.stop_detail == seen


@pytest.mark.parametrize("platform", ["rk3588", "rv1106"])
def test_every_platforms_operators_have_bounds_to_search(platform: str) -> None:
    """The operator list's limits: products of two factors and finite ranges are searched,
    an epsilon's "(0, ∞]" has no integer bound and is left out, no operator without a model."""
    bounds, _ = numeric_bounds(operator_catalogue(platform), MODELS)
    ops = {bound.op.name for bound in bounds}
    assert {"Transpose", "Convolution", "MaxPool"} <= ops
    assert ops <= set(MODELS.probing)
    assert not [b for b in bounds if b.limit.subject == "epsilon"]
    assert all(b.id.startswith(f"{platform}/") for b in bounds)
