"""Comparison of observed outputs with the host reference.

Defaults (overridable per operator in the catalogue's ``tolerance`` mapping):

- float16: the NPU computes in fp16, whose unit roundoff is 2**-11 ~ 4.9e-4; a tiny operator
  rounds its inputs, its arithmetic and its output, so ``rtol = 1e-2`` and ``atol = 1e-2`` leave
  room for a few roundings plus accumulation in recurrent cells, while a wrong element (a
  transposed axis, garbage padding, a wrong exponent) is off by far more.
- int8: error is counted in quantization steps, ``span / 255``, where span is the wider of the
  output's range and the inputs' range (``input_span``): inputs, any intermediate and the
  output are each rounded to half a step of their own range, and a pooled or reduced output
  (a single element, say) carries its inputs' rounding; so ``atol_steps = 4``.

An element mismatches when ``|obs - ref| > atol + rtol * |ref|``; a comparison passes when no
element mismatches and the cosine similarity is at least ``min_cosine``.

With more than one host reference (``compare_references``), the observed outputs are compared
with each, and each other reference with the one the comparison is decided against, under the
same tolerance: references that differ beyond it leave the result undecided.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

DEFAULT_TOLERANCES: dict[str, dict[str, float]] = {
    "float16": {"atol": 1e-2, "rtol": 1e-2, "atol_steps": 0.0, "min_cosine": 0.999},
    "int8": {"atol": 0.0, "rtol": 0.0, "atol_steps": 4.0, "min_cosine": 0.98},
}


@dataclass(frozen=True)
class Comparison:
    passed: bool
    metrics: dict[str, float]
    tolerance: dict[str, float]
    detail: str
    reference: str = ""  # the host reference compared against (``compare_references``)
    others: dict[str, CrossCheck] = field(default_factory=dict)  # the other host references

    @property
    def disagreeing(self) -> list[str]:
        """The other references whose outputs differ from ``reference`` beyond tolerance."""
        return [name for name, other in self.others.items() if not other.agreement.passed]


@dataclass(frozen=True)
class CrossCheck:
    """Another host reference beside the one a comparison is decided against."""

    observed: Comparison  # the observed outputs against this reference
    agreement: Comparison  # this reference's outputs against the deciding one
    # Where the two references differ most: output and element index, each one's value and
    # the observed one.
    worst: dict[str, Any]


def tolerance_for(dtype: str, override: Mapping[str, float] | None = None) -> dict[str, float]:
    """The default tolerance for ``dtype`` with the catalogue's per-operator override applied."""
    if dtype not in DEFAULT_TOLERANCES:
        raise ValueError(f"no default tolerance for dtype {dtype!r}")
    merged = dict(DEFAULT_TOLERANCES[dtype])
    for key, value in (override or {}).items():
        if key not in merged:
            raise ValueError(f"unknown tolerance key {key!r} (known: {sorted(merged)})")
        merged[key] = float(value)
    return merged


def compare(
    observed: Sequence[np.ndarray],
    reference: Sequence[np.ndarray],
    tolerance: Mapping[str, float],
    input_span: float = 0.0,
) -> Comparison:
    """Compare every output; metrics are the worst over all outputs.

    ``input_span`` is the range (max - min) of the model's inputs, for ``atol_steps``.
    """
    tol = dict(tolerance)
    if len(observed) != len(reference):
        return Comparison(
            False, {}, tol, f"{len(observed)} outputs observed, {len(reference)} expected"
        )
    worst = {"max_abs": 0.0, "max_rel": 0.0, "cosine": 1.0, "mismatches": 0.0, "count": 0.0}
    for index, (obs, ref) in enumerate(zip(observed, reference, strict=True)):
        obs64 = np.asarray(obs, dtype=np.float64)
        ref64 = np.asarray(ref, dtype=np.float64)
        if obs64.size != ref64.size:
            return Comparison(
                False, {}, tol, f"output {index}: shape {obs64.shape}, expected {ref64.shape}"
            )
        span = max(float(ref64.max() - ref64.min()) if ref64.size else 0.0, input_span)
        atol = tol["atol"] + tol["atol_steps"] * span / 255.0
        errors = _errors(obs64.reshape(-1), ref64.reshape(-1), atol, tol["rtol"])
        if errors is None:
            return Comparison(False, {}, tol, f"output {index}: non-finite values observed")
        worst["mismatches"] += errors.mismatches
        worst["max_abs"] = max(worst["max_abs"], errors.max_abs)
        worst["max_rel"] = max(worst["max_rel"], errors.max_rel)
        worst["cosine"] = min(worst["cosine"], errors.cosine(obs64, ref64))
        worst["count"] += float(ref64.size)
    passed = worst["mismatches"] == 0 and worst["cosine"] >= tol["min_cosine"]
    detail = (
        "outputs match the reference"
        if passed
        else f"{int(worst['mismatches'])} of {int(worst['count'])} elements outside tolerance, "
        f"max abs error {worst['max_abs']:.4g}, cosine {worst['cosine']:.6f}"
    )
    return Comparison(passed, worst, tol, detail)


class Compare(Protocol):
    """``compare_references``, or what stands in for it (``ComparisonCache.compare_references``)."""

    def __call__(
        self,
        observed: Sequence[np.ndarray],
        references: Mapping[str, Sequence[np.ndarray]],
        used: str,
        tolerance: Mapping[str, float],
        input_span: float = 0.0,
        digests: Mapping[str, str] | None = None,
    ) -> Comparison: ...


