"""Every generated case but an operator's first typical one names its inside control: a case
of the same run, the nearest inside the limit an outside case probes, else the typical model
of its dtype; a control run for a case whose control the selection left out is that model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.helpers.declared import MODELS
from tests.helpers.declared import platform_cases as generated

from harness.cases.controls import TYPICAL, control_case
from harness.cases.operators import operator_cases
from harness.documented.properties import RESULT
from harness.pipeline import CaseExecutor, Stages
from harness.results.records import case_folder
from harness.targets.job import Job
from harness.targets.observation import Observation
from harness.vendors import vendor_named
from harness.vendors.rknn.documents.operators import seed_catalogue

RKNN = vendor_named("rknn")


@pytest.fixture(params=RKNN.platforms)
def platform_cases(request):
    return generated(request.param)


def test_every_case_but_the_first_typical_names_a_control_of_the_same_run(platform_cases):
    by_id = {case.id: case for case in platform_cases}
    without = {}
    for case in platform_cases:
        if case.control is None:
            without.setdefault(case.op, []).append(case.id)
            continue
        control = by_id.get(case.control.id)
        assert control is not None, f"{case.id}: control {case.control.id} is no case of the run"
        assert control.id != case.id and control.op == case.op
        assert (control.dtype, control.params) == (case.control.dtype, case.control.params)
    # one case an operator stands alone: its typical model in the first dtype it documents
    for op, ids in without.items():
        assert len(ids) == 1 and ids[0].endswith(f"/{TYPICAL}"), (op, ids)


def test_an_outside_case_is_judged_against_the_nearest_inside_its_limit(platform_cases):
    by_id = {case.id: case for case in platform_cases}
    for case in platform_cases:
        if case.documented != "outside" or case.control is None or case.value == TYPICAL:
            continue
        control = by_id[case.control.id]
        if control.value == TYPICAL:  # no inside case of the limit in that dtype
            continue
        assert control.dtype == case.dtype
        assert case.limit in control.limits and case.limit not in control.outside_because


def test_a_kernel_bound_is_judged_against_its_edge_and_a_dtype_against_the_first_dtype():
    cases = {
        c.id: c for c in operator_cases(RKNN.operators("rv1106"), MODELS, ops=["Hardmax"]).cases
    }
    assert cases["rv1106/Hardmax/int8/height*width=8193"].control.id == (
        "rv1106/Hardmax/int8/height*width=8192"
    )
    assert cases["rv1106/Hardmax/int8/width=2"].control.id == "rv1106/Hardmax/int8/width=3"
    assert cases["rv1106/Hardmax/float16/typical"].control.id == "rv1106/Hardmax/int8/typical"
    assert cases["rv1106/Hardmax/float16/width=3"].control.id == "rv1106/Hardmax/float16/typical"
    assert cases["rv1106/Hardmax/int8/typical"].control is None


def test_a_control_run_on_its_own_is_the_generated_control_model():
    cases = {
        c.id: c for c in operator_cases(RKNN.operators("rk3588"), MODELS, ops=["MaxPool"]).cases
    }
    case = cases["rk3588/MaxPool/float16/height=8193"]
    generated = cases[case.control.id]
    alone = control_case(case)
    assert (alone.id, alone.dtype, alone.params, alone.seed) == (
        generated.id,
        generated.dtype,
        generated.params,
        generated.seed,
    )
    assert alone.control is None and not alone.expects


def test_a_control_comes_before_the_cases_judged_against_it(platform_cases):
    seen: set[str] = set()
    for case in platform_cases:
        assert case.control is None or case.control.id in seen, case.id
        seen.add(case.id)


class _Square:
    """Squares its one input on the host: every Pow case of exponent 2 right, the others
    wrong; it sees the result only."""

    observes = frozenset({RESULT})

    def run(self, job: Job) -> Observation:
        (x,) = job.inputs
        return Observation("host", outputs=[np.square(x)], observes=self.observes)


def test_a_control_run_for_a_case_writes_no_case_folder(tmp_path: Path) -> None:
    """Under xdist the control of one worker's case may be another worker's case, running
    into its case folder: a control run only for its observation leaves that folder alone."""
    cases = {c.id: c for c in operator_cases(seed_catalogue(), MODELS, ops=["Pow"]).cases}
    square = cases["rk3562/Pow/float16/values=2"]
    assert square.control is not None
    control_folder = tmp_path / case_folder(square.control.id, "")
    control_folder.mkdir(parents=True)
    (control_folder / "build.log").write_text("the other worker's")
    record = CaseExecutor(tmp_path, _Square(), Stages()).execute(square)
    assert record.verdict == "confirmed"
    assert (tmp_path / record.artifacts / "model.onnx").is_file()
    assert [p.name for p in control_folder.iterdir()] == ["build.log"]
    assert (control_folder / "build.log").read_text() == "the other worker's"
