"""Chapter 4 (the CPU operators) and chapter 5 (model input and output limits).

Chapter 4 entries read ``–描述: …`` and ``–规格约束: …`` (the constraint may run on over
several lines); 4.1 says which targets have which CPU operators. Chapter 5's input tables
(5.1.x) are images in the PDF, so each is one free-text limit saying so; its notes and the
output tables (5.2.x) are read row by row and each output row is compared with the seed-003
catalogue (the 2.5.0 document): where the two disagree the row is ``inconsistent``.
"""

from __future__ import annotations

import re
from typing import Any

from harness.vendors.rknn.documents.model_io import ModelIOError, load_model_io
from harness.vendors.rknn.documents.operator_list import reading
from harness.vendors.rknn.documents.operator_list.document import Line, sections

_FIELD = re.compile(r"^–\s*(?P<key>描述|规格约束|说明)\s*:?\s*(?P<value>.*)$")
_NOTE = re.compile(r"^\s*(?P<n>\d+)\.\s+(?P<text>.+)$")
_LAYOUT = re.compile(r"(?P<layout>NC1HWC2|NCHW|NHWC|UNDEFINE|UNDE-)")
_ALIGN = re.compile(r"(\d+)\s*对齐")


def _limit(ident: str, found: dict[str, Any], line: Line, text: str) -> dict[str, Any]:
    out = {"id": ident, "role": "op", **found}
    out.update({"page": line.page, "text": text})
    return out


def _read(text: str, subject: str) -> dict[str, Any]:
    found = reading.ranges(text) or None
    said = reading.statement(text, subject)
    if said is not None:
        return said
    if found is not None and len(found) == 1:
        return found[0]
    return reading.free("no structured reading of this wording")


# The clauses of a CPU operator's constraint line ("batchsize 仅支持 1, 不支持 broadcasting").
_CLAUSES: list[tuple[re.Pattern[str], Any]] = [
    (  # "batchsize 仅支持 1"
        re.compile(r"(?P<subject>[a-z_]+)\s*仅支持\s*(?P<value>-?\d+)"),
        lambda m: {"kind": "values", "subject": m["subject"], "values": [int(m["value"])]},
    ),
    (  # "仅支持 Avg Pool Mode"
        re.compile(r"仅支持\s*(?P<value>\w+(?: \w+)*?)\s+Mode"),
        lambda m: {"kind": "values", "subject": "mode", "values": [m["value"]]},
    ),
    (  # "仅支持 bool/int8/float 类型转换"
        re.compile(r"仅支持\s*(?P<values>[\w/]+)\s*类型转换"),
        lambda m: {"kind": "values", "subject": "dtype", "values": m["values"].split("/")},
    ),
    (  # "不支持 broadcasting"
        re.compile(r"不支持\s*(?P<subject>[a-z_]+)"),
        lambda m: {"kind": "unsupported", "subject": m["subject"]},
    ),
    (  # "无限制 (支持四维 x 四维、四维 x 三维计算)": no limit, the forms it names kept
        re.compile(r"无限制\s*\((?P<forms>[^)]+)\)"),
        lambda m: {"kind": "no-limit", "rule": {"supports": m["forms"]}},
    ),
]


def _clauses(text: str) -> list[dict[str, Any]] | None:
    """Each comma-separated clause as one reading, or None unless every clause reads."""
    found = []
    for clause in re.split(r"\s*,\s*(?![^()]*\))", reading.normalise(text)):
        match = next(
            (read(m) for pattern, read in _CLAUSES if (m := pattern.fullmatch(clause))), None
        )
        if match is None:
            return None
        found.append(match)
    return found


