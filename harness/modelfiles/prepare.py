"""A user's ONNX model made runnable as a case: opset, fixed input shapes, inputs, calibration.

``prepare`` takes a loaded model and returns a :class:`PreparedModel`: the model at an opset
the vendor toolkits accept (lowered with ``onnx.version_converter`` when the model is newer
and the conversion is defined for its operators, else relabelled when the operators'
revisions in between only widened their types), every graph input with a fixed shape (from
the model, ``input_shapes`` or the given arrays), shape-inferred and checked, plus the inputs
given for it. The model is checked as given first, so a refusal names either the model's own
defect or what the harness changed (``_checked``). Everything changed on the way is listed
in ``PreparedModel.changes``, which the case records in its parameters.

Bad input raises :class:`ModelFileError` naming the file (or folder), the input and the value.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import defs, helper, numpy_helper, version_converter

from harness.modelfiles import safe_files
from harness.modelfiles.safe_files import ModelFileError
from harness.models.budget import SizeBudget, size_budget
from harness.models.builder import OPSET, fp16_exact
from harness.text import shown_name

DEFAULT_RANGE = (-1.0, 1.0)  # seeded random inputs are drawn from here unless told otherwise


@dataclass
class PreparedModel:
    """A model ready to run, with what its inputs are and what was changed to run it."""

    name: str  # the case name: the file's stem unless given
    model: onnx.ModelProto  # opset <= the max_opset, every graph input fixed, shapes inferred
    input_names: list[str]
    input_shapes: list[list[int]]
    input_types: list[np.dtype[Any]]
    output_names: list[str]
    given: dict[str, np.ndarray] = field(default_factory=dict)  # input name -> its array
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)  # seeded draws
    calibration: list[list[np.ndarray]] | None = None  # int8 samples, one array per input
    expected: list[np.ndarray] | None = None  # outputs shipped with the model (node tests)
    changes: list[str] = field(default_factory=list)  # what was done to make it runnable
    source: dict[str, str] = field(default_factory=dict)  # file and sha256 of the original
    # the user's own settings of the vendor's build (``hil run --toolkit-config``)
    build_config: dict[str, Any] = field(default_factory=dict)

    def draw(self, rng: np.random.Generator) -> list[np.ndarray]:
        """The inputs in model order: the given arrays, the others drawn from ``rng``."""
        return [
            self.given[name]
            if name in self.given
            else _draw(rng, shape, dtype, self.ranges.get(name, DEFAULT_RANGE))
            for name, shape, dtype in zip(
                self.input_names, self.input_shapes, self.input_types, strict=True
            )
        ]


def load_model(path: Path) -> onnx.ModelProto:
    """The model in ``path`` with its external data, read under ``safe_files``' rules; a
    missing, special, oversized or unreadable file is a ModelFileError naming it."""
    try:
        return safe_files.load_model(path)
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such model file") from None
    except ModelFileError:
        raise
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ModelFileError(f"{path}: not an ONNX model: {exc}") from None


def file_source(path: Path) -> dict[str, str]:
    data = safe_files.read_bytes(path)
    return {"model": shown_name(str(path)), "sha256": hashlib.sha256(data).hexdigest()}


def prepare(
    model: onnx.ModelProto,
    name: str,
    where: str,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    given: Mapping[str, np.ndarray] | None = None,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    budget: SizeBudget | None = None,
    max_opset: int = OPSET,
) -> PreparedModel:
    """``model`` (read from ``where``, named in errors) made runnable; see the module doc.
    ``max_opset``: the newest opset the vendor's toolkit takes (``Vendor.max_opset``)."""
    budget = budget or size_budget()
    copied = onnx.ModelProto()  # never change the caller's; copied without serialising it
    copied.CopyFrom(model)
    model = copied
    changes: list[str] = []
    initializers = {init.name for init in model.graph.initializer}
    graph_inputs = [info for info in model.graph.input if info.name not in initializers]
    names = [info.name for info in graph_inputs]
    given = dict(given or {})
    for label, mapping in (("--input-shape", input_shapes or {}), ("--range", ranges or {})):
        unknown = sorted(set(mapping) - set(names))
        if unknown:
            raise ModelFileError(f"{where}: {label} names {unknown}, not inputs; inputs: {names}")
    _check_domains(model, where)
    opset = opset_of(model)
    _check_tensors(model, where)
    as_given = _inferred_or_failure(model)
    if isinstance(as_given, str):
        raise ModelFileError(
            f"{where}: the model itself does not check at its opset {opset}: {as_given}"
        )
    model = _lowered(model, where, changes, max_opset)
    shapes = [
        _fixed_shape(info, where, input_shapes or {}, given, changes) for info in graph_inputs
    ]
    for info, shape in zip(graph_inputs, shapes, strict=True):
        _check_size(f"{where}: input {info.name!r} of shape {shape}", shape, budget)
    types = [_numpy_type(info, where) for info in graph_inputs]
    for name_, dtype in zip(names, types, strict=True):
        if name_ in (ranges or {}):
            _check_range(f"{where}: --range for input {name_!r}", dtype, (ranges or {})[name_])
    for info, shape in zip(graph_inputs, shapes, strict=True):
        dims = info.type.tensor_type.shape
        del dims.dim[:]
        for size in shape:
            dims.dim.add().dim_value = size
    if changes and any("shape" in change for change in changes):
        del model.graph.value_info[:]  # inferred again from the fixed shapes
    # unchanged, it is the model as given, inferred and checked already (a network's weights
    # are serialised for each inference and check: seconds for a ResNet)
    model = _checked(model, where, opset, changes) if changes else as_given
    over = budget.over_elements(f"{where}: the model (weights and activations)", elements(model))
    if over is not None:
        raise ModelFileError(over)
    for name_, shape, dtype in zip(names, shapes, types, strict=True):
        if name_ in given:
            given[name_] = _conformed(given[name_], shape, dtype, f"{where}: input {name_!r}")
    return PreparedModel(
        name=name,
        model=model,
        input_names=names,
        input_shapes=shapes,
        input_types=types,
        output_names=[info.name for info in model.graph.output],
        given=given,
        ranges=dict(ranges or {}),
        changes=changes,
    )


