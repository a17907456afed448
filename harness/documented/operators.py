"""Operator constraint catalogue: the vendor's per-operator limits as checked, typed data.

``load_operators`` reads a ``<platform>-operators.yaml`` (shape: ``operators.schema.yaml``; a
vendor keeps its files), checks its meaning and returns an ``OperatorCatalogue``.
``OperatorCatalogue.limits()`` flattens it into ``Limit`` records, the unit that case
generation and reports count. A catalogue may also hold ``ListedOperator``s: operators as a
whole-document operator list states them (``harness.documented.documents.Entry``), their limits
already read; case generation sees either through ``DocumentedOperator``.

A limit stated once per tensor role counts once per role (GRU's hidden_size range appears in
W, R, B, initial_h, Y and Y_h: six limits). Recommendations ("no limitation, 4-alignment
recommended") and notes are kept on the model but are not limits.

Limit kinds and fields: ``harness.documented.limits``.

``role`` is a tensor role name (``X``, ``input``), ``attr`` for attributes, ``dtype`` for type
variables, ``broadcast`` for an operator's broadcasting forms, ``op`` for operator-wide facts.
Ids read ``<op>/<role>/<subject>`` (``Expand/broadcast/<from>-><to>/<dim>`` for forms), plus
``/<element>`` for attribute elements, ``/multiple-of`` for that rule and ``@<attr>=<values>``
for conditional limits: ``GRU/X/batch_size/multiple-of``, ``Hardmax/input/height*width@axis=1``.

A limit the document contradicts itself on carries the reason in ``inconsistent`` (catalogue
key ``inconsistent`` on a type variable, or on a layout, prefixed with the layout's name).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn, Protocol

from harness.documented.intervals import Interval
from harness.documented.limits import Condition, Limit, LimitKind, Scalar
from harness.safe_yaml import DataFileError, key_path, load_validated

SCHEMA_PATH = Path(__file__).with_name("operators.schema.yaml")


MultiCoreStatus = Literal["supported", "not-yet-supported", "not-stated"]
_Path = tuple[str | int, ...]
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_IDENTIFIER_OR_ONE = re.compile(r"[A-Za-z_]\w*|\b1\b")  # entries of "[b,c,1,w]"


@dataclass(frozen=True)
class MultipleOf:
    """ "when greater than ``when_greater_than``, only multiples of ``multiple_of``"."""

    when_greater_than: int
    multiple_of: int


@dataclass(frozen=True)
class Dim:
    """A constrained dimension or attribute element: an interval or a value set."""

    name: str
    interval: Interval | None
    values: tuple[Scalar, ...] | None
    multiple_of: MultipleOf | None
    text: str


@dataclass(frozen=True)
class Product:
    """A product of dimensions bounded above, possibly only for some attribute values."""

    factors: tuple[str, ...]
    less_than: int
    condition: Condition
    note: str | None
    text: str


@dataclass(frozen=True)
class Statement:
    """A documented set of values with its seed text (quantization schemes, rank, exponents)."""

    values: tuple[Scalar, ...]
    text: str


@dataclass(frozen=True)
class Broadcasting:
    arbitrary_dims: bool
    same_as: str | None
    text: str


@dataclass(frozen=True)
class Role:
    """An input or output tensor as the document describes it."""

    name: str
    direction: Literal["input", "output"]
    types: tuple[str, ...]
    optional: bool
    shape: str | None
    description: str | None
    dims: Mapping[str, Dim]
    products: tuple[Product, ...]
    rank: Statement | None
    value_set: Statement | None
    quantization: Statement | None
    broadcasting: Broadcasting | None


@dataclass(frozen=True)
class TypeVariable:
    """``T1:int8(Tensor),float16(Tensor)``: data types and their kinds, in document order."""

    name: str
    kinds: Mapping[str, str]  # dtype -> Tensor | constTensor | Scalar
    text: str
    inconsistent: str | None = None

    def dtypes(self, kind: str | None = None) -> tuple[str, ...]:
        return tuple(d for d, k in self.kinds.items() if kind is None or k == kind)


@dataclass(frozen=True)
class Layout:
    shape: str
    text: str
    inconsistent: str | None = None


@dataclass(frozen=True)
class ValueConstraint:
    """What choosing one attribute value brings with it (Pad mode=reflect: ranges on data)."""

    applies_to: str | None
    dims: Mapping[str, Dim]
    no_limitation: bool
    text: str


@dataclass(frozen=True)
class Attribute:
    name: str
    type: str  # as written: "int", "int64(kernel_h,kernel_w)", ...
    extern: bool
    default: Scalar | None
    description: str | None
    values: tuple[Scalar, ...] | None
    elements: Mapping[str, Dim]
    fixed: Scalar | None
    nominal_values: tuple[Scalar, ...] | None
    nominal_range: str | None
    unsupported: bool
    layouts: Mapping[str, Layout]
    requires: tuple[str, ...]
    recommended_multiple_of: int | None
    per_value: Mapping[Scalar, ValueConstraint]
    text: str | None


@dataclass(frozen=True)
class BroadcastForm:
    source: str  # "[b,c,1,w]"
    target: str  # "[b,c,h,w]"
    dims: Mapping[str, Dim]
    text: str


@dataclass(frozen=True)
class Tolerance:
    """Per-operator comparison tolerance override; None keeps the harness default."""

    atol: float | None
    rtol: float | None
    min_cosine: float | None


@dataclass(frozen=True)
class MultiCore:
    status: MultiCoreStatus
    text: str | None


@dataclass(frozen=True)
class Operator:
    name: str
    section: str
    source: str  # "<seed file> § <section>"
    description: str | None
    equations: tuple[str, ...]
    same_as: str | None  # roles and type variables copied from this operator
    inputs: tuple[Role, ...]
    outputs: tuple[Role, ...]
    dtypes: Mapping[str, TypeVariable]
    attributes: Mapping[str, Attribute]
    broadcast_forms: tuple[BroadcastForm, ...]
    multi_core: MultiCore
    tolerance: Mapping[str, Tolerance]

    @property
    def roles(self) -> tuple[Role, ...]:
        return self.inputs + self.outputs

    @property
    def adopted(self) -> tuple[Limit, ...]:
        """Limits probed on another operator: none (a "same as" table's are copied in)."""
        return ()

    def data_dtypes(self) -> tuple[str, ...]:
        """Documented dtypes of the main data tensor: first input, first type variable, Tensor."""
        return self.dtypes[self.inputs[0].types[0]].dtypes("Tensor")

    def limits(self) -> list[Limit]:
        return list(_operator_limits(self))


@dataclass(frozen=True)
class ListedOperator:
    """An operator as a whole-document operator list states it: its limits as read, under the
    name of the model that probes it (``ConvolutionLeakyRelu`` of the entry
    ``ConvolutionPRelu/LeakyRelu``)."""

    name: str
    section: str
    stated: tuple[Limit, ...]
    # A fused entry's limits stated by the entry it names ("说明及规格限制同Convolution"):
    # they judge its cases, and are probed on that entry's operator.
    adopted: tuple[Limit, ...] = ()
    tolerance: Mapping[str, Tolerance] = field(default_factory=dict)

    def data_dtypes(self) -> tuple[str, ...]:
        """Every Tensor data type any of its type variables documents, in document order: a
        list names no data tensor's variable reliably (Transpose's X is T1, yet T2 holds its
        float16)."""
        found: dict[str, None] = {}
        for limit in self.limits():
            if limit.kind == "dtype":
                kinds = limit.rule.get("kinds", {})
                found |= {str(d): None for d in limit.values or () if kinds.get(d) == "Tensor"}
        return tuple(found)

    def limits(self) -> list[Limit]:
        return [*self.stated, *self.adopted]


class DocumentedOperator(Protocol):
    """What case generation reads of an operator, whichever document it comes from."""

    @property
    def name(self) -> str: ...

    @property
    def tolerance(self) -> Mapping[str, Tolerance]: ...

    @property
    def adopted(self) -> tuple[Limit, ...]: ...

    def data_dtypes(self) -> tuple[str, ...]: ...

    def limits(self) -> list[Limit]: ...


@dataclass(frozen=True)
class Source:
    file: str
    title: str
    document: str
    pages: str


@dataclass(frozen=True)
class CpuRule:
    """A platform-wide rule: the only operators the platform's CPU runs (none at all, on
    RK2118), so a layer the compiler places on its CPU outside them cannot run there."""

    operators: tuple[str, ...]
    text: str
    source: str


@dataclass(frozen=True)
class OperatorCatalogue:
    sdk: str
    platform: str
    source: Source
    operators: Mapping[str, DocumentedOperator]
    cpu_rule: CpuRule | None = None  # None: the document limits nothing the CPU runs

    def limits(self) -> list[Limit]:
        return [limit for op in self.operators.values() for limit in op.limits()]

    def documented(self) -> list[str]:
        """The operators the document has an entry for (not only listed as absent)."""
        return [
            name
            for name, op in self.operators.items()
            if not any(limit.kind == "absent" for limit in op.limits())
        ]

    def tolerances(self) -> dict[str, dict[str, dict[str, float]]]:
        """Operator -> dtype -> the tolerance fields it overrides (``CaseExecutor``'s)."""
        return {
            name: {
                dtype: {k: v for k, v in asdict(tol).items() if v is not None}
                for dtype, tol in op.tolerance.items()
            }
            for name, op in self.operators.items()
        }


# --- limits -------------------------------------------------------------------------------


def _condition_suffix(condition: Condition) -> str:
    return "".join(f"@{k}={','.join(str(v) for v in vs)}" for k, vs in condition.items())


def _dim_limits(
    dim: Dim, ident: str, common: dict[str, Any], rule: Mapping[str, Any], interval_kind: LimitKind
) -> Iterator[Limit]:
    """A dimension's interval (or value set) and its multiple-of rule, as separate limits."""
    if dim.interval is not None:
        yield Limit(ident, kind=interval_kind, interval=dim.interval, rule=rule, **common)
    if dim.values is not None:
        yield Limit(ident, kind="values", values=dim.values, rule=rule, **common)
    if dim.multiple_of is not None:
        steps = {
            "when_greater_than": dim.multiple_of.when_greater_than,
            "multiple_of": dim.multiple_of.multiple_of,
        }
        yield Limit(f"{ident}/multiple-of", kind="multiple-of", rule={**rule, **steps}, **common)


def _role_limits(op: Operator, role: Role, source: str) -> Iterator[Limit]:
    base = f"{op.name}/{role.name}"

    def common(subject: str, text: str) -> dict[str, Any]:
        return {
            "op": op.name,
            "role": role.name,
            "subject": subject,
            "text": text,
            "source": source,
        }

    for dim in role.dims.values():
        yield from _dim_limits(dim, f"{base}/{dim.name}", common(dim.name, dim.text), {}, "range")
    for p in role.products:
        subject = "*".join(p.factors)
        rule: dict[str, Any] = {"factors": p.factors, "less_than": p.less_than}
        if p.note:
            rule["note"] = p.note
        ident = f"{base}/{subject}{_condition_suffix(p.condition)}"
        yield Limit(
            ident, kind="product", condition=p.condition, rule=rule, **common(subject, p.text)
        )
    statements: tuple[tuple[LimitKind, str, Statement | None], ...] = (
        ("rank", "rank", role.rank),
        ("values", "values", role.value_set),
        ("quantization", "quantization", role.quantization),
    )
    for kind, subject, statement in statements:
        if statement is not None:
            yield Limit(
                f"{base}/{subject}",
                kind=kind,
                values=statement.values,
                **common(subject, statement.text),
            )
    if role.broadcasting is not None:
        b = role.broadcasting
        yield Limit(
            f"{base}/broadcast",
            kind="broadcast-support",
            rule={"arbitrary_dims": b.arbitrary_dims, "same_as": b.same_as},
            **common("broadcast", b.text),
        )


def _attribute_limits(op: Operator, attr: Attribute) -> Iterator[Limit]:
    base = f"{op.name}/attr/{attr.name}"
    common: dict[str, Any] = {
        "op": op.name,
        "role": "attr",
        "subject": attr.name,
        "source": op.source,
    }
    order = _element_names(attr.type)
    for name, dim in attr.elements.items():
        rule = {"element": name, "index": order.index(name)}
        yield from _dim_limits(dim, f"{base}/{name}", {**common, "text": dim.text}, rule, "range")
    text = attr.text or ""
    if attr.values is not None:
        yield Limit(base, kind="values", values=attr.values, text=text, **common)
    if attr.fixed is not None:
        nominal = {"nominal_values": attr.nominal_values, "nominal_range": attr.nominal_range}
        rule = {k: v for k, v in nominal.items() if v is not None}
        yield Limit(base, kind="fixed", values=(attr.fixed,), rule=rule, text=text, **common)
    if attr.unsupported:
        yield Limit(base, kind="unsupported", text=text, **common)
    if attr.layouts:
        yield Limit(
            base,
            kind="layout",
            values=tuple(attr.layouts),
            rule={
                "shapes": {k: v.shape for k, v in attr.layouts.items()},
                "requires": attr.requires,
            },
            text="\n".join(v.text for v in attr.layouts.values()),
            inconsistent="; ".join(
                f"{name}: {layout.inconsistent}"
                for name, layout in attr.layouts.items()
                if layout.inconsistent
            )
            or None,
            **common,
        )
    for value, constraint in attr.per_value.items():
        condition = {attr.name: (value,)}
        for dim in constraint.dims.values():
            yield from _dim_limits(
                dim,
                f"{op.name}/{constraint.applies_to}/{dim.name}{_condition_suffix(condition)}",
                {
                    "op": op.name,
                    "role": constraint.applies_to,
                    "subject": dim.name,
                    "text": dim.text,
                    "source": op.source,
                    "condition": condition,
                },
                {},
                "range",
            )


def _operator_limits(op: Operator) -> Iterator[Limit]:
    # Limits copied from a "Same as" operator name both sections.
    copied = f"{op.source} (same as § {op.same_as})" if op.same_as else op.source
    for role in op.roles:
        yield from _role_limits(op, role, copied)
    for tv in op.dtypes.values():
        users = tuple(r.name for r in op.roles if tv.name in r.types)
        yield Limit(
            f"{op.name}/dtype/{tv.name}",
            op=op.name,
            kind="dtype",
            role="dtype",
            subject=tv.name,
            values=tv.dtypes(),
            rule={"kinds": dict(tv.kinds), "roles": users},
            text=tv.text,
            source=copied,
            inconsistent=tv.inconsistent,
        )
    for attr in op.attributes.values():
        yield from _attribute_limits(op, attr)
    for form in op.broadcast_forms:
        for dim in form.dims.values():
            yield from _dim_limits(
                dim,
                f"{op.name}/broadcast/{form.source}->{form.target}/{dim.name}",
                {
                    "op": op.name,
                    "role": "broadcast",
                    "subject": dim.name,
                    "text": dim.text,
                    "source": op.source,
                },
                {"from": form.source, "to": form.target},
                "broadcast",
            )
    if op.multi_core.status != "not-stated":
        yield Limit(
            f"{op.name}/op/multi-core",
            op=op.name,
            kind="multi-core",
            role="op",
            subject="multi-core",
            values=(op.multi_core.status,),
            text=op.multi_core.text or "",
            source=op.source,
        )


def _element_names(type_text: str) -> list[str]:
    """``int64(kernel_h,kernel_w)`` -> ``["kernel_h", "kernel_w"]``."""
    match = re.search(r"\(([^)]*)\)", type_text)
    return [part.strip() for part in match[1].split(",")] if match else []


# --- loading ------------------------------------------------------------------------------


def _text(raw: str | list[str]) -> str:
    return raw if isinstance(raw, str) else "\n".join(raw)


def _optional_text(raw: str | list[str] | None) -> str | None:
    return None if raw is None else _text(raw)


class _Reader:
    """Turns the schema-valid document into the model, checking what a schema cannot."""

    def __init__(self, file: Path) -> None:
        self.file = file

    def fail(self, at: _Path, value: object, message: str) -> NoReturn:
        raise DataFileError(self.file, key_path(at), value, message)

    def interval(self, text: str, at: _Path) -> Interval:
        try:
            return Interval.parse(text)
        except ValueError as exc:
            self.fail(at, text, str(exc))

    def dim(self, name: str, raw: dict[str, Any], at: _Path) -> Dim:
        interval = self.interval(raw["range"], (*at, "range")) if "range" in raw else None
        rule = raw.get("rule")
        multiple_of = None
        if rule is not None:
            assert interval is not None  # the schema allows a rule only next to a range
            if rule["when_greater_than"] not in interval:
                self.fail(
                    (*at, "rule", "when_greater_than"),
                    rule["when_greater_than"],
                    f"outside the dimension's range {interval}",
                )
            multiple_of = MultipleOf(rule["when_greater_than"], rule["multiple_of"])
        values = tuple(raw["values"]) if "values" in raw else None
        return Dim(name, interval, values, multiple_of, _text(raw["text"]))

    def dims(
        self, raw: dict[str, Any], at: _Path, allowed: list[str], where: str
    ) -> dict[str, Dim]:
        for name in raw:
            if name not in allowed:
                self.fail((*at, name), name, f"not a dimension of {where}")
        return {name: self.dim(name, spec, (*at, name)) for name, spec in raw.items()}

    def role(self, raw: dict[str, Any], direction: Literal["input", "output"], at: _Path) -> Role:
        shape = raw.get("shape")
        names = _IDENTIFIER.findall(shape or "")
        products = []
        for i, p in enumerate(raw.get("products", [])):
            for j, factor in enumerate(p["factors"]):
                if factor not in names:
                    self.fail(
                        (*at, "products", i, "factors", j), factor, f"not a dimension of {shape}"
                    )
            condition = {k: tuple(v) for k, v in p.get("when", {}).items()}
            products.append(
                Product(
                    tuple(p["factors"]), p["less_than"], condition, p.get("note"), _text(p["text"])
                )
            )

        def statement(key: str, values_key: str) -> Statement | None:
            spec = raw.get(key)
            if spec is None:
                return None
            values = spec[values_key]
            return Statement(
                tuple(values) if isinstance(values, list) else (values,), _text(spec["text"])
            )

        b = raw.get("broadcasting")
        return Role(
            name=raw["name"],
            direction=direction,
            types=tuple(raw["types"]),
            optional=raw.get("optional", False),
            shape=shape,
            description=_optional_text(raw.get("description")),
            dims=self.dims(raw.get("dims", {}), (*at, "dims"), names, f"shape {shape}"),
            products=tuple(products),
            rank=statement("rank", "equals"),
            value_set=statement("value_set", "values"),
            quantization=statement("quantization", "schemes"),
            broadcasting=Broadcasting(b["arbitrary_dims"], b.get("same_as"), _text(b["text"]))
            if b
            else None,
        )

    def attribute(self, name: str, raw: dict[str, Any], roles: list[Role], at: _Path) -> Attribute:
        elements = raw.get("elements", {})
        values = tuple(raw["values"]) if "values" in raw else None
        nominal = tuple(raw["nominal_values"]) if "nominal_values" in raw else None
        if "fixed" in raw and nominal is not None and raw["fixed"] not in nominal:
            self.fail((*at, "fixed"), raw["fixed"], f"not one of nominal_values {list(nominal)}")
        per_value = {}
        for value, spec in raw.get("per_value", {}).items():
            where = (*at, "per_value", value)
            if values is None or value not in values:
                self.fail(where, value, f"not one of the attribute's values {list(values or ())}")
            target = spec.get("applies_to")
            role = next((r for r in roles if r.name == target), None)
            if target is not None and role is None:
                self.fail((*where, "applies_to"), target, "not a tensor role of this operator")
            names = _IDENTIFIER.findall(role.shape or "") if role else []
            per_value[value] = ValueConstraint(
                applies_to=target,
                dims=self.dims(spec.get("dims", {}), (*where, "dims"), names, f"role {target}"),
                no_limitation=spec.get("no_limitation", False),
                text=_text(spec["text"]),
            )
        return Attribute(
            name=name,
            type=raw["type"],
            extern=raw.get("extern", False),
            default=raw.get("default"),
            description=_optional_text(raw.get("description")),
            values=values,
            elements=self.dims(
                elements, (*at, "elements"), _element_names(raw["type"]), f"type {raw['type']}"
            ),
            fixed=raw.get("fixed"),
            nominal_values=nominal,
            nominal_range=raw.get("nominal_range"),
            unsupported=raw.get("unsupported", False),
            layouts={
                k: Layout(v["shape"], _text(v["text"]), v.get("inconsistent"))
                for k, v in raw.get("layouts", {}).items()
            },
            requires=tuple(raw.get("requires", ())),
            recommended_multiple_of=raw.get("recommended_multiple_of"),
            per_value=per_value,
            text=_optional_text(raw.get("text")),
        )

    def broadcast_form(self, raw: dict[str, Any], at: _Path) -> BroadcastForm:
        source, target = (
            _IDENTIFIER_OR_ONE.findall(raw["from"]),
            _IDENTIFIER_OR_ONE.findall(raw["to"]),
        )
        if len(source) != len(target):
            self.fail((*at, "from"), raw["from"], f"rank differs from {raw['to']}")
        dims = self.dims(raw["dims"], (*at, "dims"), target, f"target {raw['to']}")
        for name in dims:
            if source[target.index(name)] != "1":
                self.fail((*at, "dims", name), name, f"not broadcast (size 1) in {raw['from']}")
        text = "\n".join(dict.fromkeys(d.text for d in dims.values()))
        return BroadcastForm(raw["from"], raw["to"], dims, text)

    def operator(
        self, name: str, raw: dict[str, Any], seed: str, copy_from: Operator | None
    ) -> Operator:
        at: _Path = ("operators", name)
        if copy_from is not None:
            inputs, outputs, dtypes = copy_from.inputs, copy_from.outputs, copy_from.dtypes
        else:
            inputs = tuple(
                self.role(r, "input", (*at, "inputs", i)) for i, r in enumerate(raw["inputs"])
            )
            outputs = tuple(
                self.role(r, "output", (*at, "outputs", i)) for i, r in enumerate(raw["outputs"])
            )
            dtypes = {
                tv: TypeVariable(
                    tv, dict(spec["options"]), _text(spec["text"]), spec.get("inconsistent")
                )
                for tv, spec in raw["dtypes"].items()
            }
        roles = list(inputs + outputs)
        attributes = {
            a: self.attribute(a, spec, roles, (*at, "attributes", a))
            for a, spec in raw.get("attributes", {}).items()
        }
        if copy_from is None:  # copied roles were checked where they are written
            for where, role in _located_roles(at, inputs, outputs):
                self.check_role(where, role, dtypes, attributes)
        documented = {d for tv in dtypes.values() for d in tv.kinds}
        tolerance = {}
        for dtype, spec in raw.get("tolerance", {}).items():
            if dtype not in documented:
                self.fail((*at, "tolerance", dtype), dtype, f"not a documented dtype of {name}")
            tolerance[dtype] = Tolerance(spec.get("atol"), spec.get("rtol"), spec.get("min_cosine"))
        mc = raw.get("multi_core")
        return Operator(
            name=name,
            section=raw["section"],
            source=f"{seed} § {raw['section']}",
            description=_optional_text(raw.get("description")),
            equations=tuple(raw.get("equations", ())),
            same_as=copy_from.name if copy_from else None,
            inputs=inputs,
            outputs=outputs,
            dtypes=dtypes,
            attributes=attributes,
            broadcast_forms=tuple(
                self.broadcast_form(f, (*at, "broadcast_forms", i))
                for i, f in enumerate(raw.get("broadcast_forms", []))
            ),
            multi_core=MultiCore(mc["status"], _text(mc["text"]))
            if mc
            else MultiCore("not-stated", None),
            tolerance=tolerance,
        )

    def check_role(
        self,
        at: _Path,
        role: Role,
        dtypes: Mapping[str, TypeVariable],
        attributes: Mapping[str, Attribute],
    ) -> None:
        """Type variables must be defined; conditions must name attribute values that exist."""
        for j, tv in enumerate(role.types):
            if tv not in dtypes:
                self.fail((*at, "types", j), tv, "type variable not defined under dtypes")
        for j, product in enumerate(role.products):
            for attr, values in product.condition.items():
                spot = (*at, "products", j, "when", attr)
                allowed = attributes[attr].values if attr in attributes else None
                if allowed is None:
                    self.fail(
                        spot, attr, "not an attribute of this operator with documented values"
                    )
                for value in values:
                    if value not in allowed:
                        self.fail(spot, value, f"not one of {attr}'s values {list(allowed)}")

    def check_broadcasting(self, at: _Path, role: Role, operators: Mapping[str, Operator]) -> None:
        target = role.broadcasting.same_as if role.broadcasting else None
        if target is not None and not (target in operators and operators[target].broadcast_forms):
            self.fail(
                (*at, "broadcasting", "same_as"), target, "not an operator with broadcast_forms"
            )


def _located_roles(
    at: _Path, inputs: tuple[Role, ...], outputs: tuple[Role, ...]
) -> Iterator[tuple[_Path, Role]]:
    """Each role with its key path in the file."""
    for key, roles in (("inputs", inputs), ("outputs", outputs)):
        for i, role in enumerate(roles):
            yield (*at, key, i), role


def load_operators(path: Path, platforms: Collection[str]) -> OperatorCatalogue:
    """Load and check the operator catalogue at ``path``, a catalogue of one of ``platforms``
    (its vendor's)."""
    document = load_validated(path, SCHEMA_PATH)
    reader = _Reader(path)
    if document["platform"] not in platforms:
        reader.fail(
            ("platform",),
            document["platform"],
            f"is not a platform of the file's vendor (its platforms: {', '.join(platforms)})",
        )
    seed = document["source"]["file"]
    raw_ops: dict[str, Any] = document["operators"]
    # Operators documented on their own first, so that "Same as" can copy from them.
    own = {
        n: reader.operator(n, raw, seed, None) for n, raw in raw_ops.items() if "same_as" not in raw
    }
    operators: dict[str, Operator] = {}
    for name, raw in raw_ops.items():
        if name in own:
            operators[name] = own[name]
            continue
        target = raw["same_as"]["operator"]
        if target not in own:
            reader.fail(
                ("operators", name, "same_as", "operator"),
                target,
                "not an operator documented in this file (without same_as)",
            )
        operators[name] = reader.operator(name, raw, seed, own[target])
    for name, op in own.items():
        for where, role in _located_roles(("operators", name), op.inputs, op.outputs):
            reader.check_broadcasting(where, role, operators)
    catalogue = OperatorCatalogue(
        sdk=document["sdk"],
        platform=document["platform"],
        source=Source(**document["source"]),
        operators=operators,
    )
    seen: set[str] = set()
    for limit in catalogue.limits():
        if limit.id in seen:
            reader.fail(("operators", limit.op), limit.id, "two limits share this id")
        seen.add(limit.id)
    return catalogue
