"""Normalising operators: Softmax (along an axis) and BatchNormalization (inference form)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from onnx import helper

from harness.models.builder import (
    Graph,
    OperatorSpec,
    Parametrization,
    Params,
    along_axis,
    dim_setters,
    nchw,
    shape_reader,
    uniform,
)


def _build_softmax(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    axis = p.axis("axis")
    node = helper.make_node("Softmax", ["X"], ["Y"], axis=axis)
    return Graph([node], {"X": uniform(rng, shape, -4.0, 4.0)}, ["Y"])


def _read_softmax(p: Mapping[str, Any]) -> dict[str, Any]:
    # Read as the axis it denotes: the document lists 1 and 3 (and "3/-1" on RK2118).
    found = {**nchw(p["shape"]), "axis": p["axis"] % 4}
    # V2.2.0's RK3576 section bounds these products per axis, named as it writes them.
    found["height * width"] = found["height"] * found["width"]
    found["channel * height"] = found["channel"] * found["height"]
    return found


def _build_batchnorm(p: Params, rng: np.random.Generator) -> Graph:
    shape = p.shape("shape")
    epsilon = p.number("epsilon")
    if epsilon <= 0:
        raise p.error("epsilon", "must be > 0")
    channels = [shape[1]]
    stats = {
        "scale": uniform(rng, channels, 0.5, 2.0),
        "B": uniform(rng, channels, -1.0, 1.0),
        "mean": uniform(rng, channels, -1.0, 1.0),
        "var": uniform(rng, channels, 0.25, 2.0),  # away from zero: a bounded 1/sqrt(var)
    }
    node = helper.make_node("BatchNormalization", ["X", *stats], ["Y"], epsilon=epsilon)
    return Graph([node], {"X": uniform(rng, shape, -2.0, 2.0)}, ["Y"], stats)


SOFTMAX = OperatorSpec(
    {"shape": [1, 8, 4, 6], "axis": 1},
    _build_softmax,
    Parametrization(
        _read_softmax,
        dim_setters(),
        outside_values={"axis": (0, 2)},
        reduces=along_axis,
    ),
)

OPERATORS = {
    "Softmax": SOFTMAX,
    "BatchNormalization": OperatorSpec(
        {"shape": [1, 4, 6, 8], "epsilon": 1e-5},
        _build_batchnorm,
        Parametrization(shape_reader("epsilon"), dim_setters()),
    ),
}
