"""Pieces shared by the operator model builders: parameter checking, seeded data, assembly.

Every builder receives a :class:`Params` (defaults already merged in) and a seeded generator,
and returns the :class:`Graph` of its operator; :func:`assemble` turns that into ONNX bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from harness.diskcache import arrays_digest

# Opset 19, the newest the toolkit's load_onnx accepts (the vendor's page of the docs): the
# operators' current definitions, which the spec's reference implementation (onnx.reference)
# follows. IR 9 is the first IR version that carries opset 19.
OPSET = 19
IR_VERSION = 9


class ModelParamError(ValueError):
    """A parameter value no model can be built from (a negative size, an unknown mode...)."""

    def __init__(self, op: str, param: str, value: object, reason: str) -> None:
        self.op, self.param, self.value = op, param, value
        super().__init__(f"{op}: parameter {param!r} = {value!r}: {reason}")


@dataclass
class BuiltModel:
    """One operator's test model with its seeded host inputs (float32, in the model's order)."""

    op: str
    seed: int
    params: dict[str, Any]
    onnx_bytes: bytes
    inputs: list[np.ndarray]
    input_names: list[str]
    output_names: list[str]
    # What the backend is fed when it differs from ``inputs`` (model I/O suites: the data read
    # back from a zero-copy buffer, in the configured input type); None: ``inputs``.
    feeds: list[np.ndarray] | None = None
    # int8 calibration samples the model's source gives (a user's set, one array per input);
    # None: the case's inputs plus further seeded draws.
    calibration: list[list[np.ndarray]] | None = None
    # Outputs the model's source gives for these inputs (the ONNX backend node tests' data
    # sets): one more host reference beside onnx.reference and onnxruntime.
    expected: list[np.ndarray] | None = None
    # The vendor build settings the model's source gives (a user's own, ``Job.config``)
    build_config: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def inputs_digest(self) -> str:
        """``diskcache.arrays_digest`` of ``inputs``: what cache keys name them by, hashed once
        for the host references' key and the target's (``job_for`` hands it on)."""
        return arrays_digest(self.inputs)


@dataclass
class Graph:
    """What a builder produces: nodes, graph inputs with their data, constant initializers."""

    nodes: list[onnx.NodeProto]
    inputs: dict[str, np.ndarray]
    outputs: list[str]
    initializers: dict[str, np.ndarray] = field(default_factory=dict)
    feeds: list[np.ndarray] | None = None  # see BuiltModel.feeds
    # A whole model given by its source (a user's ONNX file, prepared and checked there):
    # ``assemble`` returns it as it is and ``nodes``/``initializers`` stay empty.
    model: onnx.ModelProto | None = None
    calibration: list[list[np.ndarray]] | None = None  # see BuiltModel.calibration
    expected: list[np.ndarray] | None = None  # see BuiltModel.expected
    build_config: dict[str, Any] = field(default_factory=dict)  # see BuiltModel.build_config


class Params:
    """An operator's parameters being resolved: each accessor checks and normalises one value.

    Normalised values are JSON-ready (ints, floats, strings, lists), so a results journal can
    store ``resolved()`` and a rebuild from it yields the same model.
    """

    def __init__(self, op: str, defaults: Mapping[str, Any], given: Mapping[str, Any]) -> None:
        for name in given:
            if name not in defaults:
                raise ModelParamError(op, name, given[name], f"unknown; known: {sorted(defaults)}")
        self.op = op
        self._raw = {**defaults, **given}
        self._resolved: dict[str, Any] = {}

    def error(self, name: str, reason: str) -> ModelParamError:
        return ModelParamError(self.op, name, self._raw[name], reason)

    def _keep(self, name: str, value: Any) -> Any:
        self._resolved[name] = value
        return value

    def integer(self, name: str, minimum: int | None = None) -> int:
        value = self._raw[name]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise self.error(name, "must be an integer")
        if minimum is not None and value < minimum:
            raise self.error(name, f"must be >= {minimum}")
        return self._keep(name, int(value))

    def integers(self, name: str, length: int | None, minimum: int) -> list[int]:
        """A list of integers, of exactly ``length`` entries or (``None``) of at least one."""
        value = self._raw[name]
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise self.error(name, "must be a list of integers")
        if length is None and not value:
            raise self.error(name, "must have at least one entry")
        if length is not None and len(value) != length:
            raise self.error(name, f"must have {length} entries")
        for item in value:
            if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
                raise self.error(name, "entries must be integers")
            if item < minimum:
                raise self.error(name, f"entries must be >= {minimum}")
        return self._keep(name, [int(v) for v in value])

    def shape(self, name: str, rank: int = 4) -> list[int]:
        """A tensor shape: ``rank`` sizes, each at least 1."""
        return self.integers(name, rank, minimum=1)

    def axis(self, name: str, rank: int = 4) -> int:
        """An ONNX axis of a rank-``rank`` tensor: negative values count from the end."""
        value = self.integer(name)
        if not -rank <= value < rank:
            raise self.error(name, f"must be in [{-rank}, {rank - 1}] for a {rank}-D input")
        return value

    def number(self, name: str) -> float:
        value = self._raw[name]
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise self.error(name, "must be a number")
        if not math.isfinite(value):
            raise self.error(name, "must be finite")
        return self._keep(name, float(value))

    def choice(self, name: str, choices: Sequence[Any]) -> Any:
        value = self._raw[name]
        if isinstance(value, bool) or value not in choices:
            raise self.error(name, f"must be one of {list(choices)}")
        return self._keep(name, value)

    def set(self, name: str, value: Any) -> None:
        """Records a value the builder derived (e.g. indices left to their default)."""
        self._keep(name, value)

    def raw(self, name: str) -> Any:
        return self._raw[name]

    def resolved(self) -> dict[str, Any]:
        missing = set(self._raw) - set(self._resolved)
        if missing:
            raise RuntimeError(f"{self.op}: builder left parameters unchecked: {sorted(missing)}")
        return {name: self._resolved[name] for name in self._raw}


Builder = Callable[[Params, np.random.Generator], Graph]

# -- what case generation may ask of an operator's model, in the catalogue's terms -------------

# The documented limits talk about "subjects": dims (height), attributes (kernel_h), an
# exponent's values, a broadcasting form. A Reader finds them in a model's full parameters; a
# Setter changes one subject in place (raising KeyError naming what the model lacks).
Reader = Callable[[Mapping[str, Any]], dict[str, Any]]
Setter = Callable[[dict[str, Any], Any], None]
DimSetter = Callable[[dict[str, Any], int, int], None]

NCHW = ("batch", "channel", "height", "width")


def nchw(shape: Sequence[int]) -> dict[str, int]:
    """The dimension subjects of a 4-D tensor shape."""
    return dict(zip(NCHW, shape, strict=True))


def along_axis(found: Mapping[str, Any]) -> tuple[str, ...]:
    """The dimension subject an ``axis`` subject (read as 0-3) names: what an operator along
    one axis reduces over (``Parametrization.reduces``)."""
    return (NCHW[found["axis"]],)


def set_shape_dim(p: dict[str, Any], axis: int, value: int) -> None:
    p["shape"][axis] = value


def dim_setters(set_dim: DimSetter = set_shape_dim) -> dict[str, Setter]:
    """A setter per dimension subject; ``set_dim`` says which shapes an axis change touches."""

    def on(axis: int) -> Setter:
        return lambda p, value: set_dim(p, axis, value)

    return {name: on(axis) for axis, name in enumerate(NCHW)}


def shape_reader(*attrs: str) -> Reader:
    """Subjects of a model of one input ``shape``: its dims plus the attributes ``attrs``."""
    return lambda p: {**nchw(p["shape"]), **{name: p[name] for name in attrs}}


def input_and_output_elements(found: Mapping[str, Any]) -> int:
    """The size of a model whose input and output both have the NCHW subjects' shape."""
    return 2 * math.prod(found[d] for d in NCHW)


