"""Host references: the operator model run in fp32 on the CPU by registered implementations.

``HOST_REFERENCES`` is the registry: each ``HostReference`` names itself, runs a model, says
what it can compute (the default-domain operators and opsets it follows, and ``declines``: why
it is not run on a model it would otherwise take, a known limit), its cost on a model against
its budget, its rank in the deciding rule and its folder in a case folder. Two are registered.
``onnx.reference`` (``ReferenceEvaluator``, ``SPEC``) is the ONNX specification's own reference
implementation, maintained with the operator definitions: it follows the model's opset as the
spec defines it, so it decides a comparison where it runs. onnxruntime (``ORT``) is the runtime
most users check a model with; it decides where the spec's cannot run and cross-checks
elsewhere (its outputs in ``reference-ort/``). Where two disagree, what the spec asks is in
question (an opset-13 AveragePool with ceil_mode, say, where onnxruntime divides a window
clipped to the padded input by the full kernel size).

Any may be unable to run a model: onnxruntime has no CPU kernel for Pow with an int8
exponent; onnx.reference (1.18) cannot follow every attribute, and its convolutions are too slow
for the widest model-I/O probes (``spec_unavailable``); and a reference known wrong for one of
the model's operators at its opset is not run on it (``known_wrong``: onnx.reference's
BatchNormalization up to opset 13). The comparison then rests on those that can: of the
references that ran, the lowest ``decides`` rank decides (``References.used``). Outputs a
model's source ships with it (the ONNX backend node tests' ``output_*.pb``, ``TEST_DATA``) are a
further cross-check, never deciding.

onnx.reference runs with vectorised MaxPool, AveragePool, Resize, Conv and ConvTranspose
kernels (``harness.models.pooling_reference``, ``resize_reference``, ``convolution_reference``):
its own pool in pure Python (tens of milliseconds per small MaxPool, seconds for a wide one)
and misreads a one-sided MaxPool pad, its own Resize takes seconds for a small image scaled 9
times, its own Conv tens of milliseconds for a 16383-wide one, and its own ConvTranspose
seconds (and fails on groups).

All are recomputed from nothing but the model bytes and the inputs, so ``ReferenceCache``
keeps them on disk, keyed by model, inputs and what each registered reference depends on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper
from onnx.reference import ReferenceEvaluator

from harness.diskcache import CacheFolder, DiskCache, arrays_digest, content_key
from harness.models import BuiltModel, convolution_reference, resize_reference
from harness.models.known_wrong import DIGEST as WRONG_REFERENCES
from harness.models.known_wrong import default_opset, op_types, wrong_for
from harness.models.pooling_reference import KERNELS_VERSION, POOLING_KERNELS

SPEC = "onnx.reference"
ORT = "onnxruntime"
TEST_DATA = "test data"  # outputs the model's source gives (BuiltModel.expected)
_ERROR_ONLY = 3  # onnxruntime severity: 0 verbose ... 3 error
_RECURRENT = ("RNN", "GRU", "LSTM")
# onnx.reference convolves in Python loops over output positions with the dilated kernel laid
# out: 1e8 multiply-adds take about 5 s here, a 6.5e8 one (k3 d60) more than 4 GB.
SPEC_CONV_BUDGET = 10**8
# onnx.reference's, vectorised
_KERNELS = [
    *POOLING_KERNELS,
    resize_reference.Resize,
    convolution_reference.Conv,
    convolution_reference.ConvTranspose,
]


class NoReferenceError(RuntimeError):
    """No host reference runs the model: nothing to judge the NPU against."""


class CannotRun(Exception):
    """A reference's own reason it cannot run a model (the text says it)."""


Feeds = dict[str, np.ndarray]  # model input name -> its array


def _any_model(model: onnx.ModelProto) -> str | None:
    return None


