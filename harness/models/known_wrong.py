"""Host references known wrong for an operator at some opsets (``wrong-references.yaml``).

A reference that computes an operator wrongly gives a wrong second opinion on every model that
holds it: with two references, a right NPU looks like a reference disagreement; with one, like
a wrong result. Such a reference is not run on such a model (``wrong_for``), and the
comparison rests on the other. The data names the reference, the operator, the opsets and why;
each entry's test shows the reference is still wrong there.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import onnx

from harness.safe_yaml import DataFileError, load_yaml

PATH = Path(__file__).with_name("wrong-references.yaml")
# part of the reference cache's key: an entry added or dropped changes what is computed
DIGEST = hashlib.sha256(PATH.read_bytes()).hexdigest()[:16]


@dataclass(frozen=True)
class WrongReference:
    reference: str  # a registered host reference's name (``reference.HOST_REFERENCES``)
    op: str  # an operator of the default ONNX domain
    first: int  # the opsets it is wrong at, inclusive
    last: int
    why: str


@functools.cache
def wrong_references() -> tuple[WrongReference, ...]:
    entries = []
    for index, raw in enumerate(load_yaml(PATH)):
        try:
            first, last = (int(opset) for opset in raw["opsets"])
            entries.append(WrongReference(raw["reference"], raw["op"], first, last, raw["why"]))
        except (KeyError, TypeError, ValueError) as exc:
            message = "needs reference, op, opsets [first, last] and why"
            raise DataFileError(PATH, f"[{index}]", raw, f"{message} ({exc})") from None
    return tuple(entries)


def wrong_for(model: onnx.ModelProto, reference: str) -> str | None:
    """Why ``reference`` is known wrong for a node of ``model`` (at the model's opset of the
    default domain), or None. Nodes inside subgraphs count too."""
    opset = default_opset(model)
    ops = set(op_types(model.graph))
    for entry in wrong_references():
        if entry.reference == reference and entry.op in ops and entry.first <= opset <= entry.last:
            return f"known wrong for {entry.op} at opset {opset}: {entry.why}"
    return None


def default_opset(model: onnx.ModelProto) -> int:
    """The model's opset of the default ONNX domain (0: none imported)."""
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def op_types(graph: onnx.GraphProto) -> list[str]:
    """The default-domain operators of ``graph`` and its subgraphs."""
    found = []
    for node in graph.node:
        if node.domain in ("", "ai.onnx"):
            found.append(node.op_type)
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
                found += op_types(sub)
    return found
