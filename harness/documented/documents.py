"""A vendor's operator document as the catalogue reads it: versions, platform groups, entries.

A vendor keeps the data and reads its own wording (``harness.vendors.<vendor>``); this module
is the vocabulary the CLI and the reports use: an ``Entry`` is one operator section with its
limits (``harness.documented.limits.Limit``, verbatim text beside the structured reading), a
``Group`` one platform section, a ``Document`` one version. ``diff`` compares two versions
limit by limit, ``stats`` counts what is structured.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from harness.documented.limits import Limit


@dataclass(frozen=True)
class Entry:
    name: str  # as headed: "Transpose", "ConvolutionPRelu/LeakyRelu"
    section: str  # "3.2.62"
    page: int
    description: str
    limits: tuple[Limit, ...]
    fuses: tuple[str, ...] = ()  # a fused entry's operators; "PRelu/LeakyRelu": either
    same_as: str | None = None  # "说明及规格限制同Convolution": limits are that entry's
    notes: tuple[str, ...] = ()  # lines that state no limit (what an attribute means)
    inconsistent: str | None = None
    headings: tuple[str, ...] = ()  # lines that head others: roles, attributes ("X : T1")

    def names(self) -> tuple[str, ...]:
        """The heading and each of its ``/`` alternatives (``Clip/ReLU6``: Clip, ReLU6)."""
        return (self.name, *self.name.split("/"))

    def operators(self) -> tuple[str, ...]:
        """The operators the entry states, as the catalogue names them: its heading without
        spaces, or for a fused heading with alternatives one per alternative
        (``ConvolutionPRelu/LeakyRelu``: ConvolutionPRelu, ConvolutionLeakyRelu); a plain
        heading with alternatives (``Clip/ReLU6``) is one operator, named by its first."""
        first, *others = self.name.split("/")
        last = self.fuses[-1].split("/")[0] if self.fuses else ""
        if not others or not last or not first.endswith(last):
            return (first.replace(" ", ""),)
        prefix = first[: -len(last)]
        return (first, *(prefix + other for other in others))


@dataclass(frozen=True)
class Group:
    """One platform section (3.2 RK3588), the CPU chapter or a model-I/O table."""

    section: str
    name: str
    targets: tuple[str, ...]
    entries: tuple[Entry, ...]
    absent: tuple[Limit, ...] = ()  # operators other groups document and this one does not

    def entry(self, name: str) -> Entry | None:
        wanted = name.lower()
        return next((e for e in self.entries if wanted in (n.lower() for n in e.names())), None)

    def limits(self) -> Iterator[Limit]:
        for one in self.entries:
            yield from one.limits


@dataclass(frozen=True)
class Document:
    title: str
    version: str  # as printed: "V2.3.2"
    groups: tuple[Group, ...]  # chapter 3, one per platform group
    cpu: Group  # chapter 4
    model_io: tuple[Group, ...]  # chapter 5, one per platform group
    notes: tuple[Limit, ...] = field(default=())  # chapter 4 and 5 notes

    def group(self, platform: str) -> Group:
        for group in self.groups:
            if platform.lower() in group.targets:
                return group
        known = ", ".join(t for g in self.groups for t in g.targets)
        raise LookupError(
            f"{self.version} has no section for platform {platform!r}; known: {known}"
        )

    def resolve(self, target: Limit) -> Entry | None:
        """The entry a limit belongs to, in any group."""
        for group in self.groups:
            for one in group.entries:
                if target in one.limits:
                    return one
        return None


@dataclass(frozen=True)
class Change:
    kind: str  # "added", "removed", "changed"
    key: str  # limit id
    old: Limit | None
    new: Limit | None


def _reading(limit: Limit) -> tuple[object, ...]:
    """What a limit says, apart from where it is printed."""
    return (
        limit.kind,
        limit.subject,
        limit.interval.text if limit.interval else None,
        limit.values,
        repr(sorted(limit.condition.items())),
        repr(sorted(limit.rule.items())),
    )


def diff(old: Group, new: Group) -> list[Change]:
    """Limits added, removed and changed between two versions of a group, by limit id."""
    before = {lim.id: lim for lim in [*old.limits(), *old.absent]}
    after = {lim.id: lim for lim in [*new.limits(), *new.absent]}
    changes = [Change("removed", k, v, None) for k, v in before.items() if k not in after]
    changes += [Change("added", k, None, v) for k, v in after.items() if k not in before]
    changes += [
        Change("changed", k, before[k], v)
        for k, v in after.items()
        if k in before and _reading(before[k]) != _reading(v)
    ]
    return sorted(changes, key=lambda c: (c.key, c.kind))


@dataclass(frozen=True)
class Counts:
    entries: int
    limits: int
    structured: int
    free_text: int
    absent: int
    inconsistent: int

    @property
    def share(self) -> float:
        return self.structured / self.limits if self.limits else 1.0


def stats(group: Group) -> Counts:
    limits = list(group.limits())
    structured = sum(1 for lim in limits if lim.structured)
    return Counts(
        entries=len(group.entries),
        limits=len(limits),
        structured=structured,
        free_text=len(limits) - structured,
        absent=len(group.absent),
        inconsistent=sum(1 for lim in limits if lim.inconsistent),
    )


def reading(limit: Limit) -> str:
    """The structured reading of a limit in one line (what ``hil docs`` and reports print)."""
    rule = dict(limit.rule)
    where = "".join(f" [{k}={'/'.join(map(str, v))}]" for k, v in limit.condition.items())
    if "when" in rule:
        where += f" [when {rule['when']}]"
    subject = limit.subject or limit.kind
    values = ", ".join(str(v) for v in limit.values or ())
    constants = rule.get("constants")
    named = f" with {', '.join(f'{k}={v}' for k, v in constants.items())}" if constants else ""
    match limit.kind:
        case "range" | "broadcast":
            said = f"{subject} ∈ {limit.interval}"
            if limit.kind == "broadcast":
                said = f"{rule.get('from')}->{rule.get('to')}: {said}"
        case "values" | "enum" | "layout" | "quantization" | "multi-core" | "feature":
            said = f"{subject} ∈ {{{values}}}"
        case "dtype":
            said = f"{subject}: " + ", ".join(f"{d}({k})" for d, k in rule.get("kinds", {}).items())
        case "fixed":
            said = f"{subject} = {values} (fixed)"
        case "rank" if "at_most" in rule:
            said = f"rank at most {rule['at_most']}"
        case "rank":
            said = f"rank {values}" + (f" {rule['dims']}" if "dims" in rule else "")
        case "multiple-of":
            said = (
                f"{subject}: multiples of {rule['multiple_of']} above {rule['when_greater_than']}"
            )
        case "product":
            bound = rule.get("less_than", rule.get("at_most"))
            sign = "<" if "less_than" in rule else "<="
            said = f"{rule.get('expression')}: {' * '.join(rule['factors'])} {sign} {bound}{named}"
        case "formula":
            said = f"{rule.get('expression')}{named}"
            if rule.get("unsupported_when"):
                said = f"not supported: {said}"
        case "unsupported":
            said = f"{subject}: not supported"
        case "no-limit":
            hint = rule.get("recommended_multiple_of")
            said = f"{subject}: no limit" + (f" (multiples of {hint} recommended)" if hint else "")
        case "absent" if rule.get("unsupported"):
            said = "not supported: the entry says the operator is not supported here"
        case "absent":
            said = f"no entry (documented in {values})"
        case "broadcast-support":
            parts = ["any dimension" if rule.get("arbitrary_dims") else "no arbitrary broadcast"]
            if rule.get("same_as"):
                parts.append(f"constraints as {rule['same_as']}")
            if limit.values:
                parts.append(f"shapes {values}")
            for feature, shapes in rule.get("when_feature_on", {}).items():
                parts.append(f"with {feature} on only {', '.join(shapes)}")
            said = "broadcast: " + ", ".join(parts)
        case "free-text":
            said = f"free text: {rule.get('reason', '')}"
        case _:
            said = f"{subject}: {values or rule}"
    if rule.get("subject_to"):
        said += f" (and {rule['subject_to']}'s limits)"
    return said + where
