"""The two host references: which one runs where, their disagreement as a verdict, the record
and report fields it fills, and real simulator runs of the cases that motivated it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator
from tests.helpers.declared import MODELS

from harness.cases.operators import operator_cases
from harness.documented.properties import PLACEMENT, RESULT
from harness.judge.compare import compare_references, tolerance_for
from harness.models import builder
from harness.models.reference import ORT, SPEC, host_references, spec_unavailable
from harness.pipeline import GENERIC_JUDGE, CaseExecutor
from harness.plugin import check_verdict
from harness.report.html import render_html
from harness.report.markdown import render_markdown
from harness.report.matrix import build_report, reference_summary
from harness.results.records import CaseRecord
from harness.targets.observation import Observation
from harness.targets.target import Target
from harness.vendors.rknn.documents.operators import seed_catalogue
from harness.vendors.rknn.model_io.models import build_io_model

CASES = {
    case.id: case
    for case in operator_cases(seed_catalogue(), MODELS, ops=["AveragePool", "Pow"]).cases
}
CEIL = "rk3562/AveragePool/float16/ceil_mode=1"  # runs on the CPU (documented outside)
CEIL_INT8 = "rk3562/AveragePool/int8/ceil_mode=1"  # runs on the NPU
POW_INT8 = "rk3562/Pow/float16/exponent_dtype=int8"


def at_opset_13(monkeypatch: pytest.MonkeyPatch) -> None:
    """Models built as before opset 19, where onnxruntime's AveragePool divides a window
    that ceil_mode clips by the full kernel size."""
    monkeypatch.setattr(builder, "OPSET", 13)
    monkeypatch.setattr(builder, "IR_VERSION", 8)


def test_both_references_run_a_typical_model_and_agree() -> None:
    built = MODELS.build("AveragePool", CASES[CEIL].params, seed=CASES[CEIL].seed)
    references = host_references(built)
    assert (set(references.outputs), references.unavailable, references.used) == (
        {SPEC, ORT},
        {},
        SPEC,
    )
    (spec,), (ort,) = references.outputs[SPEC], references.outputs[ORT]
    np.testing.assert_allclose(ort, spec, rtol=1e-6, atol=1e-6)


def test_at_opset_13_the_references_disagree_on_a_ceil_mode_average_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at_opset_13(monkeypatch)
    built = MODELS.build("AveragePool", CASES[CEIL].params, seed=CASES[CEIL].seed)
    assert onnx.load_from_string(built.onnx_bytes).opset_import[0].version == 13
    references = host_references(built)
    (spec,), (ort,) = references.outputs[SPEC], references.outputs[ORT]
    # Only the windows ceil_mode clips (last row and column of 5x5, per channel) differ.
    differ = ~np.isclose(ort, spec)
    assert differ[..., :4, :4].sum() == 0 and differ.sum() == 4 * 9


def test_pow_with_an_int8_exponent_has_only_the_spec_reference() -> None:
    built = MODELS.build("Pow", CASES[POW_INT8].params, seed=CASES[POW_INT8].seed)
    references = host_references(built)
    assert set(references.outputs) == {SPEC} and references.used == SPEC
    assert "no CPU kernel" in references.unavailable[ORT]
    (x,), (y,) = built.inputs, references.outputs[SPEC]
    np.testing.assert_allclose(y, x**2, rtol=1e-6)


@pytest.mark.parametrize(
    ("op", "params", "why"),
    [
        ("GRU", {"direction": "reverse"}, "ignores GRU direction=reverse"),
        ("GRU", {"direction": "bidirectional"}, "ignores GRU direction=bidirectional"),
        ("LSTM", {}, "computes no LSTM output Y_c"),
    ],
)
def test_recurrent_models_onnx_reference_cannot_follow_rest_on_onnxruntime(
    op: str, params: dict, why: str
) -> None:
    references = host_references(MODELS.build(op, params, seed=7))
    assert set(references.outputs) == {ORT} and references.used == ORT
    assert why in references.unavailable[SPEC]
    assert spec_unavailable(onnx.load_from_string(MODELS.build("GRU", {}, 7).onnx_bytes)) is None


def test_the_recurrent_gaps_are_real_in_the_installed_onnx() -> None:
    """Fails once onnx.reference follows ``direction`` and computes Y_c (onnx/onnx#7935):
    then ``spec_unavailable`` should stop excluding those models."""
    reverse, forward = (
        MODELS.build("GRU", {"direction": d}, seed=7) for d in ("reverse", "forward")
    )
    feeds = {"X": reverse.inputs[0]}
    ran = ReferenceEvaluator(reverse.onnx_bytes).run(["Y"], feeds)[0]
    np.testing.assert_array_equal(ran, ReferenceEvaluator(forward.onnx_bytes).run(["Y"], feeds)[0])
    assert not np.allclose(ran, host_references(reverse).outputs[ORT][0])
    with pytest.raises(NotImplementedError):
        both = MODELS.build("GRU", {"direction": "bidirectional"}, seed=7)
        ReferenceEvaluator(both.onnx_bytes).run(None, feeds)
    lstm = MODELS.build("LSTM", {}, seed=7)
    with pytest.raises(RuntimeError, match="Y_c"):
        ReferenceEvaluator(lstm.onnx_bytes).run(lstm.output_names, {"X": lstm.inputs[0]})


def test_a_convolution_too_large_for_onnx_reference_rests_on_onnxruntime() -> None:
    """The k3 d60 depthwise probe of the model-I/O suite: 6.5e8 multiply-adds."""
    depthwise = {"conv_type": "DepthwiseConvolution", "out_channels": 3, "w_stride": 128}
    large = {**depthwise, "dilation": [60, 60], "shape": [1, 3, 121, 122]}
    why = spec_unavailable(onnx.load_from_string(build_io_model("FirstConv", large, 0).onnx_bytes))
    assert why is not None and "Conv of 6.48e+08 multiply-adds" in why
    small = build_io_model("FirstConv", {**depthwise, "dilation": [2, 2]}, seed=0)
    assert set(host_references(small).outputs) == {SPEC, ORT}


# -- judging against two references -----------------------------------------------------------


def observed(outputs: list[np.ndarray]) -> Observation:
    layers = [{"op": "AveragePool", "target": "NPU"}]
    return Observation(
        "simulator", outputs=outputs, placement=layers, observes=frozenset({RESULT, PLACEMENT})
    )


@pytest.mark.parametrize("follows", [SPEC, ORT])
def test_disagreeing_references_make_the_result_undecided(
    monkeypatch: pytest.MonkeyPatch, follows: str
) -> None:
    at_opset_13(monkeypatch)
    case = CASES[CEIL]
    built = MODELS.build("AveragePool", case.params, seed=case.seed)
    references = host_references(built)
    outputs = references.outputs[follows]  # a target that computes like one of them
    comparison = compare_references(outputs, references.outputs, SPEC, tolerance_for("float16"))
    assert comparison.reference == SPEC and comparison.disagreeing == [ORT]
    assert comparison.passed == (follows == SPEC)  # decided against the spec's reference
    verdict = GENERIC_JUDGE(case, observed(outputs), comparison)
    assert verdict.verdict == "reference-disagreement"
    (result,) = [c for c in verdict.checks if c["prop"] == RESULT]
    (spec,), (ort,) = references.outputs[SPEC], references.outputs[ORT]
    tolerance = tolerance_for("float16")
    outside = np.abs(ort - spec) > tolerance["atol"] + tolerance["rtol"] * np.abs(spec)
    counted = f"{np.count_nonzero(outside)} of {spec.size} elements"
    assert f"{ORT} differs from {SPEC}: {counted}" in result["observed"]
    worst = comparison.others[ORT].worst
    assert worst[SPEC] != worst[ORT] and worst["observed"] == worst[follows]


def test_agreeing_references_leave_the_verdict_to_the_spec_comparison() -> None:
    case = CASES[CEIL]
    references = host_references(MODELS.build("AveragePool", case.params, seed=case.seed))
    wrong = [references.outputs[SPEC][0] + 0.5]
    comparison = compare_references(wrong, references.outputs, SPEC, tolerance_for("float16"))
    assert comparison.disagreeing == [] and not comparison.others[ORT].observed.passed
    verdict = GENERIC_JUDGE(case, observed(wrong), comparison)
    assert verdict.verdict == "wrong-result" and f"(against {SPEC})" in verdict.detail


def test_a_reference_disagreement_does_not_fail_pytest() -> None:
    record = CaseRecord(
        "x", "rk3562", "AveragePool", "float16", "l", "1", "supported", "simulator",
        verdict="reference-disagreement",
    )  # fmt: skip
    check_verdict(record, strict_docs=True)
    with pytest.raises(pytest.fail.Exception):
        check_verdict(CaseRecord(**{**record.to_json(), "verdict": "wrong-result"}), True)


# -- on the rknn-toolkit2 simulator -----------------------------------------------------------


@pytest.fixture(scope="module")
def simulator() -> Iterator[Target]:
    pytest.importorskip("rknn.api", reason="rknn-toolkit2 (the simulator) is not installed")
    from harness.vendors.rknn.toolkit.simulator import SimulatorPool

    with SimulatorPool(workers=1, timeout_s=300) as pool:
        yield pool


def test_simulated_ceil_mode_average_pool_matches_both_references(
    simulator: Target, tmp_path: Path
) -> None:
    """The case once reported wrong-result (34/100 elements): the SDK clips the window as
    AveragePool-19 says; opset-13 onnxruntime did not."""
    record = CaseExecutor(tmp_path, simulator).execute(CASES[CEIL])
    statuses = {check["prop"]: check["status"] for check in record.checks}
    assert statuses[RESULT] == "confirmed", record.checks
    # Documented outside (ceil_mode), run on the CPU: the limit holds.
    assert record.verdict == "limit-confirmed", record.detail
    assert record.reference["used"] == SPEC and record.reference["unavailable"] == {}
    assert set(record.reference["metrics"]) == {SPEC, ORT}
    assert record.reference["agreement"][ORT]["agrees"] is True
    case = CASES[CEIL]  # the folder keeps no references: they are drawn again from the recipe
    outputs = host_references(MODELS.build(case.op, case.params, case.seed)).outputs
    np.testing.assert_allclose(outputs[ORT][0], outputs[SPEC][0], 1e-6)


def test_simulated_opset_13_ceil_mode_average_pool_is_a_reference_disagreement(
    simulator: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at_opset_13(monkeypatch)
    record = CaseExecutor(tmp_path, simulator).execute(CASES[CEIL_INT8])
    assert record.verdict == "reference-disagreement", record.detail
    reference = record.reference
    assert reference["used"] == SPEC
    assert reference["metrics"][SPEC]["mismatches"] == 0  # the simulator follows the spec
    assert reference["metrics"][ORT]["mismatches"] > 0
    agreement = reference["agreement"][ORT]
    assert agreement["agrees"] is False and agreement["metrics"]["mismatches"] > 0
    worst = agreement["worst"]
    assert abs(worst["observed"] - worst[SPEC]) < abs(worst["observed"] - worst[ORT])
    report = render_markdown(build_report([record], {}, {}))
    section = report.split("## Host references disagree")[1]
    assert record.id.replace("_", "\\_") in section
    for value in (worst[SPEC], worst[ORT]):
        assert f"{value:.6g}" in section
    assert "## Failing cases\n\nNone." in report


def test_a_disagreement_on_a_case_that_fell_back_is_a_note(
    simulator: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Placement decides before numbers: documented outside and run on the CPU stays
    limit-confirmed, the references' disagreement noted in the detail."""
    at_opset_13(monkeypatch)
    record = CaseExecutor(tmp_path, simulator).execute(CASES[CEIL])
    assert record.verdict == "limit-confirmed", record.detail
    assert "onnxruntime differs from onnx.reference" in record.detail


def test_simulated_pow_with_an_int8_exponent_records_the_single_reference(
    simulator: Target, tmp_path: Path
) -> None:
    record = CaseExecutor(tmp_path, simulator).execute(CASES[POW_INT8])
    assert record.reference["used"] == SPEC
    assert "no CPU kernel" in record.reference["unavailable"][ORT]
    assert record.reference["agreement"] == {}
    assert not (tmp_path / record.artifacts / "reference-ort").exists()


def test_reports_list_a_disagreement_with_both_values() -> None:
    worst = {"output": 0, "index": [0, 1, 4, 4], SPEC: 0.625, ORT: 0.3515625, "observed": 0.625}

    def record(case_id: str, verdict: str, agrees: bool) -> CaseRecord:
        agreement = {"agrees": agrees, "metrics": {"max_abs": 0.2737}, "worst": worst}
        reference = {
            "used": SPEC,
            "metrics": {SPEC: {"max_abs": 0.0}, ORT: {"max_abs": 0.2737}},
            "agreement": {ORT: agreement},
            "unavailable": {},
        }
        return CaseRecord(
            case_id, "rk3562", "AveragePool", "float16", "l", "1", "outside", "simulator",
            verdict=verdict, reference=reference,
        )  # fmt: skip

    disagreeing = record(CEIL, "reference-disagreement", agrees=False)
    agreeing = record("other", "confirmed", agrees=True)
    report = build_report([disagreeing, agreeing], {}, {})
    assert report.disagreements == [disagreeing] and report.failures == []
    expected = "onnx.reference 0.625, onnxruntime 0.351562, observed 0.625"
    assert expected in reference_summary(disagreeing) and reference_summary(agreeing) == ""
    markdown = render_markdown(report).split("## Host references disagree")[1]
    assert expected in markdown and "other" not in markdown
    html = render_html(report).split("<b>Host references disagree</b>")[1]
    assert expected in html and "observed against onnxruntime: max_abs=0.2737" in html