def compare_references(
    observed: Sequence[np.ndarray],
    references: Mapping[str, Sequence[np.ndarray]],
    used: str,
    tolerance: Mapping[str, float],
    input_span: float = 0.0,
    digests: Mapping[str, str] | None = None,
) -> Comparison:
    """``observed`` against ``references[used]``, which decides; the other references cross-
    checked against it and against ``observed``. Every array is made float64 once here, not
    once per comparison it takes part in.

    ``digests`` (``diskcache.arrays_digest`` of ``observed`` under "observed" and of
    references by name, where a cache computed them) are for a cache standing in for this
    function (``Compare``), which keys by them; comparing needs none."""
    observed64 = _float64(observed)
    references64 = {name: _float64(outputs) for name, outputs in references.items()}
    deciding = references64[used]
    decided = compare(observed64, deciding, tolerance, input_span)
    others = {
        name: CrossCheck(
            compare(observed64, outputs, tolerance, input_span),
            compare(outputs, deciding, tolerance, input_span),
            _worst_difference(deciding, outputs, observed64, (used, name)),
        )
        for name, outputs in references64.items()
        if name != used
    }
    return replace(decided, reference=used, others=others)


# Elements of an output compared at a time: the buffers of a chunk stay in a core's L2 cache,
# where passes over whole outputs of millions of elements went to memory each time.
CHUNK = 1 << 14


@dataclass(frozen=True)
class _Errors:
    """What one pass over an observed output and its reference measured."""

    mismatches: float  # elements differing by more than ``atol + rtol * |ref|``
    max_abs: float
    max_rel: float
    products: tuple[float, float, float]  # sums of obs * ref, obs * obs and ref * ref

    def cosine(self, obs: np.ndarray, ref: np.ndarray) -> float:
        """The cosine similarity of the two outputs the sums were taken over."""
        both, obs_squares, ref_squares = self.products
        norm = float(np.sqrt(obs_squares) * np.sqrt(ref_squares))
        if norm == 0.0:
            # Both all-zero is a perfect match; one all-zero against non-zero is not.
            return 1.0 if not obs.any() and not ref.any() else 0.0
        return both / norm


def _errors(obs: np.ndarray, ref: np.ndarray, atol: float, rtol: float) -> _Errors | None:
    """Over flat float64 ``obs`` and ``ref``, in one pass a chunk at a time: the differences
    and the sums of products a cosine takes; None when ``obs`` holds a non-finite value."""
    size = min(CHUNK, ref.size)
    error, magnitude, bound = (np.empty(size) for _ in range(3))
    finite = np.empty(size, dtype=bool)
    mismatches, max_abs, max_rel = 0, 0.0, 0.0
    both = obs_squares = ref_squares = 0.0
    tiny = np.finfo(np.float32).tiny
    for start in range(0, ref.size, CHUNK):
        count = min(CHUNK, ref.size - start)
        o, r = obs[start : start + count], ref[start : start + count]
        e, m, b = error[:count], magnitude[:count], bound[:count]
        if not np.isfinite(o, out=finite[:count]).all():
            return None
        # Element-wise sums rather than BLAS dot: BLAS threads cost milliseconds per call on
        # a busy two-core host, more than the arithmetic of these small outputs.
        both += float(np.multiply(o, r, out=e).sum())
        obs_squares += float(np.multiply(o, o, out=e).sum())
        ref_squares += float(np.multiply(r, r, out=e).sum())
        np.subtract(o, r, out=e)
        np.abs(e, out=e)
        np.abs(r, out=m)
        np.multiply(m, rtol, out=b)
        b += atol  # atol + rtol * |ref|
        mismatches += int(np.count_nonzero(e > b))
        max_abs = max(max_abs, float(e.max()))
        np.maximum(m, tiny, out=m)
        max_rel = max(max_rel, float(np.divide(e, m, out=b).max()))
    return _Errors(float(mismatches), max_abs, max_rel, (both, obs_squares, ref_squares))


def _float64(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(array, dtype=np.float64) for array in arrays]


def _worst_difference(
    first: Sequence[np.ndarray],
    second: Sequence[np.ndarray],
    observed: Sequence[np.ndarray],
    names: tuple[str, str],
) -> dict[str, Any]:
    """The element where ``first`` and ``second`` (named ``names``) differ most, with the
    observed value there when an observed output of that size exists."""
    worst: dict[str, Any] = {}
    largest = -1.0
    for index, (a, b) in enumerate(zip(first, second, strict=True)):
        a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if a64.shape != b64.shape or not a64.size:
            continue
        error = np.abs(a64 - b64)
        # argmax finds the first NaN where there is one: a NaN on one side differs most,
        # more than an infinite difference (counted as the largest float)
        at = np.unravel_index(int(np.argmax(error)), a64.shape)
        difference = float(np.nan_to_num(error[at], nan=np.inf))
        if difference <= largest:
            continue
        largest = difference
        worst = {"output": index, "index": [int(i) for i in at]}
        worst |= {names[0]: float(a64[at]), names[1]: float(b64[at])}
        if index < len(observed) and np.asarray(observed[index]).size == a64.size:
            worst["observed"] = float(np.asarray(observed[index]).reshape(a64.shape)[at])
    return worst
