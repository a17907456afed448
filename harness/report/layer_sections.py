"""A repro bundle's README sections from a user model's per-layer tables
(``harness.results.layer_tables``): each layer against the document, each layer's accuracy.

The tables are read as data written by the run; one that is missing gives no section, one that
cannot be read says so in its section rather than stopping the bundle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.report.markdown import md_escape
from harness.results.layer_tables import DOCUMENT_CHECK, LAYER_ACCURACY


def _table(folder: Path, name: str) -> tuple[Any, str]:
    """(the JSON of ``folder/name`` or None, why it could not be read or "")."""
    path = folder / name
    if not path.is_file():
        return None, ""
    try:
        return json.loads(path.read_text(encoding="utf-8")), ""
    except (OSError, ValueError) as exc:
        return None, f"{name} could not be read: {exc}"


def document_section(folder: Path) -> list[str]:
    """The "What the documentation says" section, per layer; [] when the case has no
    document check."""
    check, problem = _table(folder, DOCUMENT_CHECK)
    if check is None:
        return [md_escape(problem)] if problem else []
    try:
        return _document_lines(check)
    except (KeyError, TypeError, AttributeError) as exc:  # a table edited by hand
        return [md_escape(f"{DOCUMENT_CHECK} could not be read: no field {exc}")]


def _document_lines(check: dict[str, Any]) -> list[str]:
    lines = [
        f"Every layer against {md_escape(check['document'])}, {md_escape(check['dtype'])} on "
        f"{md_escape(check['platform'])}: the model is documented as "
        f"**{md_escape(check['documented'])}**.",
        "",
        f"{md_escape(check['summary'])}.",
    ]
    for layer in check["layers"]:
        lines += ["", _layer_heading(layer), ""]
        for word, key in (("outside", "outside"), ("inside", "inside")):
            for limit in layer[key]:
                lines.append(
                    f"- {word} {md_escape(limit['id'])} ({md_escape(limit['value'])}), "
                    f"{md_escape(limit['where'])}:"
                )
                lines += [f"  > {md_escape(text)}" for text in limit["text"].splitlines()]
        if layer["unread"]:
            lines.append(
                "- not read from the model (no such quantity, or its condition does not "
                f"apply): {md_escape(', '.join(layer['unread']))}"
            )
    return lines


def _layer_heading(layer: dict[str, Any]) -> str:
    name = f"### {layer['index']} {md_escape(layer['node'])} ({md_escape(layer['op'])})"
    if layer["status"] == "not listed":
        return f"{name}: not listed by the document, which makes no claim about it"
    if layer["status"] == "outside":
        return f"{name}: outside the documented limits of {md_escape(layer['entry'])}"
    return f"{name}: documented as supported by {md_escape(layer['entry'])}"


def accuracy_section(folder: Path) -> list[str]:
    """The "Per-layer accuracy" section: the exposed run's table; [] when none was made."""
    layers, problem = _table(folder, LAYER_ACCURACY)
    if layers is None:
        return ["## Per-layer accuracy", "", md_escape(problem)] if problem else []
    try:
        return _accuracy_lines(layers)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # a table edited by hand
        return [
            "## Per-layer accuracy",
            "",
            md_escape(f"{LAYER_ACCURACY} could not be read: {exc}"),
        ]


def _accuracy_lines(layers: list[dict[str, Any]]) -> list[str]:
    lines = [
        "## Per-layer accuracy",
        "",
        f"Every float tensor exposed as an output, run once and compared with the host "
        f"reference in graph order ({LAYER_ACCURACY}). Exposing a tensor keeps the compiler "
        "from fusing across it.",
        "",
        "| # | layer | op | compiled as | cosine | max abs error | result |",
        "|---|---|---|---|---|---|---|",
    ]
    for layer in layers:
        compiled = " ".join(
            str(layer.get(key) or "") for key in ("compiled", "placement", "dtype")
        ).strip()
        cosine = "-" if layer.get("cosine") is None else f"{layer['cosine']:.6f}"
        error = "-" if layer.get("max_abs") is None else f"{layer['max_abs']:.4g}"
        result = {True: "ok", False: "past tolerance", None: "not observed"}[layer.get("passed")]
        if layer.get("first_past_tolerance"):
            result = f"**first past tolerance**: {md_escape(layer.get('detail', ''))}"
        cells = [str(layer["index"]), md_escape(layer["node"]), md_escape(layer["op"])]
        cells += [md_escape(compiled or "-"), cosine, error, result]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