@dataclass(frozen=True)
class HostReference:
    """One host reference: how it runs a model on the CPU and what it can compute."""

    name: str  # as ``References.outputs``, the records and the reports name it
    version: str  # its library's version, in the reasons it is not run
    # the model's outputs on the feeds, in ``output_names`` order; CannotRun (or anything
    # else it raises) when it cannot run the model
    run: Callable[[BuiltModel, Feeds], list[np.ndarray]]
    depends: Mapping[str, str]  # what its outputs depend on (versions): the cache key's part
    # its rank in the deciding rule (the lowest of those that ran decides); None: it
    # cross-checks only
    decides: int | None
    folder: str | None  # its outputs' folder in a case folder besides reference/; None: none
    ops: frozenset[str] | None = None  # the default-domain operators it computes; None: all
    opsets: tuple[int, int] | None = None  # the default-domain opsets it follows; None: all
    # why it is not run on a model its operators and opsets allow: a known gap
    declines: Callable[[onnx.ModelProto], str | None] = _any_model
    # its cost on a model: the work of its dearest layer and that layer's type (None: cheap
    # for any model), and the most work it is run for
    cost: Callable[[onnx.ModelProto], tuple[int, str]] | None = None
    budget: int | None = None

    def __post_init__(self) -> None:
        # a repro bundle takes a case folder's reference* folders (``harness.report.bundle``)
        if self.folder is not None and not self.folder.startswith("reference-"):
            raise ValueError(
                f"host reference {self.name}: its folder {self.folder!r} is not named "
                "reference-<name>, so no repro bundle would take it"
            )

    def unavailable(self, model: onnx.ModelProto) -> str | None:
        """Why it is not run on ``model`` (shapes inferred), or None: known wrong for one of
        its operators at its opset (``known_wrong``), an operator or opset it does not
        follow, a cost past its budget, or what it ``declines``."""
        wrong = wrong_for(model, self.name)
        if wrong:
            return f"{self.name} {self.version} {wrong}"
        opset = default_opset(model)
        if self.opsets is not None and not self.opsets[0] <= opset <= self.opsets[1]:
            first, last = self.opsets
            return f"{self.name} follows opsets {first} to {last}, not the model's {opset}"
        if self.ops is not None:
            missing = sorted(set(op_types(model.graph)) - self.ops)
            if missing:
                return f"{self.name} computes no {', '.join(missing)}"
        if self.cost is not None and self.budget is not None:
            work, layer = self.cost(model)
            if work > self.budget:
                return f"{self.name} skipped: {layer} of {work:.3g} multiply-adds"
        return self.declines(model)


def _none_runs(unavailable: Mapping[str, str]) -> NoReferenceError:
    reasons = "; ".join(f"{name}: {reason}" for name, reason in unavailable.items())
    return NoReferenceError(f"no host reference runs the model: {reasons}")


@dataclass(frozen=True)
class References:
    """A model's outputs by every host reference that could run it."""

    outputs: dict[str, list[np.ndarray]]  # reference -> outputs in ``output_names`` order
    unavailable: dict[str, str]  # reference -> why it could not run the model
    # reference -> ``diskcache.arrays_digest`` of its outputs, where ``ReferenceCache`` has it
    # (a comparison is keyed by it instead of hashing the outputs again)
    digests: dict[str, str] = field(default_factory=dict)

    @property
    def used(self) -> str:
        """The reference a comparison is decided against: of the registered references that
        ran, the one of the lowest ``decides`` rank (the spec's own where it runs)."""
        used = _deciding(self.outputs)
        if used is None:
            raise _none_runs(self.unavailable)
        return used


def _deciding(outputs: Mapping[str, object]) -> str | None:
    """Of the references in ``outputs``, the registered one of the lowest ``decides`` rank."""
    ranked = [
        (reference.decides, name)
        for name, reference in HOST_REFERENCES.items()
        if name in outputs and reference.decides is not None
    ]
    return min(ranked)[1] if ranked else None


def spec_unavailable(model: onnx.ModelProto) -> str | None:
    """Why onnx.reference is not run on ``model`` (shapes inferred), if it is not."""
    return HOST_REFERENCES[SPEC].unavailable(model)