def _check_tensors(model: onnx.ModelProto, where: str) -> None:
    """Every tensor the model carries holds the data its dims declare: onnx's shape inference
    reads a Constant's data past its end (a crash of the process, SIGSEGV) when it does not.
    Reading each through numpy costs no more memory than the model already holds."""
    for tensor in _tensors(model.graph):
        try:
            numpy_helper.to_array(tensor)
        except Exception as exc:
            raise ModelFileError(
                f"{where}: tensor {tensor.name!r} does not hold the data its dims "
                f"{list(tensor.dims)} declare: {_one_line(exc)}"
            ) from None


def _tensors(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    """The graph's initializers and the tensors in its nodes' attributes, subgraphs included
    (external data was read into the model by ``load_model``)."""
    yield from graph.initializer
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            if attribute.HasField("g"):
                yield from _tensors(attribute.g)
            for subgraph in attribute.graphs:
                yield from _tensors(subgraph)


def _inferred_or_failure(model: onnx.ModelProto) -> onnx.ModelProto | str:
    """``model`` shape-inferred, having passed onnx's full check (strict shape inference
    included), or why it fails."""
    try:
        return _strictly_checked(model)
    except Exception as exc:
        return _one_line(exc)


def _strictly_checked(model: onnx.ModelProto) -> onnx.ModelProto:
    """onnx's full check, its strict shape inference run once: ``check_model(full_check=True)``
    is the plain check plus this same inference (types checked, strict), which on the model
    it returns would run a second time for nothing (a tenth of a second on ResNet-18)."""
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    onnx.checker.check_model(inferred)
    return inferred


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def _checked(model: onnx.ModelProto, where: str, opset: int, changes: list[str]) -> onnx.ModelProto:
    """``model``, as the harness changed it (it checked as given), shape-inferred and checked.

    After a lowering, onnx's shape inference at the new opset may disagree with the shapes the
    model declares (ceil-mode pooling: opset 19 keeps a last window that starts in the
    padding, opset 22 drops it). Both are valid at their opsets, so the lowered model is
    checked leniently, its declared shapes winning, and the change is recorded.
    """
    try:
        return _strictly_checked(model)
    except Exception as exc:
        strict = _one_line(exc)
    now = opset_of(model)
    if now != opset:
        try:
            inferred = onnx.shape_inference.infer_shapes(model, check_type=True)
            onnx.checker.check_model(inferred)
        except Exception as exc:
            strict = f"{strict}; leniently: {_one_line(exc)}"
        else:
            changes.append(
                f"the declared shapes kept: opset {now} shape inference disagrees with them "
                f"after the lowering from {opset} ({strict})"
            )
            return inferred
    raise ModelFileError(
        f"{where}: the model checks as given but not after the harness's changes "
        f"({'; '.join(changes)}): {strict}"
    )


def _check_domains(model: onnx.ModelProto, where: str) -> None:
    foreign = sorted(
        {node.domain for node in model.graph.node if node.domain not in ("", "ai.onnx")}
    )
    if foreign:
        raise ModelFileError(f"{where}: operators of domains {foreign}; only ONNX's own run here")


def elements(model: onnx.ModelProto) -> int:
    """Elements of every tensor the model holds or computes (weights, inputs, intermediates,
    outputs; shapes inferred, an unknown dimension counted as 1): the size budget's measure."""
    graph = model.graph
    weights = {init.name: math.prod(init.dims) for init in graph.initializer}
    total = sum(weights.values())
    for info in [*graph.input, *graph.value_info, *graph.output]:
        if info.name not in weights:  # an initializer an older exporter lists as an input
            total += math.prod(max(d.dim_value, 1) for d in info.type.tensor_type.shape.dim)
    return total


def _check_size(what: str, shape: Sequence[int], budget: SizeBudget) -> None:
    if any(size < 1 for size in shape):
        raise ModelFileError(f"{what}: every dimension must be at least 1")
    over = budget.over_elements(what, math.prod(shape))
    if over is not None:
        raise ModelFileError(over)


def _check_range(what: str, dtype: np.dtype[Any], bounds: tuple[float, float]) -> None:
    """A range seeded draws of ``dtype`` can come from: finite, inside the type (float16 for
    floats: drawn inputs are float16-exact), and holding an integer for integer types."""
    lo, hi = bounds
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ModelFileError(f"{what}: {lo:g},{hi:g}: give finite LO,HI with LO < HI")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if math.ceil(lo) > math.floor(hi):
            raise ModelFileError(f"{what}: {lo:g},{hi:g} holds no {dtype} value")
        if math.ceil(lo) < info.min or math.floor(hi) > info.max:
            raise ModelFileError(
                f"{what}: {lo:g},{hi:g} is outside {dtype}'s {info.min},{info.max}"
            )
    elif dtype.kind == "f":  # bool inputs are drawn as 0 and 1 whatever the range
        top = float(np.finfo(np.float16).max)
        if lo < -top or hi > top:
            raise ModelFileError(f"{what}: {lo:g},{hi:g} is outside float16's +-{top:g}")


def opset_of(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), OPSET)


