"""The operators the suites probe on each RKNN platform, as an ``OperatorCatalogue``.

Cases are generated from the newest public document: the operator list ``CASES_VERSION``'s
section of the platform's group, every entry under the name of the model that probes it; on
RK3562, seed 001 (the 2.5.0 tables, which the operator list transcribes less exactly) for the
operators it covers. A fused entry (``ConvolutionRelu``: "说明及规格限制同Convolution") states
the limits of the entry it names plus its own; one heading with alternatives
(``ConvolutionPRelu/LeakyRelu``) is one operator per alternative. An operator other groups
document and this one does not is kept with its ``absent`` limit, so a model of it is still
run, expecting the CPU or a refusal. A fused entry's cases check the fusion: the limits it
adopts judge them, and are probed on the entry it names (``ListedOperator.adopted``).

Each SDK release is then judged against its own document (``operator_list.judged``).
"""

from __future__ import annotations

import dataclasses
import functools

from harness.documented.documents import Entry, Group
from harness.documented.limits import Limit
from harness.documented.operators import (
    DocumentedOperator,
    ListedOperator,
    OperatorCatalogue,
    Source,
    load_operators,
)
from harness.safe_yaml import DataFileError, load_yaml
from harness.vendors.rknn import DATA_DIR
from harness.vendors.rknn.documents.operator_list.committed import (
    TITLE,
    cpu_operators,
    cpu_rule,
    group,
    versions,
)
from harness.vendors.rknn.platforms import PLATFORMS

SEED_PLATFORM = "rk3562"  # seed 001's platform, which its file names and states
SEED_PATH = DATA_DIR / "rknn2-2.5.0" / f"{SEED_PLATFORM}-operators.yaml"
CPU_PLACEMENTS = DATA_DIR / "cpu-placements.yaml"


def cases_version() -> str:
    """The operator list cases are generated from: the newest one."""
    return versions()[-1]


@functools.cache
def seed_catalogue() -> OperatorCatalogue:
    """Seed 001: the RK3562 operator tables of RKNN2 2.5.0."""
    seed = load_operators(SEED_PATH, PLATFORMS)
    if seed.platform != SEED_PLATFORM:
        raise DataFileError(
            SEED_PATH, "platform", seed.platform, f"seed 001 is the {SEED_PLATFORM} tables"
        )
    return seed


def _renamed(limit: Limit, heading: str, name: str) -> Limit:
    """``limit`` of entry ``heading`` stated for operator ``name``."""
    rest = limit.id[len(heading) :] if limit.id.startswith(heading + "/") else "/" + limit.id
    return dataclasses.replace(limit, id=name + rest, op=name)


def listed_operators(group: Group) -> dict[str, DocumentedOperator]:
    """Every operator of a platform group's section, limits read; absent ones as well."""
    by_heading = {entry.name: entry for entry in group.entries}
    found: dict[str, DocumentedOperator] = {}
    for entry in group.entries:
        base = by_heading.get(entry.same_as or "")
        for name in entry.operators():
            adopted = tuple(_renamed(lim, base.name, name) for lim in base.limits) if base else ()
            stated = tuple(_renamed(lim, entry.name, name) for lim in entry.limits)
            found[name] = ListedOperator(name, entry.section, stated, adopted)
    for absent in group.absent:
        for name in Entry(absent.op, "", 0, "", ()).operators():
            found.setdefault(name, ListedOperator(name, "", (_renamed(absent, absent.op, name),)))
    return found


@functools.cache
def operator_catalogue(platform: str, version: str | None = None) -> OperatorCatalogue:
    """The operators probed on ``platform``: the operator list ``version`` (default: the
    newest), with seed 001's tables in place of its entries on the seed's platform."""
    version = version or cases_version()
    section = group(version, platform)
    operators = listed_operators(section)
    listed = f"{TITLE} {version} § {section.section} ({section.name})"
    if platform == SEED_PLATFORM and version == cases_version():  # its file read only then
        seed = seed_catalogue()
        operators = {**operators, **seed.operators}
        listed = f"{seed.source.document}; {listed} for the operators the seed does not cover"
    return OperatorCatalogue(
        sdk=f"rknn2-{version.lstrip('V')}",
        platform=platform,
        source=Source(file=f"{TITLE} {version}", title=TITLE, document=listed, pages=""),
        operators=operators,
        cpu_rule=cpu_rule(version, platform),
    )


@functools.cache
def cpu_allowed(platform: str, version: str | None = None) -> dict[str, str]:
    """The layers a user's model may leave on ``platform``'s CPU (``cpu-placements.yaml``):
    those chapter 4 of operator list ``version`` (default: the newest) documents as CPU
    operators and its § 4.1 lets the platform run, each with why and the document's entry.
    It reads chapter 4 alone, not the platform's section."""
    version = version or cases_version()
    rule = cpu_rule(version, platform)
    runs = None if rule is None else {op.lower() for op in rule.operators}
    documented = {entry.name.lower(): entry for entry in cpu_operators(version)}
    allowed = {}
    for placement in load_yaml(CPU_PLACEMENTS):
        layer = str(placement["layer"])
        entry = documented.get(layer.lower())
        if entry is None or (runs is not None and layer.lower() not in runs):
            continue
        where = f"{TITLE} {version} § {entry.section} {entry.name}, p. {entry.page}"
        allowed[layer] = f"{placement['why']} ({where}: a CPU operator)"
    return allowed