def _spec_declines(model: onnx.ModelProto) -> str | None:
    """Why onnx.reference is not run on ``model`` besides a known wrong kernel: its
    RNN/GRU/LSTM kernels ignore ``direction``: "reverse" runs forward, "bidirectional" raises
    (onnx/onnx#7935 adds both); its LSTM computes no final cell state ``Y_c``."""
    for node in model.graph.node:
        if node.op_type in _RECURRENT:
            attrs = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
            direction = attrs.get("direction", b"forward").decode()
            if direction != "forward":
                return f"{SPEC} {onnx.__version__} ignores {node.op_type} direction={direction}"
            if node.op_type == "LSTM" and len(node.output) > 2 and node.output[2]:
                return f"{SPEC} {onnx.__version__} computes no LSTM output Y_c"
    return None


def convolution_work(model: onnx.ModelProto) -> tuple[int, str]:
    """The multiply-adds of ``model``'s (shapes inferred) dearest Conv or ConvTranspose, and
    its type ((0, "") without one): what onnx.reference's cost grows with."""
    shapes = {
        info.name: [dim.dim_value for dim in info.type.tensor_type.shape.dim]
        for info in [*model.graph.input, *model.graph.value_info, *model.graph.output]
    }
    shapes |= {init.name: list(init.dims) for init in model.graph.initializer}
    dearest = (0, "")
    for node in model.graph.node:
        if node.op_type not in ("Conv", "ConvTranspose"):
            continue
        # The weights may come from a Constant node, and kernel_shape is optional: the
        # inferred shapes give both.
        w = shapes.get(node.input[1], [])
        if len(w) < 3 or node.output[0] not in shapes:
            continue  # not inferred: nothing to estimate the work from
        attrs = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
        kernel = attrs.get("kernel_shape", w[2:])
        dilations = attrs.get("dilations", [1] * len(kernel))
        reach = math.prod(k * d - d + 1 for k, d in zip(kernel, dilations, strict=False))
        per_group = w[1] if node.op_type == "Conv" else w[0] // attrs.get("group", 1)
        work = math.prod(shapes[node.output[0]]) * per_group * reach
        dearest = max(dearest, (work, node.op_type))
    return dearest


def host_references(built: BuiltModel) -> References:
    """Outputs of ``built`` on its own inputs by each registered reference that can run it.

    Raises NoReferenceError when none that may decide can.
    """
    feeds = dict(zip(built.input_names, built.inputs, strict=True))
    outputs: dict[str, list[np.ndarray]] = {}
    unavailable: dict[str, str] = {}
    model = onnx.load_from_string(built.onnx_bytes)
    for name, reference in HOST_REFERENCES.items():
        skipped = reference.unavailable(model)
        if skipped:
            unavailable[name] = skipped
            continue
        try:
            outputs[name] = [np.asarray(out) for out in reference.run(built, feeds)]
        except CannotRun as exc:
            unavailable[name] = str(exc)
        except Exception as exc:  # a model it cannot run: an index out of range, say
            unavailable[name] = f"failed: {type(exc).__name__}: {exc}"
    if _deciding(outputs) is None:
        raise _none_runs(unavailable)
    return _with_test_data(built, References(outputs, unavailable))


def _run_spec(built: BuiltModel, feeds: Feeds) -> list[np.ndarray]:
    evaluator = ReferenceEvaluator(built.onnx_bytes, new_ops=_KERNELS)
    return [np.asarray(out) for out in evaluator.run(built.output_names, feeds)]


def _run_ort(built: BuiltModel, feeds: Feeds) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = _ERROR_ONLY
    try:
        session = ort.InferenceSession(
            built.onnx_bytes, sess_options=options, providers=["CPUExecutionProvider"]
        )
    except ort.capi.onnxruntime_pybind11_state.NotImplemented as missing:
        raise CannotRun(f"no CPU kernel: {missing}") from None
    except ort.capi.onnxruntime_pybind11_state.Fail as refused:  # e.g. a batchwise GRU
        raise CannotRun(f"refused the model: {refused}") from None
    return [np.asarray(out) for out in session.run(built.output_names, feeds)]