def _lowered(
    model: onnx.ModelProto, where: str, changes: list[str], ceiling: int
) -> onnx.ModelProto:
    """The model at opset ``ceiling`` when it is newer: the vendor's toolkit refuses a newer
    one."""
    opset = opset_of(model)
    if opset <= ceiling:
        return model
    ops = sorted({node.op_type for node in model.graph.node})
    try:
        lowered = version_converter.convert_version(model, ceiling)
    except Exception as exc:
        if _types_only(model, opset, ceiling):
            relabelled = onnx.ModelProto.FromString(model.SerializeToString())
            for entry in relabelled.opset_import:
                if entry.domain in ("", "ai.onnx"):
                    entry.version = ceiling
            changes.append(
                f"opset relabelled from {opset} to {ceiling}: the revisions of {', '.join(ops)} "
                f"in between changed only type constraints, and the model's types are allowed "
                f"at {ceiling}"
            )
            return relabelled
        raise ModelFileError(
            f"{where}: opset {opset} is newer than the {ceiling} the toolkit accepts and cannot "
            f"be lowered: {exc}"
        ) from None
    changes.append(
        f"opset lowered from {opset} to {ceiling} (onnx.version_converter; {', '.join(ops)})"
    )
    return lowered


def _types_only(model: onnx.ModelProto, opset: int, ceiling: int) -> bool:
    """Whether every node's operator has the same signature (inputs, outputs, attributes with
    their defaults) at ``opset`` and at ``ceiling``, and the node's input types are allowed at
    ``ceiling``: the revisions in between (bfloat16, float8, int4 additions) only widened
    types."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:
        return False
    types = {
        info.name: info.type.tensor_type.elem_type
        for info in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]
    }
    types |= {init.name: init.data_type for init in inferred.graph.initializer}
    for node in inferred.graph.node:
        try:
            new, old = (defs.get_schema(node.op_type, v, node.domain) for v in (opset, ceiling))
        except Exception:  # no schema at the ceiling: the operator is newer
            return False
        if _signature(new) != _signature(old):
            return False
        allowed = {c.type_param_str: set(c.allowed_type_strs) for c in old.type_constraints}
        for index, name in enumerate(node.input):
            if not name or name not in types:
                continue
            formal = old.inputs[min(index, len(old.inputs) - 1)]
            wanted = allowed.get(formal.type_str)
            elem = onnx.TensorProto.DataType.Name(types[name]).lower()
            if wanted is not None and f"tensor({elem})" not in wanted:
                return False
    return True


def _signature(schema: defs.OpSchema) -> tuple[Any, ...]:
    return (
        [(p.name, p.type_str, p.option) for p in schema.inputs],
        [(p.name, p.type_str, p.option) for p in schema.outputs],
        sorted(
            (name, a.type, a.required, a.default_value.SerializeToString())
            for name, a in schema.attributes.items()
        ),
    )


def _fixed_shape(
    info: onnx.ValueInfoProto,
    where: str,
    input_shapes: Mapping[str, Sequence[int]],
    given: Mapping[str, np.ndarray],
    changes: list[str],
) -> list[int]:
    """The input's shape: ``input_shapes`` first, then the model's own if fixed, then the given
    array's."""
    dims = info.type.tensor_type.shape.dim
    model_shape = [
        d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in dims
    ]
    if info.name in input_shapes:
        shape = [int(size) for size in input_shapes[info.name]]
        if len(shape) != len(dims) or any(
            m is not None and m != s for m, s in zip(model_shape, shape, strict=False)
        ):
            raise ModelFileError(
                f"{where}: --input-shape {info.name}={shape} does not fit the model's "
                f"{_shape_text(dims)}"
            )
        if None in model_shape:
            changes.append(f"input {info.name} shape fixed to {shape} (--input-shape)")
        return shape
    if None not in model_shape:
        return [int(size) for size in model_shape]  # type: ignore[arg-type]
    if info.name in given:
        shape = list(given[info.name].shape)
        changes.append(f"input {info.name} shape fixed to {shape} (from its given array)")
        return shape
    raise ModelFileError(
        f"{where}: input {info.name!r} has shape {_shape_text(dims)}; give it with "
        f"--input-shape {info.name}=D,D,..."
    )


