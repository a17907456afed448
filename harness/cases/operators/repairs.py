"""A proposed variant made fit to be a case: its bystanders shrunk when it is large, and grown
where a dimension of 1 would leave its rule unexercised."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from harness.cases.operators.products import product_moves
from harness.cases.operators.status import DTYPES, documented_status
from harness.cases.operators.variant import Variant, builds, element_count
from harness.cases.validity import Degenerate, deciding_dims, degeneracy, limit_subjects
from harness.documented.limits import Limit
from harness.documented.operators import DocumentedOperator
from harness.models import Declarations
from harness.models.budget import size_budget

LARGE = 1 << 20  # elements (4 MiB of float32) above which a case's bystanders are shrunk


def shrunk(
    models: Declarations,
    op: DocumentedOperator,
    limits: Sequence[Limit],
    limit: Limit,
    variant: Variant,
) -> Variant:
    """``variant``, when over ``LARGE`` elements, with the model's shrinkable dimensions it does
    not probe halved, down to 2: the probed subjects keep their values and every dtype its
    documented status (a Transpose at n1=8192 becomes [8192, 2, 2, 2], not 8M elements,
    whose build takes the toolkit minutes; h1 stays 16 where the perm wants h1%16=0)."""
    declared = models.probing[op.name]
    params = variant.params
    if not declared.shrinkable or element_count(models, op.name, params) <= LARGE:
        return variant
    named = limit_subjects(limit)
    start = _judged(models, op, limits, named, params)
    for name in declared.shrinkable:
        if name in named:
            continue
        while (value := models.subjects(op.name, params)[name]) > 2:
            smaller = models.with_subject(op.name, params, name, max(2, value // 2))
            if _judged(models, op, limits, named, smaller) != start or not builds(
                models, op.name, json.dumps(smaller, sort_keys=True)
            ):
                break
            params = smaller
    return variant._replace(params=params)


def _judged(
    models: Declarations,
    op: DocumentedOperator,
    limits: Sequence[Limit],
    named: set[str],
    params: Mapping[str, Any],
) -> tuple[dict[str, Any], list[tuple[str, ...]]]:
    """What a resized model must keep: the ``named`` subjects' values and, in every dtype,
    the limits it breaks."""
    found = models.subjects(op.name, params)
    dtypes = list(dict.fromkeys((*op.data_dtypes(), *DTYPES)))
    held = {name: found.get(name) for name in named}
    return held, [documented_status(models, op, limits, dtype, found) for dtype in dtypes]


def exercised(
    models: Declarations,
    op: DocumentedOperator,
    limits: Sequence[Limit],
    limit: Limit | None,
    variant: Variant,
) -> Variant | Degenerate:
    """``variant``, probing ``limit``, made to exercise what its rule names
    (``harness.cases.validity``), breaking in every dtype no limit it did not break and
    ``limit`` as it did: where it is degenerate, each dimension of size 1 it does not probe
    that decides it (``validity.deciding_dims``) grown to 2 (a Transpose's batch of 1 that its
    perm moves, a softmax's batch of 1 at axis 0); where a product's factor of 1
    is what it probes (a prime 8191 is 1*8191 only), the nearest product on the same side of
    the cap whose factors are all 2 or more (``product_moves``). Else why it stays
    degenerate."""
    probed = [limit] if limit is not None else []
    found = degeneracy(models, op.name, variant.params, probed)
    if found is None:
        return variant
    named = limit_subjects(limit) if limit is not None else set()
    start = _judged(models, op, limits, named, variant.params)[1]

    def kept(params: Mapping[str, Any]) -> bool:
        now = _judged(models, op, limits, named, params)[1]
        return all(
            set(new) <= set(old) and (probed_id in new) == (probed_id in old)
            for new, old in zip(now, start, strict=True)
            for probed_id in [limit.id if limit is not None else ""]
        )

    moves = product_moves(models, op.name, limit, variant) if limit is not None else []
    for candidate in (variant, *moves):
        params = candidate.params
        for name in deciding_dims(models, op.name, params):
            if name in named or models.subjects(op.name, params)[name] != 1:
                continue
            larger = models.with_subject(op.name, params, name, 2)
            over = size_budget().over_elements("model", element_count(models, op.name, larger))
            if over is None and kept(larger):
                params = larger
        if (
            kept(params)
            and degeneracy(models, op.name, params, probed) is None
            and builds(models, op.name, json.dumps(params, sort_keys=True))
        ):
            return candidate._replace(params=params)
    return found
