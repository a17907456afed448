"""The extracted text of one operator-list version -> its catalogue YAML files.

Chapter 3's platform groups are read from their own headings (``3.2 RK3588``), so the group
list, the targets of each group and every entry come from the document. The overrides file
(the one place a number may be typed by hand) re-reads what the lines cannot say by
themselves; each override cites the version, section, page and verbatim text it interprets,
and must match exactly the places it cites.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.safe_yaml import DataFileError, load_yaml
from harness.vendors.rknn.documents.operator_list import chapters, reading
from harness.vendors.rknn.documents.operator_list.document import Line, entry, pages, sections
from harness.vendors.rknn.documents.operator_list.entries import read_entry
from harness.vendors.rknn.platforms import PLATFORMS

_VERSION = re.compile(r"发布\s*v(?P<version>\d+\.\d+\.\d+)")


@dataclass(frozen=True)
class Group:
    number: str  # "3.2"
    name: str  # "RK3588"
    page: int

    @property
    def targets(self) -> list[str]:
        return [t.strip().lower() for t in self.name.split("/")]

    @property
    def file(self) -> str:
        return f"{self.number}-{'-'.join(self.targets)}.yaml"


def version_of(text: str) -> str:
    match = _VERSION.search(text)
    if not match:
        raise ValueError("no '发布 vX.Y.Z' release line in the text")
    return f"V{match['version']}"


def groups(lines: list[Line]) -> list[Group]:
    found = [Group(s.number, s.title, s.page) for s in sections(lines, "3.")]
    for group in found:
        unknown = [t for t in group.targets if t not in PLATFORMS]
        if unknown:
            raise ValueError(f"section {group.number} {group.name}: unknown targets {unknown}")
    return found


def _ids(name: str, limits: list[dict[str, Any]]) -> None:
    """``<op>/<role>/<subject>`` plus ``@name=value`` per condition; ``#2`` for a repeat. A
    formula's subject is its expression, a broadcast form's its shapes and dimension."""
    seen: dict[str, int] = {}
    for limit in limits:
        subject = limit.get("subject") or limit["kind"]
        rule = limit.get("rule", {})
        if limit["kind"] in ("product", "formula") and "expression" in rule:
            subject = rule["expression"].replace(" ", "")
        if limit["kind"] == "broadcast":  # as seed 001 names them: [b,c,1,w]->[b,c,h,w]/h
            subject = f"{rule['from']}->{rule['to']}/{subject}".replace(" ", "")
        suffix = "".join(
            f"@{k}={'/'.join(str(v) for v in vs)}" for k, vs in limit.get("condition", {}).items()
        )
        base = f"{name}/{limit['role']}/{subject}{suffix}"
        if limit["kind"] == "multiple-of":
            base += "/multiple-of"
        seen[base] = seen.get(base, 0) + 1
        limit["id"] = base if seen[base] == 1 else f"{base}#{seen[base]}"


def _ordered(limit: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "kind", "role", "subject", "interval", "values", "condition", "rule")
    out = {k: limit[k] for k in keys if limit.get(k) not in (None, {}, "")}
    out.update({"page": limit["page"], "text": limit["text"]})
    if "inconsistent" in limit:
        out["inconsistent"] = limit["inconsistent"]
    return out


def extract(text: str, overrides: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """File name -> YAML document, for one version of the operator list."""
    version = version_of(text)
    lines = pages(text)
    docs: dict[str, dict[str, Any]] = {}
    names: dict[str, list[str]] = {}
    for group in groups(lines):
        targets = {t: group.name for t in group.targets}
        read = [read_entry(entry(s), targets) for s in sections(lines, f"{group.number}.")]
        for one in read:
            _ids(one["name"], one["limits"])
        names[group.number] = [e["name"] for e in read]
        docs[group.file] = {
            "version": version,
            "section": group.number,
            "group": group.name,
            "targets": group.targets,
            "page": group.page,
            "entries": read,
        }
    _absent(docs, names)
    docs["cpu.yaml"] = chapters.cpu(lines, version)
    docs["model-io.yaml"] = chapters.model_io(lines, version)
    apply_overrides(docs, version, overrides)
    for doc in docs.values():
        for one in doc.get("entries", []):
            one["limits"] = [_ordered(limit) for limit in one["limits"]]
    return docs


def _absent(docs: Mapping[str, dict[str, Any]], names: Mapping[str, list[str]]) -> None:
    """Each group lists the operators other groups of the version document and it does not."""
    every = dict.fromkeys(n for group in names.values() for n in group)
    for doc in docs.values():
        own = set(names[doc["section"]])
        doc["absent"] = [
            {
                "id": f"{name}/op/absent",
                "kind": "absent",
                "op": name,
                "elsewhere": [g for g, ops in names.items() if name in ops],
            }
            for name in every
            if name not in own
        ]


# --- overrides ----------------------------------------------------------------------------


def load_overrides(path: Path) -> list[dict[str, Any]]:
    document = load_yaml(path)
    if not isinstance(document, dict) or not isinstance(document.get("overrides"), list):
        raise DataFileError(path, "overrides", document, "expected a list under 'overrides'")
    for i, override in enumerate(document["overrides"]):
        for key in ("text", "at", "reason", "entry" if "entry" in override else "read_as"):
            if key not in override:
                raise DataFileError(path, f"overrides[{i}]", override, f"missing '{key}'")
    return list(document["overrides"])


def apply_overrides(
    docs: Mapping[str, dict[str, Any]], version: str, overrides: list[dict[str, Any]]
) -> None:
    """Apply each override to the limits (or entries) of ``version`` it cites; an override
    that matches a place it does not cite, or cites a place it does not match, is an error."""
    for i, override in enumerate(overrides):
        cited = {
            (str(at["section"]), int(at["page"]))
            for at in override["at"]
            if at["version"] == version
        }
        matched: set[tuple[str, int]] = set()
        for doc in docs.values():
            for one in doc.get("entries", []):
                matched |= _override_entry(one, override)
        if matched != cited:
            raise ValueError(
                f"override {i} ({override['text']!r}) at {version}: cites "
                f"{sorted(cited)} but the text is at {sorted(matched)}"
            )


def _override_entry(one: dict[str, Any], override: dict[str, Any]) -> set[tuple[str, int]]:
    text = override["text"]
    if "entry" in override:
        if text not in one["description"] or "same_as" in one:  # only where it is missing
            return set()
        one.update(override["entry"])
        one["inconsistent"] = override["reason"]
        return {(one["section"], one["page"])}
    places = set()
    for limit in one["limits"]:
        if text in limit["text"] and limit.get("subject") == override.get("subject"):
            found = reading.formula(override["read_as"], reading.constants(limit["text"]))
            limit.update({**found, "subject": found.get("subject") or limit.get("subject")})
            limit["inconsistent"] = override["reason"]
            places.add((one["section"], limit["page"]))
    return places


def dump(document: Mapping[str, Any]) -> str:
    return yaml.safe_dump(
        dict(document), allow_unicode=True, sort_keys=False, width=100, default_flow_style=None
    )