def cpu(lines: list[Line], version: str) -> dict[str, Any]:
    entries = []
    notes = []
    for section in sections(lines, "4."):
        if section.title.startswith("注"):
            notes = _cpu_notes(section.body)
            continue
        description, constraint, remarks = "", [], []
        field = ""
        for line in section.body:
            match = _FIELD.match(line.text.strip())
            if match:
                field = match["key"]
                if field == "描述":
                    description = match["value"]
                elif field == "说明":
                    remarks.append(match["value"])
                elif match["value"]:
                    constraint.append(line)
            elif field == "规格约束":
                constraint.append(line)
            elif field == "描述":  # a description wrapped onto the next line
                description += f"\n{line.text.strip()}"
            elif field == "说明":
                remarks[-1] += line.text.strip()
        limits = []
        for line in constraint:
            text = _FIELD.sub(r"\g<value>", line.text.strip())
            subject = text.split(":")[0].strip() if ":" in text else ""
            for one in _clauses(text) or [_read(text, subject)]:
                named = one.get("subject") or subject or "spec"
                limits.append(_limit(f"{section.title}/op/{named}", one, line, text))
        entries.append(
            {
                "name": section.title,
                "section": section.number,
                "page": section.page,
                "description": description,
                **({"notes": remarks} if remarks else {}),
                "limits": _unique(limits),
            }
        )
    return {"version": version, "section": "4", "notes": notes, "entries": entries}


def _unique(limits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, int] = {}
    for limit in limits:
        seen[limit["id"]] = seen.get(limit["id"], 0) + 1
        if seen[limit["id"]] > 1:
            limit["id"] += f"#{seen[limit['id']]}"
    return limits


def _cpu_notes(body: list[Line]) -> list[dict[str, Any]]:
    """``RK2118 不支持所有 CPU 算子`` and ``RV1106/… 仅支持部分 CPU 算子如下`` + the list."""
    text = " ".join(line.text.strip().lstrip("•–").strip() for line in body)
    out = []
    none = re.search(r"(?P<targets>[A-Z0-9/]+)\s*不支持所有 CPU 算子", text)
    if none:
        out.append(
            {
                "kind": "values",
                "targets": none["targets"].lower().split("/"),
                "values": [],
                "text": none[0],
            }
        )
    some = re.search(r"(?P<targets>[A-Z0-9/]+)\s*仅支持部分 CPU 算子如下\s*(?P<ops>.+)$", text)
    if some:
        ops = [o.strip() for o in some["ops"].split(",")]
        out.append(
            {
                "kind": "values",
                "targets": some["targets"].lower().split("/"),
                "values": ops,
                "text": some[0],
            }
        )
    return out


# --- chapter 5 ----------------------------------------------------------------------------


def _notes(body: list[Line], prefix: str) -> list[dict[str, Any]]:
    notes: list[dict[str, Any]] = []
    for line in body:
        match = _NOTE.match(line.text)
        if match:
            notes.append(
                {"id": f"{prefix}/note/{match['n']}", "page": line.page, "text": match["text"]}
            )
        elif notes and line.text.startswith("    "):
            notes[-1]["text"] += line.text.strip()
    for note in notes:
        note.update({"kind": "note"})
    return notes


