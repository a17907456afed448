"""The Acme X1 ``Vendor`` record: one platform, its three documented operators, and a
simulator that is onnxruntime standing in for Acme's (``StandIn``).

The stand-in computes Max wrongly on purpose (its outputs negated), so that a run has a
failing case and bundles it: Acme's recipe writes no reproduce script, so the bundle's README
says how to rerun the model with the vendor's own tools.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import onnxruntime

from harness.documented.operators import OperatorCatalogue, load_operators
from harness.documented.properties import PLACEMENT, RESULT
from harness.targets.job import Job
from harness.targets.observation import Observation
from harness.vendors.base import Vendor

PLATFORMS = ("acme-x1",)
TABLE = Path(__file__).with_name("acme-x1-operators.yaml")
WRONG = "Max"  # the operator the stand-in gets wrong


def operators(platform: str) -> OperatorCatalogue:
    return load_operators(TABLE, PLATFORMS)


class StandIn:
    """onnxruntime on the host as Acme's simulator: every layer placed on the NPU."""

    observes = frozenset({PLACEMENT, RESULT})

    def run(self, job: Job) -> Observation:
        model = onnx.load_from_string(job.model)
        try:
            session = onnxruntime.InferenceSession(job.model, providers=["CPUExecutionProvider"])
        except Exception as exc:  # the stand-in's compiler refuses the model
            return Observation(
                "simulator", failed_stage="build", error=str(exc), observes=self.observes
            )
        names = [feed.name for feed in session.get_inputs()]
        outputs = session.run(None, dict(zip(names, job.inputs, strict=True)))
        if any(node.op_type == WRONG for node in model.graph.node):
            outputs = [np.negative(out) for out in outputs]
        placement = [
            {"op": node.op_type, "target": "NPU", "name": node.name or node.op_type}
            for node in model.graph.node
        ]
        return Observation(
            "simulator", outputs=list(outputs), placement=placement, observes=self.observes
        )


@contextlib.contextmanager
def simulator(timeout_s: float, cache: Path | None, sdk: str | None) -> Iterator[StandIn]:
    yield StandIn()


VENDOR = Vendor(
    name="acme",
    platforms=PLATFORMS,
    documents=dict,
    operators=operators,
    versions=lambda: {"acme_npu": "0.1.0"},
    simulator=simulator,
    library_names=("acme_npu",),
)
