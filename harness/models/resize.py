"""Resize: upscaling of height and width by constant scales, nearest or linear; integral, as
the vendor documents them (2-8 times), or not (1.5), to probe that."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from onnx import helper

from harness.models.builder import (
    NCHW,
    Graph,
    OperatorSpec,
    Parametrization,
    Params,
    dim_setters,
    nchw,
    uniform,
)

MODES = ("nearest", "linear", "cubic")
NON_INTEGRAL = (1.5, 2.5)  # scales off the document's integers, below its 2 and within 2-8
COORDINATES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")
# Attributes the document says cannot be set: the model never sets them, read as not set.
NOT_SET = (
    "antialias",
    "axes",
    "cubic_coeff_a",
    "exclude_outside",
    "extrapolation_value",
    "keep_aspect_ratio_policy",
    "nearest_mode",
)


def _build(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    scales = _scales(p)
    mode = p.choice("mode", MODES)
    coordinates = p.choice("coordinate_transformation_mode", COORDINATES)
    node = helper.make_node(
        "Resize",
        ["X", "", "scales"],
        ["Y"],
        mode=mode,
        coordinate_transformation_mode=coordinates,
    )
    consts = {"scales": np.array(scales, dtype=np.float32)}
    return Graph([node], {"X": uniform(rng, shape, -2.0, 2.0)}, ["Y"], consts)


def _scales(p: Params) -> list[float]:
    """Four scales, each a finite number of at least 1 (upscaling; integral or not)."""
    value = p.raw("scales")
    if not (
        isinstance(value, list)
        and len(value) == 4
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        and all(math.isfinite(v) and v >= 1 for v in value)
    ):
        raise p.error("scales", "must be 4 finite numbers, each at least 1")
    p.set("scales", value)
    return [float(v) for v in value]


def _read(p: Mapping[str, Any]) -> dict[str, Any]:
    found = nchw(p["shape"])
    found |= {"scale_h": p["scales"][2], "scale_w": p["scales"][3]}
    found["mode"] = p["mode"]
    found["coordinate_transformation_mode"] = p["coordinate_transformation_mode"]
    return found


TYPICAL_COORDINATES = "half_pixel"
# Nearest at scale 2 picks the pixels half_pixel does under asymmetric and align_corners too
# (whatever the size); at 3 each picks its own.
DISTINCT_SCALE = 3


def _set_coordinates(p: dict[str, Any], value: Any) -> None:
    """A coordinate transformation off the typical one, at the scale where its output differs
    (pytorch_half_pixel is half_pixel at every integral scale: ``validity`` refuses it)."""
    p["coordinate_transformation_mode"] = value
    if value != TYPICAL_COORDINATES:
        p["scales"][2:] = [DISTINCT_SCALE, DISTINCT_SCALE]


def _set_scale(axis: int) -> Any:
    def set_scale(p: dict[str, Any], value: Any) -> None:
        p["scales"][axis] = value

    return set_scale


OPERATORS = {
    "Resize": OperatorSpec(
        {
            "shape": [1, 4, 3, 4],
            "scales": [1, 1, 2, 2],
            "mode": "nearest",
            "coordinate_transformation_mode": TYPICAL_COORDINATES,
        },
        _build,
        Parametrization(
            read=_read,
            setters={
                **dim_setters(),
                "scale_h": _set_scale(2),
                "scale_w": _set_scale(3),
                "coordinate_transformation_mode": _set_coordinates,
            },
            size=lambda s: math.prod(s[d] for d in NCHW) * (1 + s["scale_h"] * s["scale_w"]),
            outside_values={
                "mode": ("cubic",),
                "coordinate_transformation_mode": ("asymmetric",),
                "scale_h": NON_INTEGRAL,
                "scale_w": NON_INTEGRAL,
            },
            fixed=dict.fromkeys(NOT_SET, False),
            modes=("mode", "coordinate_transformation_mode"),
            unprobed={"free-text": "the 2-8 times integral scale rule is words, not a limit"},
        ),
    )
}
