"""Every layer of a user's model against the platform's document: per ONNX node, its documented
operator entry and each structured limit of that entry, inside or outside, with the document's
own line.

A node is matched to the entries its ONNX type is documented as: the type itself, else the
vendor's names for it (``Vendor.operator_names``: a Conv is a Convolution, or a Depthwise
Convolution when each group is one input channel). Its quantities are read off the node in the
documents' own words (``node_subjects``): the input's batch, channel, height and width, the
kernel, stride, pad and dilation elements, every scalar attribute by its name (ONNX defaults
filled in); then each limit of the entry is evaluated as case generation does
(``harness.cases.operators.status.satisfies``). A limit over a quantity the node does not give, or
whose condition does not apply, is listed as not read, never as inside.

A model is documented as supported when no layer is outside a documented limit (its dtype
among them) and no layer's operator is documented as absent on the platform; a layer whose
operator the document does not list leaves no documented claim either way and is named.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import onnx
from onnx import defs, helper, numpy_helper

from harness.cases.operators.status import condition_applies, form_text, governing_limits, satisfies
from harness.cases.validity import limit_subjects
from harness.documented.formulas import applies
from harness.documented.limits import Limit
from harness.documented.operators import DocumentedOperator, OperatorCatalogue
from harness.modelfiles.graph import node_label
from harness.models import NCHW
from harness.models.builder import broadcast_form

SUPPORTED, OUTSIDE, NOT_LISTED = "supported", "outside", "not listed"
# ONNX list attributes of spatial windows -> the words the documents name their elements by,
# each spelling a document uses ("strides_h" in one entry, "stride_h" in another).
PAIRS = {
    "kernel_shape": ("kernel",),
    "strides": ("strides", "stride"),
    "dilations": ("dilations",),
}
PAD_WORDS = ("pad", "pads")
PAD_SIDES = ("top", "left", "bottom", "right")  # ONNX pads: [x1_begin, x2_begin, x1_end, x2_end]
CONVOLUTIONS = ("Conv", "ConvTranspose")  # the weight (input 1) gives the kernel and channels


@dataclass(frozen=True)
class LimitLine:
    """One documented limit as a layer meets it."""

    id: str
    text: str  # the document's line(s), verbatim
    where: str  # the document, section and page
    value: str  # what the layer has, e.g. "kernel_h=8"


@dataclass(frozen=True)
class LayerCheck:
    """One node of the model against its documented entry."""

    index: int
    node: str
    op: str  # the ONNX type
    entry: str  # the documented operator it is judged by; "" when the document lists none
    status: str  # SUPPORTED, OUTSIDE or NOT_LISTED
    inside: tuple[LimitLine, ...]
    outside: tuple[LimitLine, ...]
    unread: tuple[str, ...]  # limit ids the node gives no quantity for, or not applying


@dataclass(frozen=True)
class ModelCheck:
    """Every layer of one model against the document of a platform, for one dtype."""

    document: str  # the document and the platform's section, as the catalogue names it
    seed: str  # the document file the catalogue was read from (a case source's ``seed``)
    platform: str
    dtype: str
    layers: tuple[LayerCheck, ...]

    @property
    def documented(self) -> str:
        """``supported`` unless a layer is outside its documented limits."""
        return OUTSIDE if any(layer.status == OUTSIDE for layer in self.layers) else SUPPORTED

    def first_outside(self) -> tuple[LayerCheck, LimitLine] | None:
        for layer in self.layers:
            if layer.outside:
                return layer, layer.outside[0]
        return None

    def summary(self) -> str:
        """One sentence: the first layer outside with its limit and line, or what holds."""
        found = self.first_outside()
        if found is not None:
            layer, line = found
            return (
                f"layer {layer.node} ({layer.op}) is outside the documented limit {line.id} "
                f'({line.value}; {line.where}: "{" ".join(line.text.split())}"): a failure '
                "there is expected per the document"
            )
        listed = [layer for layer in self.layers if layer.status == SUPPORTED]
        unlisted = sorted({layer.op for layer in self.layers if layer.status == NOT_LISTED})
        said = (
            f"{len(listed)} of {len(self.layers)} layers documented as supported by "
            f"{self.document} for {self.platform} {self.dtype}, inside every limit read"
        )
        if unlisted:
            said += f"; operators the document does not list: {', '.join(unlisted)}"
        return said

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "documented": self.documented, "summary": self.summary()}


def check_model(
    model: onnx.ModelProto,
    catalogue: OperatorCatalogue,
    onnx_names: Mapping[str, Sequence[str]],
    dtype: str,
) -> ModelCheck:
    """Each node of ``model`` (shapes inferred) against ``catalogue``, the document of its
    platform; ``onnx_names``: ONNX type -> the entries the document names it by."""
    inferred = model if _inferred(model) else onnx.shape_inference.infer_shapes(model)
    shapes = _shapes(inferred)
    constants = {init.name: init for init in inferred.graph.initializer}
    layers = []
    for index, node in enumerate(inferred.graph.node):
        found = node_subjects(node, shapes, constants)
        label = node_label(node, index)
        entry = _entry(node.op_type, found, catalogue, onnx_names)
        if entry is None:
            layers.append(LayerCheck(index, label, node.op_type, "", NOT_LISTED, (), (), ()))
            continue
        lists = {
            name: value for name, value in _attributes(node).items() if isinstance(value, list)
        }
        found |= _elements(governing_limits(catalogue, entry), lists)
        layers.append(_layer(index, label, node.op_type, entry, catalogue, found, dtype))
    source = catalogue.source
    return ModelCheck(source.document, source.file, catalogue.platform, dtype, tuple(layers))


def node_subjects(
    node: onnx.NodeProto,
    shapes: Mapping[str, Sequence[int]],
    constants: Mapping[str, onnx.TensorProto] = {},
) -> dict[str, Any]:
    """The quantities of ``node`` in the documents' words; ``shapes``: tensor -> its static
    shape; ``constants``: the initializers (a weight's shape, a constant operand)."""
    attrs = _attributes(node)
    found: dict[str, Any] = {
        name: value for name, value in attrs.items() if isinstance(value, (int, float, str))
    }
    data = shapes.get(node.input[0]) if node.input else None
    if data is not None and len(data) == len(NCHW):
        found |= dict(zip(NCHW, data, strict=True))
    weight = shapes.get(node.input[1]) if len(node.input) > 1 else None
    if node.op_type in CONVOLUTIONS and weight is not None and len(weight) == len(NCHW):
        group = int(attrs.get("group", 1))
        out, per_group = weight[0], weight[1]
        if node.op_type == "ConvTranspose":  # weight [C_in, C_out / group, kH, kW]
            out, per_group = weight[1] * group, weight[0] // group
        found |= {"output_channel": out, "input_channel": per_group}
        attrs.setdefault("kernel_shape", list(weight[2:]))
    if len(attrs.get("kernel_shape") or ()) == 2:  # ONNX leaves these unset for a window
        attrs.setdefault("strides", [1, 1])
        attrs.setdefault("dilations", [1, 1])
        attrs.setdefault("pads", [0, 0, 0, 0])
    for attr, words in PAIRS.items():
        pair = attrs.get(attr)
        if isinstance(pair, list) and len(pair) == 2:
            for word in words:
                found |= {f"{word}_h": pair[0], f"{word}_w": pair[1]}
    pads = attrs.get("pads")
    if isinstance(pads, list) and len(pads) == len(PAD_SIDES):
        for word in PAD_WORDS:
            found |= {f"{word}_{side}": pad for side, pad in zip(PAD_SIDES, pads, strict=True)}
    for side in "hw":
        if f"kernel_{side}" in found and f"dilations_{side}" in found:
            kernel, dilation = found[f"kernel_{side}"], found[f"dilations_{side}"]
            found[f"dilated_kernel_{side}"] = (kernel - 1) * dilation + 1
    output = shapes.get(node.output[0]) if node.output else None
    if output is not None and len(output) == len(NCHW):
        found |= {"output_h": output[2], "output_w": output[3]}
        operands = [shapes.get(name) for name in node.input[:2]]
        broadcast = [s for s in operands if s is not None and len(s) == len(NCHW) and s != output]
        if len(node.input) == 2 and len(broadcast) == 1:  # a binary operator's one broadcast
            found |= broadcast_form(broadcast[0], output)
    return found


def _attributes(node: onnx.NodeProto) -> dict[str, Any]:
    """The node's attributes over the ONNX defaults of its type (what a missing one means)."""
    values: dict[str, Any] = {}
    try:
        schema = defs.get_schema(node.op_type, domain=node.domain or "")
    except defs.SchemaError:
        schema = None
    if schema is not None:
        for name, attr in schema.attributes.items():
            if attr.default_value.type != onnx.AttributeProto.UNDEFINED:
                values[name] = helper.get_attribute_value(attr.default_value)
    values |= {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
    return {name: _plain(value) for name, value in values.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, onnx.TensorProto):  # a scalar is a quantity; a tensor's data is not
        return numpy_helper.to_array(value).item() if math.prod(value.dims) == 1 else None
    return value


def _inferred(model: onnx.ModelProto) -> bool:
    """Whether every node output has its type stated already: a model shape-inferred before
    (a prepared one), which inferring again would leave as it is, after serialising its weights
    (a tenth of a second for a ResNet)."""
    graph = model.graph
    stated = {info.name for info in [*graph.input, *graph.value_info, *graph.output]}
    return all(name in stated for node in graph.node for name in node.output if name)


def _shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    """Every tensor with a fully known static shape, by name (initializers included)."""
    graph = model.graph
    shapes = {init.name: list(init.dims) for init in graph.initializer}
    for info in [*graph.input, *graph.value_info, *graph.output]:
        dims = info.type.tensor_type.shape.dim
        if info.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
            shapes.setdefault(info.name, [d.dim_value for d in dims])
    return shapes


def _entry(
    op_type: str,
    found: Mapping[str, Any],
    catalogue: OperatorCatalogue,
    onnx_names: Mapping[str, Sequence[str]],
) -> DocumentedOperator | None:
    """The entry a node of ``op_type`` is judged by: its own name, else the first of the
    vendor's names for it that the document has; a depthwise convolution (one input channel
    per group, several groups) by the entry whose name says so."""
    operators = catalogue.operators
    if op_type in operators:
        return operators[op_type]
    names = [name.replace(" ", "") for name in onnx_names.get(op_type, ())]
    listed = [name for name in names if name in operators]
    depthwise = found.get("group", 1) > 1 and found.get("group") == found.get("channel")
    chosen = [name for name in listed if ("Depthwise" in name) == depthwise] or listed
    return operators[chosen[0]] if chosen else None


def _layer(
    index: int,
    label: str,
    op_type: str,
    entry: DocumentedOperator,
    catalogue: OperatorCatalogue,
    found: Mapping[str, Any],
    dtype: str,
) -> LayerCheck:
    inside: list[LimitLine] = []
    outside: list[LimitLine] = []
    unread: list[str] = []
    limits = governing_limits(catalogue, entry)
    for limit, value in _read(limits, found):
        if limit.kind == "absent":
            outside.append(_line(limit, f"{op_type} on {catalogue.platform}"))
        elif limit.kind == "dtype" and dtype in (limit.values or ()):
            inside.append(_line(limit, dtype))
        elif value is None or limit.kind == "dtype":  # another type variable's types
            unread.append(limit.id)
        elif satisfies(limit, found, {}):
            inside.append(_line(limit, value))
        else:
            outside.append(_line(limit, value))
    documented = entry.data_dtypes()
    if documented and dtype not in documented:
        dtype_limits = [limit for limit in limits if limit.kind == "dtype"]
        outside.insert(0, _line(dtype_limits[0], dtype))
    status = OUTSIDE if outside else SUPPORTED
    return LayerCheck(
        index, label, op_type, entry.name, status, tuple(inside), tuple(outside), tuple(unread)
    )


def _elements(limits: Sequence[Limit], lists: Mapping[str, list[Any]]) -> dict[str, Any]:
    """The list attributes' elements an operator table's limits name by position
    (``kernel_shape``'s element 0, ``kernel_h``)."""
    found = {}
    for limit in limits:
        element, index = limit.rule.get("element"), limit.rule.get("index")
        items = lists.get(limit.subject)
        if element is not None and index is not None and items and int(index) < len(items):
            found[str(element)] = items[int(index)]
    return found


def _read(limits: Sequence[Limit], found: Mapping[str, Any]) -> Iterator[tuple[Limit, str | None]]:
    """Each structured limit with the layer's value of what it names ("kernel_h=8"), None
    when the node gives no such quantity or the limit's condition does not apply to it."""
    for limit in limits:
        if not limit.structured:
            continue
        names = limit_subjects(limit) - {""}
        known = names and all(name in found for name in names)
        if limit.kind in ("absent", "dtype"):
            yield limit, ""
        elif not known or not condition_applies(limit, found) or not applies(limit.rule, found):
            yield limit, None
        elif limit.kind == "broadcast" and found.get("form") != form_text(limit.rule["from"]):
            yield limit, None  # another broadcasting form's bound
        else:
            yield limit, ", ".join(f"{name}={_shown(found[name])}" for name in sorted(names))


def _shown(value: Any) -> str:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    return str(value)


def _line(limit: Limit, value: str) -> LimitLine:
    where = limit.source + (f", p. {limit.page}" if limit.page else "")
    return LimitLine(limit.id, limit.text, where, value)
