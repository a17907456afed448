import numpy as np
import pytest

from harness.judge.compare import CHUNK, compare, compare_references, tolerance_for


def test_fp16_rounding_passes_and_one_wrong_element_fails():
    rng = np.random.default_rng(0)
    ref = rng.uniform(-4, 4, size=(1, 3, 8, 8)).astype(np.float32)
    fp16 = ref.astype(np.float16).astype(np.float32)  # what an fp16 NPU returns at best
    tol = tolerance_for("float16")
    assert compare([fp16], [ref], tol).passed

    broken = fp16.copy()
    broken[0, 1, 2, 3] += 0.5
    result = compare([broken], [ref], tol)
    assert not result.passed
    assert result.metrics["mismatches"] == 1
    assert result.metrics["max_abs"] == pytest.approx(0.5, abs=1e-2)


def test_int8_error_is_counted_in_quantization_steps():
    ref = np.linspace(-1, 1, 256, dtype=np.float32)
    step = 2.0 / 255
    tol = tolerance_for("int8")
    assert compare([ref + 3.5 * step], [ref], tol).passed
    assert not compare([ref + 4.5 * step], [ref], tol).passed


def test_metrics_are_the_worst_over_outputs():
    a = np.ones((2, 2), np.float32)
    b = np.full((3,), 2.0, np.float32)
    result = compare([a, b * 1.5], [a, b], tolerance_for("float16"))
    assert result.metrics["max_abs"] == pytest.approx(1.0)
    assert result.metrics["max_rel"] == pytest.approx(0.5)
    assert result.metrics["mismatches"] == 3
    assert result.metrics["count"] == 7


def test_shape_count_and_nan_mismatches_fail_with_a_reason():
    ref = np.zeros((2, 2), np.float32)
    tol = tolerance_for("float16")
    assert "outputs observed" in compare([], [ref], tol).detail
    assert "shape" in compare([np.zeros(5, np.float32)], [ref], tol).detail
    assert "non-finite" in compare([np.full((2, 2), np.nan)], [ref], tol).detail


def test_sign_flip_fails_on_cosine_even_within_a_loose_override():
    ref = np.arange(1, 9, dtype=np.float32)
    tol = tolerance_for("float16", {"atol": 100.0})
    result = compare([-ref], [ref], tol)
    assert not result.passed
    assert result.metrics["cosine"] == pytest.approx(-1.0)


def test_override_validation():
    assert tolerance_for("int8", {"atol_steps": 8})["atol_steps"] == 8.0
    with pytest.raises(ValueError, match="unknown tolerance key 'atl'"):
        tolerance_for("int8", {"atl": 1})
    with pytest.raises(ValueError, match="no default tolerance for dtype 'int4'"):
        tolerance_for("int4")


def test_int8_step_follows_the_inputs_range_for_reduced_outputs():
    # A global pool of inputs spanning [-1, 1] yields one element: its rounding is the inputs'.
    ref = np.array([0.5], np.float32)
    off_by_two_input_steps = ref + 2 * (2.0 / 255)
    assert not compare([off_by_two_input_steps], [ref], tolerance_for("int8")).passed
    assert compare([off_by_two_input_steps], [ref], tolerance_for("int8"), input_span=2.0).passed


def test_an_output_of_many_chunks_is_measured_as_a_whole():
    """Differences are measured a chunk at a time; the worst one, wherever it falls (the
    first element, a chunk's edge, the last), and every mismatch count as in one pass."""
    size = 5 * CHUNK + 123
    ref = np.linspace(-2.0, 2.0, size, dtype=np.float32).reshape(1, 1, 1, size)
    tolerance = tolerance_for("float16")
    for at in (0, CHUNK - 1, CHUNK, 3 * CHUNK + 7, size - 1):
        obs = ref.copy()
        obs.flat[[at, 2 * CHUNK + 1]] += np.float32(0.5)  # two elements far off
        obs.flat[4 * CHUNK] = 0.0  # a zero reference-side magnitude divides by tiny
        result = compare([obs], [ref], tolerance)
        error = np.abs(obs.astype(np.float64) - ref.astype(np.float64))
        bound = tolerance["atol"] + tolerance["rtol"] * np.abs(ref.astype(np.float64))
        relative = error / np.maximum(np.abs(ref.astype(np.float64)), np.finfo(np.float32).tiny)
        assert result.metrics["max_abs"] == error.max()
        assert result.metrics["max_rel"] == relative.max()
        assert result.metrics["mismatches"] == np.count_nonzero(error > bound)
        assert result.metrics["count"] == size and not result.passed
        obs64, ref64 = obs.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
        cosine = obs64 @ ref64 / (np.linalg.norm(obs64) * np.linalg.norm(ref64))
        assert result.metrics["cosine"] == pytest.approx(cosine, abs=1e-12)


def test_a_non_finite_value_in_any_chunk_fails_and_all_zero_outputs_match():
    ref = np.ones(3 * CHUNK, np.float32)
    tolerance = tolerance_for("float16")
    for value in (np.nan, np.inf, -np.inf):
        obs = ref.copy()
        obs[2 * CHUNK + 5] = value  # in the last chunk, after two that compare well
        assert compare([obs], [ref], tolerance).detail == "output 0: non-finite values observed"
    zeros = np.zeros(2 * CHUNK, np.float32)
    assert compare([zeros], [zeros], tolerance).metrics["cosine"] == 1.0
    assert compare([zeros], [zeros + 1], tolerance).metrics["cosine"] == 0.0


def test_the_worst_difference_of_two_references_is_a_nan_then_an_infinite_one():
    """A NaN on one side differs most (the first one), then an infinite difference (as the
    largest float), in an output and over outputs."""
    deciding = np.zeros((1, 8), np.float32)
    other = deciding.copy()
    other[0, 2], other[0, 4], other[0, 5], other[0, 6] = 1.0, np.inf, np.nan, np.nan
    tolerance = tolerance_for("float16")

    def worst(deciding: list[np.ndarray], other: list[np.ndarray]) -> dict:
        result = compare_references(deciding, {"a": deciding, "b": other}, "a", tolerance)
        return result.others["b"].worst

    assert worst([deciding], [other])["index"] == [0, 5]
    other[0, 5] = other[0, 6] = 3.0
    assert worst([deciding], [other])["index"] == [0, 4]
    zero = np.zeros(1, np.float32)
    infinite, nan = np.array([np.inf], np.float32), np.array([np.nan], np.float32)
    assert worst([zero, zero], [infinite, nan])["output"] == 1
    assert worst([zero, zero], [nan, infinite])["output"] == 0
    assert worst([zero, zero], [infinite, infinite])["output"] == 0
