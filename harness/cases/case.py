"""The one case type every case source yields, with the expectations it is judged by.

A case names the model to run (``op`` and ``params``) and carries its ``expects``: per
documented property, what the documentation says and the value an observer compares with.
Judging reads these expectations; it never regenerates them from the catalogue.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.documented.limits import Limit

DOCUMENTED = ("supported", "outside")


@dataclass(frozen=True)
class Expect:
    """One documented property as a case probes it."""

    prop: str
    limits: tuple[str, ...]  # catalogue limit ids the documented value comes from
    documented: str  # the documentation's statement, as the record shows it
    value: Any = None  # what the observer compares with
    # "<limit id>: <reason>" for each of ``limits`` (and the limits the case breaks) that the
    # catalogue marks as contradicted by the document itself: the judge does not reload it.
    inconsistent: tuple[str, ...] = ()


@dataclass(frozen=True)
class Control:
    """The case another case is judged against: the same operator on the same platform, at
    the documented edge of the limit the case probes (or the operator's typical model), so
    that what differs between the two observations is what the case's own value did."""

    id: str
    dtype: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One model to run: an operator, a dtype and parameters probing one or more limits."""

    id: str
    platform: str
    op: str
    dtype: str
    limit: str  # the first limit this case probes
    value: str  # what is probed, e.g. "batch_size=3"
    documented: str  # "supported" or "outside"
    params: dict[str, Any]
    seed: int
    source: dict[str, str]
    layer_types: tuple[str, ...]
    limits: tuple[str, ...] = ()  # every limit whose probe produced these parameters
    outside_because: tuple[str, ...] = ()  # limit ids the parameters break
    expects: tuple[Expect, ...] = ()  # one per documented property the case is judged on
    # Of ``outside_because``, the limit whose bound decides the documented status: the bound
    # the case probes if its parameters break it, else the limit they do break ("" inside).
    deciding_limit: str = ""
    # Why the parameters also cross limits besides the probed bound, e.g. "needs kernel_h=8"
    # (ONNX wants a pad below the kernel); "" when the bound is probed alone.
    not_isolable: str = ""
    # A user's own model and inputs: anything that keeps it from being prepared or judged is a
    # record (bad input, or infrastructure), where for a generated case it is a harness bug.
    from_user: bool = False
    # The inside control this case is judged against (``harness.cases.controls``): None for
    # the operator's first typical case and for cases no document judges by a control.
    control: Control | None = None
    # (layer type, why) of the CPU layers a whole model may have without a fallback: those
    # the toolkit keeps on the CPU by design and the document lets the platform's CPU run
    # (``Vendor.cpu_allowed``); a user's model's only
    cpu_allowed: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.documented not in DOCUMENTED:
            raise ValueError(f"documented must be one of {DOCUMENTED}, got {self.documented!r}")


@dataclass(frozen=True)
class Untested:
    limit: Limit
    reason: str


@dataclass
class CaseSet:
    cases: list[Case] = field(default_factory=list)
    unprobed: list[Untested] = field(default_factory=list)


def case_seed(case_id: str) -> int:
    """A case's seed from the text that names what it runs (its id; ``model_seed``'s model):
    stable across runs and machines."""
    return int(hashlib.sha256(case_id.encode()).hexdigest()[:8], 16)


def model_seed(op: str, params: Mapping[str, Any]) -> int:
    """The seed of an operator case: its model's (operator and parameters), whatever its dtype
    or platform, so that the cases of one model are fed the same data and share its host
    references (a cold run computes them once a model, not once a dtype and platform)."""
    return case_seed(f"{op} {json.dumps(params, sort_keys=True)}")
