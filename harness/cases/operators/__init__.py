"""Test cases from the operator catalogue: each documented limit probed at and beyond its bounds.

For every limit the generator proposes parameter variants of the operator's typical model
(``Declarations.defaults``): each bound of a range and the first value outside it
(8192 and 8193 for ``(0,8192]``), the neighbours of a "multiples of 4" rule (1, 4, 8 and 3,
5), every allowed value plus a documented-absent one (Pow exponent 4), products either side
of their cap (Hardmax h*w = 16383 and 16384), the values a formula allows alone (h*w = 1 of
"h*w = 1 or h*w > 8") and one above. Whether a variant is documented as supported
is not decided by the proposer but by ``documented_status``, which checks the variant's
subjects against *every* limit of the operator; so a pad of 7 that needs a kernel of 8 is
honestly "outside" (because of the kernel). Each case expects a placement (on the NPU when
documented supported; CPU fallback or rejection when outside), for int8 the precision asked,
and a result matching the host reference.

A probe should cross only the bound it probes. Where a range's bound value cannot be had
alone (ONNX wants a pad below the kernel), the generator adds the nearest value that can (a
pad of 6 with a kernel of 7; a GRU batch of 8196, outside the range yet a multiple of 4), and
every case records the limit deciding its status and, when not isolable, what else it needs
(``Case.deciding_limit``, ``Case.not_isolable``). A probe that makes the model large keeps
the dimensions it does not probe small (``shrunk``): the toolkit takes minutes to build an
8M-element Transpose whose bound is on one dimension.

A case exercises what its rule names (``harness.cases.validity``): a proposal that would not
(a Transpose moving an axis of 1, a softmax over one element) is repaired where it can be
(``exercised``), else listed as unprobed with the reason, never made a case.

The generator names no operator: what a limit's subject is in a model's parameters, which
values off a documented set a model can still take, which limits it cannot express and why,
all come from the operator model's declaration (``Declarations.probing`` of the run's
vendor: the neutral operators' and its own).

Every case exists once per dtype the operator documents, plus its typical model in each
dtype it does not document (an "outside" case, e.g. int8 Div). Limits that a tiny model on
the simulator cannot probe are returned as ``Untested`` with the reason, so reports can
account for every documented limit.

One module per concern: ``status`` (the documented status), ``variant``, ``proposals``,
``products`` and ``formulas`` (the variants a limit proposes), ``repairs`` (shrunk and
exercised), ``expectations``, ``generator`` (``operator_cases``, ``variant_case``) and
``search`` (single variants for ``harness.probe``).
"""

from harness.cases.operators.generator import operator_cases
from harness.cases.operators.status import DTYPES

__all__ = ["DTYPES", "operator_cases"]
