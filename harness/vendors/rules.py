"""A vendor document of layout rules as catalogue data: a YAML file of verbatim rules.

The file (``horizon/data/stride-rules.yaml`` is one) gives the document's title, version and
section, its platform groups (each with its targets and the constants its rules state for
them, such as an alignment), its rules (id, kind from ``harness.documented.limits``, the
document's text verbatim, ``inconsistent`` where the document contradicts itself) and its
worked examples. ``LayoutRules`` turns it into what a ``Vendor`` hands the harness: the
``Document`` ``hil docs show`` reads (one entry holding every rule), the report's documented
rows, and an operator catalogue with no operators (the rules constrain no operator).

No target runs such rules: a vendor's suite checks the harness's computation of them against
the document's worked examples and invariants on the host, and journals each case's checks
(``journal_checks``), so the report's documented rows show which rows were checked.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.cases.case import Case
from harness.documented.documents import Document, Entry, Group
from harness.documented.limits import LIMIT_KINDS, Limit
from harness.documented.operators import OperatorCatalogue, Source
from harness.pipeline import host_versions
from harness.report.documented_rows import DOCUMENTED_KEY
from harness.results.case_records import case_record
from harness.results.journal import Journal
from harness.results.records import CaseRecord
from harness.safe_yaml import DataFileError, load_yaml
from harness.vendors import platform_vendors

HOST = "host"  # the backend of a rule checked by the harness's own computation

_TOP = ("title", "version", "document", "section", "entry", "description", "groups", "rules")


@dataclass(frozen=True)
class LayoutRules:
    """One document of layout rules, read from its YAML file."""

    path: Path
    data: Mapping[str, Any]

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(t for group in self.data["groups"] for t in group["targets"])

    @property
    def examples(self) -> Mapping[str, Any]:
        """The document's worked examples, by name."""
        return self.data.get("examples", {})

    def constants(self, platform: str) -> Mapping[str, Any]:
        """The constants the rules state for ``platform``'s group (in any case)."""
        return self._group_of(platform)["constants"]

    def limits(self, platform: str) -> tuple[Limit, ...]:
        """The rules as documented limits for ``platform``'s group: its constants filled in."""
        source = f"{self.data['document']} § {self.data['section']}"
        constants = self.constants(platform)
        return tuple(
            Limit(
                id=f"{self.data['entry']}/{rule['id']}",
                kind=rule["kind"],
                text=rule["text"],
                source=source,
                op=self.data["entry"],
                subject=rule.get("subject", ""),
                values=tuple(rule["values"]) if "values" in rule else None,
                rule=_reading(rule, constants),
                inconsistent=rule.get("inconsistent"),
            )
            for rule in self.data["rules"]
        )

    def document(self) -> Mapping[str, Document]:
        """Its one version -> the document (``Vendor.documents``)."""
        groups = tuple(
            Group(
                section=str(self.data["section"]),
                name=group["name"],
                targets=tuple(t.lower() for t in group["targets"]),
                entries=(
                    Entry(
                        name=self.data["entry"],
                        section=str(self.data["section"]),
                        page=0,  # the document is not paginated
                        description=self.data["description"],
                        limits=self.limits(group["targets"][0]),
                    ),
                ),
            )
            for group in self.data["groups"]
        )
        cpu = Group(section="", name="CPU", targets=(), entries=())
        version = str(self.data["version"])
        return {version: Document(self.data["title"], version, groups, cpu, model_io=())}

    def operators(self, platform: str) -> OperatorCatalogue:
        """No operators: the rules constrain a model's inputs, not its operators."""
        self._group_of(platform)
        source = Source(self.path.name, self.data["title"], self.data["document"], pages="")
        return OperatorCatalogue(sdk="", platform=platform, source=source, operators={})

    def documented(self, platform: str) -> dict[str, Any]:
        """The report's documented rows (``Vendor.documented``): every rule, for the group of
        ``platform`` ("all": every group)."""
        groups = [
            group
            for group in self.data["groups"]
            if platform == "all" or group is self._group_of(platform)
        ]
        return {
            DOCUMENTED_KEY: [
                {
                    "title": self.data["title"],
                    "document": self.data["document"],
                    "group": group["name"],
                    "targets": list(group["targets"]),
                    "rows": [
                        {"limit": limit.id, "kind": limit.kind, "text": limit.text}
                        for limit in self.limits(group["targets"][0])
                    ],
                }
                for group in groups
            ]
        }

    def _group_of(self, platform: str) -> Mapping[str, Any]:
        for group in self.data["groups"]:
            if platform.upper() in (t.upper() for t in group["targets"]):
                return group
        known = ", ".join(self.targets)
        raise LookupError(f"{self.data['document']} has no platform {platform!r}; known: {known}")


def _reading(rule: Mapping[str, Any], constants: Mapping[str, Any]) -> dict[str, Any]:
    """A rule's structured reading, each "$name" value its group's constant."""
    reading = {
        key: constants[value[1:]] if isinstance(value, str) and value.startswith("$") else value
        for key, value in rule.get("reading", {}).items()
    }
    return reading | ({"reason": rule["reason"]} if "reason" in rule else {})


@functools.cache
def load_rules(path: Path) -> LayoutRules:
    """The rules file at ``path``; a DataFileError names the file, the key and the value."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise DataFileError(path, "", None, "is not a mapping of the document's fields")
    for key in _TOP:
        if key not in data:
            raise DataFileError(path, key, None, f"{key} is missing")
    for index, group in enumerate(data["groups"]):
        for key in ("name", "targets", "constants"):
            if key not in group:
                raise DataFileError(path, f"groups[{index}].{key}", None, f"{key} is missing")
    for index, rule in enumerate(data["rules"]):
        for key in ("id", "kind", "text"):
            if key not in rule:
                raise DataFileError(path, f"rules[{index}].{key}", None, f"{key} is missing")
        if rule["kind"] not in LIMIT_KINDS:
            raise DataFileError(
                path, f"rules[{index}].kind", rule["kind"], "is not a kind of documented limit"
            )
    return LayoutRules(path, data)


def rule_check(
    prop: str, limits: Sequence[str], documented: object, observed: object
) -> dict[str, Any]:
    """A record's check of one property: "confirmed" when the computed value is the
    document's, else "wrong-result"."""
    status = "confirmed" if documented == observed else "wrong-result"
    return {
        "prop": prop,
        "limits": list(limits),
        "documented": str(documented),
        "observed": str(observed),
        "status": status,
    }


def journal_checks(results: Path, case: Case, checks: Sequence[Mapping[str, Any]]) -> CaseRecord:
    """Journal ``case``'s record in the results directory ``results``: its checks, and the
    verdict "confirmed" when each is, else the first failing check's status."""
    failing = [check for check in checks if check["status"] != "confirmed"]
    record = case_record(
        case,
        vendor=platform_vendors()[case.platform.lower()],
        backend=HOST,
        verdict=failing[0]["status"] if failing else "confirmed",
        detail="; ".join(f"{c['prop']}: {c['observed']}, not {c['documented']}" for c in failing),
        versions=host_versions(),
        started=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        checks=[dict(check) for check in checks],
    )
    Journal(results).append(record)
    return record
