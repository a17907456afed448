"""The one Limit vocabulary every vendor document is read into.

A ``Limit`` is one documented, countable constraint with the document's verbatim text and its
source; what case generation and the reports count. The operator tables
(``harness.documented.operators``) fill the structured fields (the operator, tensor role,
subject, interval or value set, condition, rule); a vendor's model I/O tables
(its catalogue package) name the platform group and keep the cell text,
which their own rules parse.

Kinds (closed vocabulary, ``LIMIT_KINDS``). Operator tables:

- ``range``: ``subject`` must lie in ``interval`` (a dimension; an attribute element, named in
  ``rule["element"]`` with its position ``rule["index"]``; or a dimension that applies only
  under ``condition``, e.g. Pad ``data`` width when mode is reflect).
- ``multiple-of``: above ``rule["when_greater_than"]`` only multiples of
  ``rule["multiple_of"]`` are supported.
- ``values``: ``subject`` takes only one of ``values`` (a dimension, an attribute, or the
  values of a constant input such as Pow's exponent, subject ``values``; an operator's
  ``axis``; ``axes[i]``, each element of a list attribute).
- ``fixed``: a feature "currently limited to" the single value in ``values``; ``rule`` holds
  the nominal values or range it overrides.
- ``unsupported``: the attribute's feature is documented as not supported (ceil_mode).
- ``product``: the product of ``rule["factors"]`` dimensions is below ``rule["less_than"]``.
- ``rank``: the tensor's rank is the single value in ``values``.
- ``dtype``: a type variable's data types (``values``), with each one's kind (Tensor,
  constTensor, Scalar) and the roles using it in ``rule``.
- ``quantization``: the quantization schemes (``values``) a tensor role supports.
- ``broadcast-support``: a role broadcasts along arbitrary dimensions, under the constraints
  of ``rule["same_as"]``; ``rule["when_feature_on"]``: the only shapes left while an optional
  feature is on (an attention mask with FlashAttentionV2, "FA").
- ``broadcast``: a broadcasting form ``rule["from"] -> rule["to"]`` with ``subject`` in
  ``interval``.
- ``layout``: the layouts (``values``) an attribute accepts; their shapes in ``rule``.
- ``multi-core``: the documented multi-core status (``values``), when the document states one.
- ``feature``: an optional feature of the operator (an attention's FlashAttentionV2,
  ``values``: ``supported``) or, under ``condition`` that it is on, what it supports (subject
  ``dtype``: its data types).

Operator lists (whole vendor documents, ``harness.documented.documents``) add:

- ``product`` and ``formula`` over named dimensions with named constants (``h1*w1<16*p``,
  ``rule["constants"]`` ``{"p": 8192}``), possibly only under ``condition``
  (``{"perm": ["[0,1,3,2]"], "type": ["T1"]}``) or ``rule["when"]``;
  ``rule["unsupported_when"]`` marks a comparison the document says is not supported.
- ``enum``: an attribute's named options (``values``).
- ``no-limit``: the document says there is none (无限制).
- ``absent``: the operator has no entry for this platform group, though others have one;
  or (``rule["unsupported"]``) its entry says only that it is not supported there (RK2118
  AveragePool: "不支持"). Either way its models are expected on the CPU or refused.
- ``free-text``: kept as the document's words only, ``rule["reason"]`` says why.

Model I/O tables: ``input`` and ``output`` (an alignment table row), ``condition`` (a width
bound of a convolution condition), ``n_formula`` and ``n_range`` (the N of the width bounds),
``note`` and ``remark`` (numbered notes and remarks on them), ``formula`` (the dilated-kernel
formulas).

A limit the document contradicts itself on carries the reason in ``inconsistent``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from harness.documented.intervals import Interval

LimitKind = Literal[
    # operator tables
    "range",
    "multiple-of",
    "values",
    "fixed",
    "unsupported",
    "product",
    "rank",
    "dtype",
    "quantization",
    "broadcast-support",
    "broadcast",
    "layout",
    "multi-core",
    "feature",
    # operator lists
    "formula",
    "enum",
    "no-limit",
    "absent",
    "free-text",
    # model I/O tables
    "input",
    "output",
    "condition",
    "n_formula",
    "n_range",
    "note",
    "remark",
]
LIMIT_KINDS: tuple[str, ...] = get_args(LimitKind)

Scalar = int | float | str
Condition = Mapping[str, tuple[Scalar, ...]]


@dataclass(frozen=True)
class Limit:
    """One documented limit: what case generation turns into cases and reports count."""

    id: str
    kind: LimitKind
    text: str  # the document's line(s), verbatim, joined by newlines
    source: str  # the document and its section
    op: str = ""  # the operator it constrains (operator tables)
    group: str | None = None  # the platform group (model I/O tables; None: general notes)
    role: str = ""  # tensor role, "attr", "dtype", "broadcast" or "op" (operator tables)
    subject: str = ""  # the dimension, attribute or type variable constrained
    interval: Interval | None = None
    values: tuple[Scalar, ...] | None = None
    condition: Condition = field(default_factory=dict, hash=False)
    rule: Mapping[str, Any] = field(default_factory=dict, hash=False)
    inconsistent: str | None = None  # why the document contradicts itself on this limit
    page: int | None = None  # the printed page of the document (operator lists)

    @property
    def structured(self) -> bool:
        """Read into fields, not kept as words only (``free-text``)."""
        return self.kind != "free-text"