def _shape_text(dims: Any) -> str:
    return (
        "[" + ",".join(str(d.dim_value) if d.dim_value else d.dim_param or "?" for d in dims) + "]"
    )


def _numpy_type(info: onnx.ValueInfoProto, where: str) -> np.dtype[Any]:
    elem = info.type.tensor_type.elem_type
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem))
    except Exception:
        raise ModelFileError(f"{where}: input {info.name!r} has element type {elem}") from None


def _conformed(array: np.ndarray, shape: list[int], dtype: np.dtype[Any], what: str) -> np.ndarray:
    if list(array.shape) != shape:
        raise ModelFileError(f"{what}: shape {list(array.shape)}, the model needs {shape}")
    if array.dtype != dtype:
        if array.dtype.kind != dtype.kind:
            raise ModelFileError(f"{what}: dtype {array.dtype}, the model needs {dtype}")
        array = array.astype(dtype)
    return array


def _draw(
    rng: np.random.Generator, shape: list[int], dtype: np.dtype[Any], bounds: tuple[float, float]
) -> np.ndarray:
    lo, hi = bounds
    if dtype.kind == "f":
        return fp16_exact(rng.uniform(lo, hi, size=tuple(shape))).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=tuple(shape)).astype(bool)
    return rng.integers(int(np.ceil(lo)), int(np.floor(hi)) + 1, size=tuple(shape)).astype(dtype)