def broadcast_form(source: Sequence[int], out: Sequence[int]) -> dict[str, Any]:
    """The vendor's broadcasting form ``[b,c,1,w]`` mapping ``source`` to ``out``, and the
    output sizes by the form's letters (the subjects of its limits)."""
    letters = [
        "1" if s == 1 and o != 1 else letter
        for s, o, letter in zip(source, out, "bchw", strict=True)
    ]
    return {"form": "[" + ",".join(letters) + "]", **dict(zip("bchw", out, strict=True))}


@dataclass(frozen=True)
class Broadcast:
    """How a model expresses a broadcasting form: which input is broadcast (its catalogue
    role), and the parameters for a (source shape, output shape) pair."""

    operand: str
    params: Callable[[list[int], list[int]], dict[str, Any]]


@dataclass(frozen=True)
class Parametrization:
    """An operator model's side of the case generator: documented subjects to parameters and
    back, and which documented limits the model can express at all."""

    read: Reader
    # Subjects set other than by a scalar parameter of the same name (which needs no entry).
    setters: Mapping[str, Setter] = field(default_factory=dict)
    # Float32 elements of weights and activations, from the subjects: the size budget's measure.
    size: Callable[[Mapping[str, Any]], int] = input_and_output_elements
    # Names the toolkit's layer table may use for the operator besides its own (fused, lowered).
    layer_aliases: tuple[str, ...] = ()
    # Per subject, values just outside its documented value set that ONNX can still express.
    outside_values: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    # Attributes the builder never sets, with the ONNX default the model therefore has: read as
    # subjects, never varied.
    fixed: Mapping[str, Any] = field(default_factory=dict)
    # Type variables of a dtype limit (T2) the model can choose, and the subject choosing it.
    dtype_subjects: Mapping[str, str] = field(default_factory=dict)
    broadcast: Broadcast | None = None
    # Why limits of a kind (layout, rank...) cannot be expressed by this model.
    unprobed: Mapping[str, str] = field(default_factory=dict)
    # Dimensions a case probing another subject at a large size may shrink (Transpose's n1 of
    # 8192 needs no 16*16 planes): each is halved, down to 2, while the case's documented
    # status and the subjects its limit names stay as they are.
    shrinkable: tuple[str, ...] = ()
    # What a case must do to exercise its rule (``harness.cases.validity``): the subject
    # holding a permutation of the named dimension subjects (Transpose's perm of n1..w1); the
    # dimension subjects the operator reduces or normalises over, from the subjects (Softmax's
    # axis); parameters that are modes, whose values off the typical one must change the
    # output (Resize's coordinate_transformation_mode).
    permutes: tuple[str, tuple[str, ...]] | None = None
    reduces: Callable[[Mapping[str, Any]], tuple[str, ...]] | None = None
    modes: tuple[str, ...] = ()
    # Forms of the typical model no limit varies that run the documented layer itself where
    # the typical one may not (Gather's indices as a runtime input: constant indices on the
    # channel axis compile as a Conv): case name -> (parameter, value).
    forms: Mapping[str, tuple[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class OperatorSpec:
    """An operator's default parameters, the builder of its model and (operators of the
    catalogue) how its documented limits are probed."""

    defaults: Mapping[str, Any]
    build: Builder
    probing: Parametrization | None = None


def fp16_exact(values: np.ndarray) -> np.ndarray:
    """float32 values that float16 holds exactly.

    The NPU runs fp16; data it can hold exactly keeps input rounding out of the comparison.
    """
    return np.asarray(values, dtype=np.float16).astype(np.float32)


def uniform(rng: np.random.Generator, shape: Sequence[int], lo: float, hi: float) -> np.ndarray:
    return fp16_exact(rng.uniform(lo, hi, size=tuple(shape)))


def away_from_zero(
    rng: np.random.Generator, shape: Sequence[int], lo: float, hi: float
) -> np.ndarray:
    """Magnitudes in [lo, hi) with random signs (divisors, bases of negative powers)."""
    signs = rng.choice(np.array([-1.0, 1.0]), size=tuple(shape))
    return fp16_exact(signs * rng.uniform(lo, hi, size=tuple(shape)))


def distinct(rng: np.random.Generator, shapes: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """Tensors whose values are pairwise distinct across all of them, in [-1, 1).

    Distinct values make a wrong selection (max of the wrong element) visible. The values are
    evenly spaced, so they stay distinct in fp16 for fewer than 4096 elements in all; beyond
    that fp16 rounding ties neighbours, which cannot change a max value.
    """
    sizes = [math.prod(shape) for shape in shapes]
    total = sum(sizes)
    flat = fp16_exact((2 * rng.permutation(total) + 1 - total) / total)
    ends = np.cumsum(sizes)
    return [
        part.reshape(tuple(shape))
        for part, shape in zip(np.split(flat, ends[:-1]), shapes, strict=True)
    ]


def assemble(op: str, graph: Graph) -> onnx.ModelProto:
    """The checked ONNX model of ``graph``; output shapes come from ONNX shape inference."""
    if graph.model is not None:
        return graph.model
    inputs = [
        helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(data.dtype), list(data.shape)
        )
        for name, data in graph.inputs.items()
    ]
    outputs = [
        helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None) for name in graph.outputs
    ]
    initializers = [
        numpy_helper.from_array(data, name) for name, data in graph.initializers.items()
    ]
    onnx_graph = helper.make_graph(graph.nodes, f"npu_hil_{op}", inputs, outputs, initializers)
    model = helper.make_model(
        onnx_graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="npu-hil"
    )
    model.ir_version = IR_VERSION
    model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    return model
