"""Which document an SDK release is judged against, and what it says of a case's limit.

A release is judged against the newest operator list at or before it (2.2.0 -> V2.2.0, 2.3.0
-> V2.3.0, 2.3.2 -> V2.3.2). The seeds transcribe the 2.5.0 documents, which are public only
as far as the seeds go: seed 001 for the RK3562 operators it covers and seed 003 for the model
I/O tables are 2.5.0's own documents; for anything else 2.5.0 falls back to V2.3.2, and the
record says so (``fallback``).

The cases are generated from seed 001 on RK3562 and from the newest operator list elsewhere
(``harness.vendors.rknn.documents.operators``). A case run on another release carries what
that release's own document says of the same limit (``document_reading``: for a seed limit its
counterpart, for a listed one the limit of the same id), so the report can tell a verdict that
changed because the document changed from one that changed because the SDK did.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from harness.cases.case import Case
from harness.documented.documents import Group, reading
from harness.documented.limits import Limit
from harness.vendors.rknn.documents.operator_list.committed import TITLE, group, model_io, versions
from harness.vendors.rknn.documents.operators import operator_catalogue, seed_catalogue

MODEL_IO_SEED = "003"  # the model-I/O seed's number, as its file name starts


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def document_version(sdk: str) -> str | None:
    """The newest operator list at or before ``sdk`` (``2.5.0`` -> ``V2.3.2``)."""
    older = [v for v in versions() if _release(v) <= _release(sdk)]
    return older[-1] if older else None


@functools.cache
def _seed_operators() -> tuple[str, str, frozenset[str], dict[str, Limit]]:
    seed = seed_catalogue()
    limits = {limit.id: limit for limit in seed.limits()}
    return seed.sdk.rsplit("-", 1)[-1], seed.platform, frozenset(seed.operators), limits


def _key(limit_id: str, op: str | None = None) -> tuple[str, ...]:
    """``AveragePool/attr/pad/pad_top`` and ``AveragePool/attr/pad_top`` alike: op, role and
    the last part, without case, underscores and spaces (``hidden_size`` is ``hiddensize``)
    or a formula's comparison (``height*width<16384`` is ``height*width``)."""
    parts = limit_id.split("#")[0].split("@")[0].split("/")
    if parts[1] == "broadcast":
        tail = "/".join(parts[2:])
    else:
        tail = parts[-1] if parts[-1] != "multiple-of" else "/".join(parts[-2:])
        tail = re.split(r"[<>=]", tail)[0]
    return tuple(re.sub(r"[_\s]", "", p.lower()) for p in (op or parts[0], parts[1], tail))


_SAME_KIND = {"layout": "enum"}  # seed 001 calls an attribute's named options layouts


def counterpart(seed: Limit, group: Group) -> Limit | None:
    """The limit of ``group`` that states what ``seed`` states: same operator (or the entry
    whose roles it shares, "同Mul"), role and subject; of several, the one of the same kind."""
    entry = group.entry(seed.op)
    names = [seed.op] + ([entry.same_as] if entry is not None and entry.same_as else [])
    for name in names:
        key = _key(seed.id, name)
        found = [lim for lim in group.limits() if _key(lim.id) == key]
        if len(found) > 1:
            found = [lim for lim in found if lim.kind == _SAME_KIND.get(seed.kind, seed.kind)]
        if len(found) == 1:
            return found[0]
    return None


def _numbers(limit: Limit) -> tuple[object, ...]:
    """What a limit allows, independent of how it is spelled (``(0,8192]``, ``(0, 8192]``)."""
    span = limit.interval
    bounds = (span.lo, span.hi, span.lo_closed, span.hi_closed) if span else None
    values = tuple(sorted(str(v) for v in limit.values)) if limit.values is not None else None
    steps = tuple(limit.rule.get(k) for k in ("when_greater_than", "multiple_of"))
    return bounds, values, steps


def same_reading(seed: Limit, other: Limit) -> bool:
    return _numbers(seed) == _numbers(other)


def _model_io_note(version: str) -> str:
    differ = [lim.id for one in model_io(version) for lim in one.limits() if lim.inconsistent]
    said = "agree with seed 003" if not differ else f"differ from seed 003 on {', '.join(differ)}"
    return (
        f"{version} § 5: its input tables are images (no text), its output tables {said}; "
        "judged against seed 003"
    )


