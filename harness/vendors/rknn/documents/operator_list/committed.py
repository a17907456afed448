"""The committed operator-list YAML read into ``harness.documented.documents`` records.

``data/operator-list/<version>/`` holds one file per chapter-3 platform group
(``3.2-rk3588.yaml``), ``cpu.yaml`` (chapter 4) and ``model-io.yaml`` (chapter 5), all
written by ``python -m harness.vendors.rknn.documents.operator_list`` from
``docs/rknn-operator-list/`` and ``overrides.yaml``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from harness.documented.documents import Document, Entry, Group
from harness.documented.limits import Limit
from harness.documented.operators import CpuRule
from harness.safe_yaml import DataFileError, load_yaml
from harness.vendors.rknn import DATA_DIR as VENDOR_DATA
from harness.vendors.rknn.documents.operator_list.reading import interval

DATA_DIR = VENDOR_DATA / "operator-list"
OVERRIDES = DATA_DIR / "overrides.yaml"
# The extracted texts live beside the project's other documents (a source checkout only).
TEXT_DIR = Path(__file__).parents[5] / "docs" / "rknn-operator-list"
TITLE = "RKNN Compiler Support Operator List"


def _limit(raw: dict[str, Any], op: str, source: str, path: Path) -> Limit:
    try:
        span = interval(raw["interval"]) if "interval" in raw else None
    except ValueError as error:
        raise DataFileError(path, f"{raw['id']}.interval", raw["interval"], str(error)) from None
    values = raw.get("values")
    return Limit(
        id=raw["id"],
        kind=raw["kind"],
        text=raw.get("text", ""),
        source=source,
        op=op,
        role=raw.get("role", ""),
        subject=raw.get("subject", ""),
        interval=span,
        values=tuple(values) if values is not None else None,
        condition={k: tuple(v) for k, v in raw.get("condition", {}).items()},
        rule=raw.get("rule", {}),
        inconsistent=raw.get("inconsistent"),
        page=raw.get("page"),
    )


def _entry(raw: dict[str, Any], version: str, path: Path) -> Entry:
    source = f"{TITLE} {version} § {raw['section']}"
    return Entry(
        name=raw["name"],
        section=str(raw["section"]),
        page=raw["page"],
        description=raw.get("description", ""),
        limits=tuple(_limit(lim, raw["name"], source, path) for lim in raw["limits"]),
        fuses=tuple(raw.get("fuses", ())),
        same_as=raw.get("same_as") or raw.get("roles_same_as"),
        notes=tuple(raw.get("notes", ())),
        inconsistent=raw.get("inconsistent"),
        headings=tuple(raw.get("headings", ())),
    )


@functools.cache
def _group(path: Path) -> Group:
    raw = load_yaml(path)
    version = raw["version"]
    absent = tuple(
        Limit(
            id=a["id"],
            kind="absent",
            text=f"(no section in {raw['section']}; documented in {', '.join(a['elsewhere'])})",
            source=f"{TITLE} {version} § {raw['section']}",
            op=a["op"],
            role="op",
            values=tuple(a["elsewhere"]),
        )
        for a in raw.get("absent", ())
    )
    return Group(
        section=str(raw["section"]),
        name=raw["group"],
        targets=tuple(raw["targets"]),
        entries=tuple(_entry(e, version, path) for e in raw["entries"]),
        absent=absent,
    )


@functools.cache
def model_io(version: str) -> tuple[Group, ...]:
    """Chapter 5 of operator list ``version``, one group per platform group."""
    path = _folder(version) / "model-io.yaml"
    raw = load_yaml(path)
    groups = []
    for one in raw["groups"]:
        source = f"{TITLE} {version} § {one['section']}"
        limits = tuple(_limit(lim, "", source, path) for lim in one["limits"])
        table = Entry(one["group"], str(one["section"]), limits[0].page or 0, "", limits)
        groups.append(Group(str(one["section"]), one["group"], tuple(one["targets"]), (table,)))
    return tuple(groups)


@functools.cache
def _cpu_file(version: str) -> dict[str, Any]:
    """``cpu.yaml`` parsed, once: a run reads its entries and its notes several times."""
    return load_yaml(_folder(version) / "cpu.yaml")


def _cpu(version: str) -> Group:
    raw = _cpu_file(version)
    path = _folder(version) / "cpu.yaml"
    entries = tuple(_entry(e, raw["version"], path) for e in raw["entries"])
    return Group("4", "CPU", (), entries)


def cpu_operators(version: str) -> tuple[Entry, ...]:
    """Chapter 4's entries: the operators the CPU runs, as documented (cpu.yaml alone)."""
    return _cpu(version).entries


def cpu_rules(version: str) -> tuple[Limit, ...]:
    """Chapter 4.1: which targets run which CPU operators ("RK2118 不支持所有 CPU 算子": none),
    one ``values`` limit each, its targets in ``rule["targets"]``."""
    raw = _cpu_file(version)
    return tuple(
        Limit(
            id=f"cpu/op/operators@targets={'/'.join(note['targets'])}",
            kind="values",
            text=note["text"],
            source=f"{TITLE} {version} § 4.1",
            role="op",
            subject="cpu-operators",
            values=tuple(note["values"]),
            rule={"targets": list(note["targets"])},
        )
        for note in raw.get("notes", ())
    )


@functools.cache
def load(version: str) -> Document:
    groups = tuple(_group(path) for path in _group_files(version))
    return Document(
        title=TITLE,
        version=version,
        groups=groups,
        cpu=_cpu(version),
        model_io=model_io(version),
        notes=cpu_rules(version),
    )


def group(version: str, platform: str) -> Group:
    """``load(version).group(platform)``, reading only that group's file where its name
    lists the platform among the group's targets (``3.3-rk3562.yaml``, as the extractor
    names them): a run on one platform parses one of chapter 3's seven files."""
    wanted = platform.lower()
    for path in _group_files(version):
        if wanted in path.stem.split("-")[1:] and wanted in _group(path).targets:
            return _group(path)
    return load(version).group(platform)  # or its LookupError, naming the known platforms


def _folder(version: str) -> Path:
    folder = DATA_DIR / version
    if not folder.is_dir():
        raise LookupError(f"no operator list {version!r}; known: {', '.join(versions())}")
    return folder


def _group_files(version: str) -> list[Path]:
    """Chapter 3's files, one per platform group, in section order."""
    return sorted(_folder(version).glob("3.*.yaml"), key=_section_order)


def _section_order(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in path.name.split("-")[0].split("."))


def versions() -> list[str]:
    """The committed versions, oldest first."""
    found = [p.name for p in DATA_DIR.glob("V*") if p.is_dir()]
    return sorted(found, key=lambda v: tuple(int(x) for x in v[1:].split(".")))


def documents() -> dict[str, Document]:
    return {version: load(version) for version in versions()}


def cpu_rule(version: str, platform: str) -> CpuRule | None:
    """Chapter 4.1's rule of the operators ``platform``'s CPU runs ("RK2118 不支持所有 CPU
    算子": none), or None where the chapter limits nothing for it."""
    for rule in cpu_rules(version):
        if platform.lower() in rule.rule["targets"]:
            return CpuRule(tuple(str(v) for v in rule.values or ()), rule.text, rule.source)
    return None
