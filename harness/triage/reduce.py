"""Reducing a failing model to the smallest one that still fails the same way.

Each candidate is a sub-model of the original between tensors (``sub_model``), run as a case
of kind ``reduce`` with its own step number, so every step's model, arrays and verdict stay in
the results. A graph input of a candidate that was an intermediate tensor is fed its host
value on the original inputs. The order, as Polygraphy's ``debug reduce`` does it:

1. with several graph outputs, keep the first one that fails alone;
2. suffix cut: bisect over the nodes the output depends on for the earliest node whose output
   still fails (a model ending there);
3. prefix cut: bisect over the tensors every path to that output passes through for the
   latest one that, made the only input, still fails;
4. branch removal: for each remaining node but the last, in graph order, turn its outputs
   into inputs (dropping the branch feeding it) and keep the change if it still fails, until
   nothing changes.

The bisections assume that failing is monotone along the graph (a wrong tensor stays wrong
downstream); where it is not, the greedy step 4 still only keeps failing models.

"The same way" is the verdict and its kind (``failure_kind``): a wrong result, a CPU fallback
(of a layer type that fell back in the original), a build failure or a runtime failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import onnx

from harness.modelfiles.graph import Cutter, graph_inputs, tensor_values
from harness.modelfiles.prepare import PreparedModel, opset_of, prepare
from harness.results.records import CaseRecord
from harness.triage.runner import ModelRunner


@dataclass(frozen=True)
class Failure:
    """How a case failed: what a reduced model must still show."""

    verdict: str
    kind: str  # "wrong-result", "cpu-fallback", "build-failure", "runtime-failure", ...
    cpu_ops: frozenset[str] = frozenset()  # the layer types that fell back, for cpu-fallback

    def shown_by(self, record: CaseRecord) -> bool:
        other = failure_of(record)
        if other is None or (other.verdict, other.kind) != (self.verdict, self.kind):
            return False
        return self.kind != "cpu-fallback" or bool(self.cpu_ops & other.cpu_ops)


_KINDS = (
    ("CPU fallback", "cpu-fallback"),
    ("precision fallback", "precision-fallback"),
    ("build failed", "build-failure"),
    ("build aborted", "build-failure"),  # the compiler's own abort (the vendor judge reads it)
    ("runtime failed", "runtime-failure"),
)


def failure_of(record: CaseRecord) -> Failure | None:
    """The failure a record shows, None for a passing (or undecided) one."""
    if record.verdict == "wrong-result":
        return Failure("wrong-result", "wrong-result")
    if record.verdict != "violation":
        return None
    kind = next((kind for text, kind in _KINDS if text in record.detail), "violation")
    cpu = frozenset(
        str(layer.get("op"))
        for layer in record.placement
        if not layer.get("io") and str(layer.get("target", "")).upper() == "CPU"
    )
    return Failure(record.verdict, kind, cpu)


@dataclass
class Step:
    """One candidate tried."""

    number: int
    what: str  # the cut, e.g. "suffix: output conv_out (node 3)"
    nodes: int
    record: CaseRecord
    kept: bool


@dataclass
class Reduction:
    original: CaseRecord
    failure: Failure
    steps: list[Step] = field(default_factory=list)
    smallest: CaseRecord | None = None  # the smallest model still failing (original if none)
    smallest_nodes: int = 0
    smallest_model: PreparedModel | None = None  # its model (None: the original's)


class Reducer:
    """Shrinks ``prepared`` (which failed as ``original`` records) with ``runner``."""

    def __init__(self, runner: ModelRunner, prepared: PreparedModel, original: CaseRecord) -> None:
        failure = failure_of(original)
        if failure is None:
            raise ValueError(
                f"{original.id}: verdict {original.verdict} is not a failure; nothing to reduce"
            )
        self.runner = runner
        self.prepared = prepared
        self.model = prepared.model
        self._cutter = Cutter(self.model)
        missing = [name for name in prepared.input_names if name not in prepared.given]
        if missing:  # the cuts are fed values computed from the inputs the original ran on
            raise ValueError(f"{original.id}: the inputs it ran on are needed; missing {missing}")
        self.feeds = dict(prepared.given)
        self.reduction = Reduction(original, failure, smallest=original)
        self.reduction.smallest_nodes = len(self.model.graph.node)
        self._values: dict[str, np.ndarray] = {}

    def reduce(self) -> Reduction:
        inputs, outputs = graph_inputs(self.model), [o.name for o in self.model.graph.output]
        if len(outputs) > 1:
            outputs = next(
                ([out] for out in outputs if self._fails(inputs, [out], f"output {out} alone")),
                outputs,
            )
        outputs = self._suffix(inputs, outputs)
        inputs = self._prefix(inputs, outputs)
        self._branches(inputs, outputs)
        return self.reduction

    # -- the cuts ------------------------------------------------------------------------

    def _suffix(self, inputs: list[str], outputs: list[str]) -> list[str]:
        if len(outputs) != 1:
            return outputs
        current = self._cutter.cut(inputs, outputs)
        if current is None:
            return outputs
        candidates = [node.output[0] for node in current.graph.node if node.output[0]]
        cut = self._bisect(
            candidates[:-1],
            lambda t: self._fails(inputs, [t], f"suffix: output {t}"),
            earliest=True,
        )
        return [cut] if cut is not None else outputs

    def _prefix(self, inputs: list[str], outputs: list[str]) -> list[str]:
        current = self._cutter.cut(inputs, outputs)
        if current is None:
            return inputs
        # tensors every path to the outputs passes through: alone they cut the model off
        candidates = [
            node.output[0]
            for node in current.graph.node[:-1]
            if node.output[0] and self._cutter.cut([node.output[0]], outputs) is not None
        ]
        cut = self._bisect(
            candidates, lambda t: self._fails([t], outputs, f"prefix: input {t}"), earliest=False
        )
        return [cut] if cut is not None else inputs

    def _branches(self, inputs: list[str], outputs: list[str]) -> None:
        changed = True
        while changed:
            changed = False
            current = self._cutter.cut(inputs, outputs)
            if current is None or len(current.graph.node) <= 1:
                return
            for node in current.graph.node[:-1]:
                made = [name for name in node.output if name]
                trial = [*inputs, *made]
                candidate = self._cutter.cut(trial, outputs)
                if candidate is None or len(candidate.graph.node) >= len(current.graph.node):
                    continue
                kept_inputs = graph_inputs(candidate)
                if self._fails(kept_inputs, outputs, f"branch: {', '.join(made)} made inputs"):
                    inputs, changed = kept_inputs, True
                    break

    def _bisect(
        self, candidates: list[str], fails: Callable[[str], bool], earliest: bool
    ) -> str | None:
        """The earliest (or latest) candidate that fails, by bisection; None if none does."""
        lo, hi, found = 0, len(candidates) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            if fails(candidates[mid]):
                found = candidates[mid]
                lo, hi = (lo, mid - 1) if earliest else (mid + 1, hi)
            else:
                lo, hi = (mid + 1, hi) if earliest else (lo, mid - 1)
        return found

    # -- one candidate -------------------------------------------------------------------

    def _fails(self, inputs: list[str], outputs: list[str], what: str) -> bool:
        """Run the sub-model from ``inputs`` to ``outputs`` as the next step; True if it shows
        the original failure (it then becomes the smallest when it is smaller)."""
        candidate = self._cutter.cut(inputs, outputs)
        if candidate is None:
            return False
        number = len(self.reduction.steps) + 1
        prepared = self._prepared(candidate, number)
        record = self.runner.run(prepared, kind="reduce")
        kept = self.reduction.failure.shown_by(record)
        nodes = len(candidate.graph.node)
        self.reduction.steps.append(Step(number, what, nodes, record, kept))
        if kept and nodes < self.reduction.smallest_nodes:
            self.reduction.smallest, self.reduction.smallest_nodes = record, nodes
            self.reduction.smallest_model = prepared
        return kept

    def _prepared(self, candidate: onnx.ModelProto, number: int) -> PreparedModel:
        names = graph_inputs(candidate)
        given = {name: self._value(name) for name in names}
        where = f"{self.prepared.name} step {number}"
        # a part of the prepared model, at its opset (the vendor's ceiling at most)
        ceiling = opset_of(self.prepared.model)
        name = f"{self.prepared.name}/step{number:02d}"
        prepared = prepare(candidate, name, where, given=given, max_opset=ceiling)
        changes = [*self.prepared.changes, f"reduced from {self.prepared.name}: step {number}"]
        return replace(prepared, changes=changes, source=self.prepared.source)

    def _value(self, name: str) -> np.ndarray:
        if name in self.feeds:
            return self.feeds[name]
        if not self._values:
            produced = [out for node in self.model.graph.node for out in node.output if out]
            self._values = tensor_values(self.model, self.feeds, produced)
        return self._values[name]


def reduce_model(runner: ModelRunner, prepared: PreparedModel, original: CaseRecord) -> Reduction:
    """Reduce ``prepared``, whose run gave ``original``; see the module doc."""
    return Reducer(runner, prepared, original).reduce()


def format_steps(reduction: Reduction) -> str:
    lines = [f"{'step':>4}  {'nodes':>5}  {'verdict':15} {'kept':5} cut"]
    lines += [
        f"{s.number:>4}  {s.nodes:>5}  {s.record.verdict:15} {'yes' if s.kept else 'no':5} {s.what}"
        for s in reduction.steps
    ]
    smallest = reduction.smallest
    if smallest is not None:
        lines.append(
            f"smallest failing model: {reduction.smallest_nodes} nodes, case {smallest.id}"
        )
    return "\n".join(lines) + "\n"