def judged_against(case: Case, sdk: str) -> dict[str, str]:
    """Record ``source`` fields: the document the case is judged against on ``sdk``, the
    fallback when that release has none of its own, what it says of the case's limit."""
    if not sdk:
        return {}
    return dict(_judged(case.source.get("seed", ""), case.op, case.platform, case.limit, sdk))


@functools.cache
def _judged(
    seed_file: str, op: str, platform: str, limit_id: str, sdk: str
) -> Iterable[tuple[str, str]]:
    if seed_file.startswith(TITLE):
        return _judged_listed(seed_file[len(TITLE) :].strip(), op, platform, limit_id, sdk)
    seed_sdk, seed_platform, seed_ops, seed_limits = _seed_operators()
    version = document_version(sdk)
    own = f"seed {seed_file.split('_')[0]} (RKNN2 {seed_sdk})"
    if seed_file.startswith(MODEL_IO_SEED):
        if sdk == seed_sdk or version is None:
            return (("judged_against", own),)
        return (("judged_against", own), ("fallback", _model_io_note(version)))
    if sdk == seed_sdk and platform == seed_platform and op in seed_ops:
        return (("judged_against", own),)
    if version is None:
        return (("judged_against", own), ("fallback", f"no operator list at or before {sdk}"))
    out = _release_note(version, sdk)
    try:
        section = group(version, platform)
    except LookupError:
        return (("judged_against", own), ("fallback", f"{version} has no {platform} section"))
    entry = section.entry(op)
    seed_limit = seed_limits.get(limit_id)
    other = counterpart(seed_limit, section) if entry is not None and seed_limit else None
    if entry is None or other is None:
        return (*out, *_no_counterpart(own, version, section.section, entry is None))
    return (*out, *_compared(own, seed_limit, other, version, entry.section))


def _judged_listed(
    generated: str, op: str, platform: str, limit_id: str, sdk: str
) -> Iterable[tuple[str, str]]:
    """A case generated from operator list ``generated``, on ``sdk``: the same limit (same
    id) in the SDK's own list."""
    own = f"{TITLE} {generated}"
    version = document_version(sdk)
    if version is None:
        return (("judged_against", own), ("fallback", f"no operator list at or before {sdk}"))
    out = _release_note(version, sdk)
    mine = _listed_limits(platform, generated, op).get(limit_id)
    if version == generated:
        where = f"{own} § {mine.source.split(' § ')[-1]}, p. {mine.page}" if mine else own
        return (*out, ("judged_against", where))
    try:
        section = group(version, platform)
    except LookupError:
        return (("judged_against", own), ("fallback", f"{version} has no {platform} section"))
    theirs = _listed_limits(platform, version, op)
    other = theirs.get(limit_id)
    if not theirs or other is None:
        return (*out, *_no_counterpart(own, version, section.section, not theirs))
    return (*out, *_compared(own, mine, other, version, other.source.split(" § ")[-1]))


def _listed_limits(platform: str, version: str, op: str) -> dict[str, Limit]:
    found = operator_catalogue(platform, version).operators.get(op)
    return {limit.id: limit for limit in found.limits()} if found else {}


def _release_note(version: str, sdk: str) -> list[tuple[str, str]]:
    if f"V{sdk}" == version:
        return []
    return [("fallback", f"no public operator list for {sdk}; the newest before it")]


def _no_counterpart(
    own: str, version: str, section: str, operator: bool
) -> tuple[tuple[str, str], ...]:
    what = "operator" if operator else "limit"
    return (
        ("judged_against", own),
        ("fallback", f"{version} has no counterpart of this {what} (§ {section})"),
    )


def _compared(
    own: str, mine: Limit | None, other: Limit, version: str, section: str
) -> tuple[tuple[str, str], ...]:
    """Judged against ``version``'s ``other`` when it reads as the case's ``mine`` does;
    else the case keeps its own document's reading and says how the two differ."""
    said = (("document_reading", reading(other)), ("document_text", other.text))
    where = f"{TITLE} {version} § {section}, p. {other.page}"
    if mine is None or same_reading(mine, other):
        return (("judged_against", where), *said)
    changed = f"{own}: {reading(mine)}; {version}: {reading(other)}"
    return (
        ("judged_against", own),
        ("fallback", f"{version} reads the limit otherwise; the case keeps {own}'s ({where})"),
        *said,
        ("document_changed", changed),
    )
