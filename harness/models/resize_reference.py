"""onnx.reference's Resize, vectorised: the kernel the host reference runs for the Resize model.

onnx.reference (1.18) resizes in pure Python, one output element at a time through nested
one-axis interpolations: seconds for a 3×4 image scaled 9 times, most of a cold run of the
Resize cases. This kernel computes the same thing per axis with numpy: every output position's
source coordinate, its neighbours (edge-padded, preferring the lower index, as onnx.reference
picks them) and their weights, the last axis first and then the one before, as onnx.reference
nests them. The tests hold it to onnx.reference and onnxruntime on every mode, coordinate
transformation and scale the model builds. Anything else (sizes, roi, axes, antialias,
exclude_outside, other nearest modes, other ranks, fractional or shrinking scales) is left to
onnx.reference's own kernel, with an empty roi passed as none.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx.reference.ops.op_resize import Resize as _SpecResize

KERNEL_VERSION = "2"  # part of the reference cache's key: bump when the kernel changes
_COORDINATES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")
_OFFSETS = {"nearest": (0, 1), "linear": (0, 1), "cubic": (-1, 0, 1, 2)}


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def _source(positions: np.ndarray, size: int, scale: float, coordinates: str) -> np.ndarray:
    """Each output position's coordinate in the input, as onnx.reference computes it."""
    width = scale * size
    if coordinates == "align_corners":
        return positions * 0.0 if width == 1 else positions * (size - 1) / (width - 1)
    if coordinates == "asymmetric":
        return positions / scale
    if coordinates == "pytorch_half_pixel" and width == 1:
        return positions * 0.0 - 0.5
    return (positions + 0.5) / scale - 0.5


def _coefficients(ratio: np.ndarray, mode: str, a: float) -> list[np.ndarray]:
    """The neighbours' weights; ``ratio`` in (0, 1] is the distance from the lower one."""
    if mode == "nearest":  # round_prefer_floor
        return [(ratio <= 0.5).astype(np.float64), (ratio > 0.5).astype(np.float64)]
    if mode == "linear":
        return [1 - ratio, ratio]
    r, s = ratio, 1 - ratio
    return [
        ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
        ((a + 2) * r - (a + 3)) * r * r + 1,
        ((a + 2) * s - (a + 3)) * s * s + 1,
        ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a,
    ]


def _along(
    x: np.ndarray, axis: int, scale: float, mode: str, coordinates: str, a: float
) -> np.ndarray:
    """``x`` interpolated along ``axis``: the weighted neighbours summed in order."""
    size = x.shape[axis]
    source = _source(np.arange(int(size * scale), dtype=np.float64), size, scale, coordinates)
    lower = np.ceil(source) - 1  # an integral source counts as ratio 1 from the one below
    shape = [1] * x.ndim
    shape[axis] = -1
    total: np.ndarray | None = None
    for offset, weight in zip(_OFFSETS[mode], _coefficients(source - lower, mode, a), strict=True):
        index = np.clip(lower + offset, 0, size - 1).astype(np.int64)
        term = np.take(x, index, axis=axis) * weight.reshape(shape)
        total = term if total is None else total + term
    assert total is not None
    return total


class Resize(_SpecResize):
    def _run(
        self,
        X: np.ndarray,
        roi: Any = None,
        scales: Any = None,
        sizes: Any = None,
        antialias: Any = None,
        axes: Any = None,
        coordinate_transformation_mode: Any = None,
        cubic_coeff_a: Any = None,
        exclude_outside: Any = None,
        extrapolation_value: Any = None,
        keep_aspect_ratio_policy: Any = None,
        mode: Any = None,
        nearest_mode: Any = None,
    ) -> tuple[np.ndarray, ...]:
        mode, coordinates = _text(mode), _text(coordinate_transformation_mode)
        factors = [] if scales is None else [float(s) for s in np.asarray(scales).reshape(-1)]
        plain = (
            X.ndim == 4
            and (roi is None or np.asarray(roi).size == 0)
            and (sizes is None or np.asarray(sizes).size == 0)
            and len(factors) == 4
            and factors[:2] == [1.0, 1.0]
            and all(f >= 1 and f.is_integer() for f in factors[2:])
            and not antialias
            and axes is None
            and not exclude_outside
            and mode in _OFFSETS
            and _text(nearest_mode) in (None, "round_prefer_floor")
            and coordinates in _COORDINATES
        )
        if not plain:
            # An empty roi is no roi (PyTorch writes one before the scales): onnx.reference
            # 1.18 indexes it all the same and fails.
            given_roi = None if roi is not None and np.asarray(roi).size == 0 else roi
            return super()._run(
                X,
                given_roi,
                scales=scales,
                sizes=sizes,
                antialias=antialias,
                axes=axes,
                coordinate_transformation_mode=coordinate_transformation_mode,
                cubic_coeff_a=cubic_coeff_a,
                exclude_outside=exclude_outside,
                extrapolation_value=extrapolation_value,
                keep_aspect_ratio_policy=keep_aspect_ratio_policy,
                mode=mode,
                nearest_mode=nearest_mode,
            )
        a = -0.75 if cubic_coeff_a is None else float(cubic_coeff_a)
        data = X.astype(np.float64)
        for axis in (3, 2):
            data = _along(data, axis, factors[axis], mode, coordinates, a)
        return (data.astype(X.dtype),)