# The registry, by name: the references every model is run through
HOST_REFERENCES: dict[str, HostReference] = {
    SPEC: HostReference(
        SPEC,
        onnx.__version__,
        _run_spec,
        {
            "onnx": onnx.__version__,
            "pooling kernels": KERNELS_VERSION,
            "resize kernel": resize_reference.KERNEL_VERSION,
            "convolution kernels": convolution_reference.KERNEL_VERSION,
        },
        decides=0,
        folder=None,  # it decides wherever it runs: reference/ holds its outputs
        declines=_spec_declines,
        cost=convolution_work,
        budget=SPEC_CONV_BUDGET,
    ),
    ORT: HostReference(
        ORT, ort.__version__, _run_ort, {"onnxruntime": ort.__version__}, 1, "reference-ort"
    ),
}


def _with_test_data(built: BuiltModel, references: References) -> References:
    if built.expected is not None:  # cross-checked like onnxruntime, never deciding
        references.outputs[TEST_DATA] = [np.asarray(out) for out in built.expected]
    return references


CACHE = CacheFolder(
    "references", "ref", "HIL_REFERENCE_CACHE", "HIL_REFERENCE_CACHE_MAX", "host references"
)
FORMAT = 4  # bump when the key, the entry layout or what host_references computes changes


class ReferenceCache(DiskCache):
    """``host_references`` kept under ``directory`` (``harness.diskcache``), capped at ``cap``
    bytes (default ``HIL_REFERENCE_CACHE_MAX``, else 2 GiB)."""

    def __init__(self, directory: Path, cap: int | None = None) -> None:
        """A folder that is not a cache's raises CacheFolderError (``diskcache.claim``)."""
        super().__init__(directory, CACHE, cap)
        self._versions = {"numpy": np.__version__, "wrong references": WRONG_REFERENCES}
        for reference in HOST_REFERENCES.values():
            self._versions |= reference.depends
        # a reference registered or dropped changes what is computed
        self._versions["references"] = ",".join(HOST_REFERENCES)

    def key(self, built: BuiltModel) -> str:
        """sha256 over the model, its inputs (by their digest, which the simulator's key
        takes too) and the reference libraries' versions (hex)."""
        header = {"format": FORMAT, **self._versions, "inputs": built.inputs_digest}
        return content_key(header, built.onnx_bytes, [])

    def references(self, built: BuiltModel) -> References:
        """``host_references(built)``, from the cache when an entry is there, else computed
        and stored (outputs a model's source gives are never stored: ``built`` has them)."""
        key = self.key(built)
        stored = self.get_packed(key, _read)
        if stored is None:
            computed = host_references(built)
            kept = {name: arrays for name, arrays in computed.outputs.items() if name != TEST_DATA}
            counts = {name: len(arrays) for name, arrays in kept.items()}
            digests = {name: arrays_digest(arrays) for name, arrays in kept.items()}
            data = {"outputs": counts, "unavailable": computed.unavailable, "digests": digests}
            self.put_packed(key, data, [array for arrays in kept.values() for array in arrays])
            return replace(computed, digests=digests)  # its test data was added already
        return _with_test_data(built, stored)


def _read(data: dict[str, Any], arrays: list[np.ndarray]) -> References:
    """The references ``references`` stored: each one's outputs in turn, as ``data`` counts."""
    outputs, start = {}, 0
    for name, count in data["outputs"].items():
        outputs[name] = arrays[start : start + count]
        start += count
    if start != len(arrays):
        raise ValueError(f"{len(arrays)} arrays stored for {start} outputs")
    # an entry from before digests were kept has none: its outputs are hashed when compared
    return References(outputs, dict(data["unavailable"]), dict(data.get("digests", {})))