def _output_rows(body: list[Line]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    precision, dims = "", ""
    for line in body:
        raw = reading.normalise_keep_columns(line.text)
        match = _LAYOUT.search(raw)
        head = raw[: match.start()] if match else raw
        for word in ("int8", "float16", "无限制"):
            if re.search(rf"(^|\s){word}(\s|$)", head):
                precision = word
        if "4维" in head.replace(" ", "") and "非" not in head:
            dims = "4"
        if "非 4" in head or "非4" in head:
            dims = "not 4"
        if match:
            layout = "UNDEFINE" if match["layout"] == "UNDE-" else match["layout"]
            cells = [(m.start(), m[0]) for m in re.finditer(r"\S+(?: \S+)*", raw[match.end() :])]
            start = match.end()
            row = {
                "precision": precision,
                "dims": dims,
                "layout": layout,
                "columns": [start + c[0] for c in cells],
                "cells": [c[1] for c in cells],
                "lines": [line],
            }
            rows.append(row)
        elif rows and raw.strip() and not re.search(r"芯片|模型输出|Layout|齐要求", raw):
            row = rows[-1]
            for m in re.finditer(r"\S+(?: \S+)*", raw):
                if m[0] in ("FINE", "度", "维度") or m.start() < row["columns"][0] - 2:
                    continue
                column = 1 if len(row["columns"]) > 1 and m.start() >= row["columns"][1] - 2 else 0
                while len(row["cells"]) <= column:
                    row["cells"].append("")
                row["cells"][column] += m[0]
            row["lines"].append(line)
    return rows


def _row_limit(
    group: str, row: dict[str, Any], seed: dict[tuple[str, str, str], Any]
) -> dict[str, Any]:
    channel = row["cells"][0] if row["cells"] else ""
    hw = row["cells"][1] if len(row["cells"]) > 1 else ""
    rule: dict[str, Any] = {
        "precision": row["precision"],
        "dims": row["dims"],
        "layout": row["layout"],
    }
    aligns = [int(n) for n in _ALIGN.findall(channel)]
    if channel == "无":
        rule["channel_align"] = None
    elif "卷积类算子" in channel and len(aligns) == 2:
        rule["channel_align"] = {"conv": aligns[0], "other": aligns[1]}
    elif len(aligns) == 1:
        rule["channel_align"] = aligns[0]
    hw_aligns = _ALIGN.findall(hw)
    if hw in ("无", ""):
        rule["hw_align"] = None
    elif len(hw_aligns) == 1:
        rule["hw_align"] = int(hw_aligns[0])
    text = "\n".join(line.text.strip() for line in row["lines"])
    out: dict[str, Any] = {
        "id": f"{group}/output/{row['precision']}/{row['dims']}/{row['layout']}",
        "kind": "output",
        "rule": rule,
        "page": row["lines"][0].page,
        "text": text,
    }
    if "channel_align" not in rule or "hw_align" not in rule:
        out.update(reading.free(f"cells not read: channel {channel!r}, H*W {hw!r}"))
        return out
    other = seed.get((row["precision"], row["dims"], row["layout"]))
    if other is not None:
        mine = rule["channel_align"]
        conv, rest = (mine["conv"], mine["other"]) if isinstance(mine, dict) else (mine, mine)
        if (conv, rest, rule["hw_align"]) != (other.align_conv, other.align_other, other.hw_align):
            out["inconsistent"] = (
                f"seed 003 (2.5.0) documents this row as channel {other.align_conv}/"
                f"{other.align_other} (convolution/other), H*W {other.hw_align}: "
                f"{other.row}"
            )
    return out


def _seed_rows(targets: list[str]) -> dict[tuple[str, str, str], Any]:
    catalogue = load_model_io()
    try:
        group = catalogue.group(targets[0])
    except ModelIOError:
        return {}
    dims = {"4": "4"}
    return {
        (
            r.precision if r.precision != "Unrestricted" else "无限制",
            dims.get(r.dims, "not 4"),
            r.layout,
        ): r
        for r in group.outputs
    }


def model_io(lines: list[Line], version: str) -> dict[str, Any]:
    inputs = sections(lines, "5.1.")
    outputs = sections(lines, "5.2.")
    notes = {s.number: s for s in sections(lines, "5.")}
    groups = []
    for section in outputs:
        targets = [t.strip().lower() for t in section.title.split("/")]
        seed = _seed_rows(targets)
        rows = [_row_limit(section.title, row, seed) for row in _output_rows(section.body)]
        for row in rows:
            row["section"] = section.number
        image = next(
            (s for s in inputs if s.title.split("/")[0] == section.title.split("/")[0]), None
        )
        if image is not None:
            rows.insert(
                0,
                {
                    "id": f"{section.title}/input/table",
                    "kind": "free-text",
                    "rule": {"reason": "the input table is an image in the PDF: no text to read"},
                    "section": image.number,
                    "page": image.page,
                    "text": image.title,
                },
            )
        groups.append(
            {"section": section.number, "group": section.title, "targets": targets, "limits": rows}
        )
    return {
        "version": version,
        "section": "5",
        "input_notes": _notes(notes["5.1"].body, "input") if "5.1" in notes else [],
        "output_notes": _notes(notes["5.2"].body, "output") if "5.2" in notes else [],
        "groups": groups,
    }