def array_file(index: int, name: str) -> str:
    """The file a results folder keeps array ``index`` (named ``name``) in."""
    return f"{index}_{re.sub(r'[^A-Za-z0-9._-]+', '_', name)}.npy"


def read_arrays(folder: Path, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Arrays for ``names`` from ``folder``: ``NAME.npy`` or, as results folders hold them,
    ``<index>_<NAME>.npy``. Inputs without a file are left out (drawn at random)."""
    if not folder.is_dir():
        raise ModelFileError(f"{folder}: no such folder of .npy inputs")
    files = {path.name: path for path in folder.glob("*.npy")}
    unused = set(files)
    arrays: dict[str, np.ndarray] = {}
    for index, name in enumerate(names):
        found = next((f for f in (f"{name}.npy", array_file(index, name)) if f in files), None)
        if found is None:
            continue
        unused.discard(found)
        try:
            arrays[name] = safe_files.load_npy(files[found])
        except ModelFileError:
            raise
        except (ValueError, OSError) as exc:
            raise ModelFileError(f"{files[found]}: not a .npy array: {exc}") from None
    if unused:
        raise ModelFileError(
            f"{folder}: {sorted(unused)} match no input of the model {list(names)}"
        )
    return arrays


def read_calibration(folder: Path, prepared: PreparedModel) -> list[list[np.ndarray]]:
    """int8 calibration samples: every sub-folder of ``folder`` (sorted) is one sample laid out
    like ``--inputs``; a folder of .npy files alone is one sample. Each array must have its
    input's shape and kind of type, as a given input must."""
    names = prepared.input_names
    samples = sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    arrays = [read_arrays(sample, names) for sample in samples or [folder]]
    for sample, found in zip(samples or [folder], arrays, strict=True):
        missing = [name for name in names if name not in found]
        if missing:
            raise ModelFileError(f"{sample}: calibration sample without {missing}")
        for name, shape, dtype in zip(
            names, prepared.input_shapes, prepared.input_types, strict=True
        ):
            found[name] = _conformed(found[name], shape, dtype, f"{sample}: input {name!r}")
    return [[found[name] for name in names] for found in arrays]


def read_calibration_list(listing: Path, prepared: PreparedModel) -> list[list[np.ndarray]]:
    """int8 calibration samples from a list file as toolkits read one: a line per sample, its
    .npy files (one per input, in the model's input order) separated by spaces, each relative
    to the list's folder. Each array must have its input's shape and kind of type."""
    try:
        text = safe_files.read_bytes(listing).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"{listing}: not a text file (byte {exc.start})") from None
    names = prepared.input_names
    samples = []
    for number, line in enumerate(text.splitlines(), 1):
        files = line.split()
        if not files:
            continue
        if len(files) != len(names):
            raise ModelFileError(
                f"{listing}: line {number}: {len(files)} files for the model's "
                f"{len(names)} inputs {list(names)}"
            )
        sample = []
        for name, file, shape, dtype in zip(
            names, files, prepared.input_shapes, prepared.input_types, strict=True
        ):
            path = listing.parent / file
            try:
                array = safe_files.load_npy(path)
            except ModelFileError:
                raise
            except (ValueError, OSError) as exc:
                raise ModelFileError(f"{path}: not a .npy array: {exc}") from None
            sample.append(_conformed(array, shape, dtype, f"{path}: input {name!r}"))
        samples.append(sample)
    if not samples:
        raise ModelFileError(f"{listing}: no calibration sample (no line names a file)")
    return samples
