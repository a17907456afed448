"""Parse the verbose build log of rknn-toolkit2 into placement, rewrites and native layouts.

The log mixes two sources: the Python side prints ``D fuse_ops results:`` blocks and ``E ...``
errors (with ANSI colours), the C compiler (librknnc) prints ``D RKNN: [hh:mm:ss.mmm] ...``
lines carrying the "Network Layer Information Table" and the "Feature Tensor Information
Table". Columns are found by the table's own header, rows are split on whitespace (the toolkit
widens columns for long names rather than wrapping them), and a row broken over two physical
lines (a terminal copy) is joined again. Anything unreadable is skipped, so a truncated log
yields what it has.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_COMPILER_PREFIX = re.compile(r"^[DIWEF] RKNN: \[[0-9:.]+\] ?")
_LOG_LINE = re.compile(r"^[DIWEF] ")  # every line either side prints starts like this
_ROW = re.compile(r"^\d+\s")  # table rows start with their numeric ID
_RULE = re.compile(r"^-{10,}[-+]*$")
_REWRITE = re.compile(r"^D\s+(\w+): remove node = (\[.*?\]), add node = (\[.*\])\s*$")
_TIMESTAMP = re.compile(r"(?<=^RKNN: )\[[0-9:.]+\] ")
_SHAPE = re.compile(r"\(([^()]*)\)")

# Layers the toolkit lists for every model, always on the CPU: never a fallback.
IO_LAYERS = frozenset({"InputOperator", "OutputOperator"})
LAYER_TABLE = "Network Layer Information Table"
TENSOR_TABLE = "Feature Tensor Information Table"
# What a stored parse was read by (the simulator cache keeps parsed logs): this file's own
# text, so any change to the parser makes stored parses stale.
PARSER_VERSION = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


@dataclass
class BuildLog:
    """What one build log says about the compiled network."""

    # {"id", "op", "name", "full_name", "target", "dtype", "input_shapes", "output_shapes",
    #  "truncated", "io"}; "op" is the compiled op type (e.g. ConvRelu), "name" the ONNX node
    #  name, "io" true for the model's input and output operators (IO_LAYERS) and the toolkit's
    #  own input layer (``_own_input_layer``).
    layers: list[dict[str, Any]] = field(default_factory=list)
    # fuse_ops results, verbatim: "tiling_maxpool: remove node = ['mp'], add node = [...]"
    rewrites: list[str] = field(default_factory=list)
    # {"id", "user", "name", "dtype", "format", "orig_shape", "native_shape"}
    tensors: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # "E" messages, continuation lines joined

    @property
    def rewrite_names(self) -> list[str]:
        """The rewrite rule names in log order, e.g. ["tiling_maxpool"]."""
        return [entry.split(":", 1)[0] for entry in self.rewrites]


def clean_lines(text: str) -> list[str]:
    """Log lines without colour codes and without the frames a progress bar overwrote."""
    text = _ANSI.sub("", text)
    return [line.rsplit("\r", 1)[-1].rstrip() for line in text.split("\n")]


def parse_build_log(text: str) -> BuildLog:
    """Read layers, rewrites, tensors and errors from a verbose rknn-toolkit2 log."""
    lines = clean_lines(text)
    log = BuildLog()
    log.rewrites = [
        f"{m[1]}: remove node = {m[2]}, add node = {m[3]}"
        for m in map(_REWRITE.match, lines)
        if m is not None
    ]
    log.errors = _errors(lines)
    for title, rows in _tables(lines):
        if title == LAYER_TABLE:
            log.layers.extend(filter(None, (_layer(row) for row in rows)))
        elif title == TENSOR_TABLE:
            log.tensors.extend(filter(None, (_tensor(row) for row in rows)))
    return log


def _errors(lines: list[str]) -> list[str]:
    """Each "E ..." message with the unprefixed lines that continue it."""
    errors: list[str] = []
    collecting = False
    for line in lines:
        if _LOG_LINE.match(line):
            collecting = line.startswith("E ")
            if collecting:  # the compiler's timestamp would make equal errors differ
                errors.append(_TIMESTAMP.sub("", line[2:]).strip())
        elif collecting and line.strip():
            errors[-1] += "\n" + line.strip()
    return errors


def parse_layer_times(text: str) -> list[dict[str, Any]]:
    """The runtime's per-layer table (``RKNN_QUERY_PERF_DETAIL``: the layer table with a
    ``Time(us)`` column, unprefixed): per layer {"id", "op", "name", "full_name", "target",
    "dtype", "time_us", "io"}, keyed by layer name as the build log's."""
    layers = []
    for title, rows in _tables_in(clean_lines(text)):
        if title != LAYER_TABLE:
            continue
        for row in rows:
            layer = _layer(row)
            try:
                time_us = float(row["Time(us)"])
            except (KeyError, ValueError):
                continue
            if layer is not None:
                keep = ("id", "op", "name", "full_name", "target", "dtype", "io")
                layers.append({**{key: layer[key] for key in keep}, "time_us": time_us})
    return layers


def _tables(lines: list[str]) -> list[tuple[str, list[dict[str, str]]]]:
    """The compiler's tables in a build log."""
    return _tables_in(_compiler_body(lines))


def _tables_in(body: list[str]) -> list[tuple[str, list[dict[str, str]]]]:
    """The tables of ``body`` (lines without log prefixes): (title, rows as {column: cell})."""
    tables: list[tuple[str, list[dict[str, str]]]] = []
    i = 0
    while i < len(body):
        title = body[i].strip()
        if title not in (LAYER_TABLE, TENSOR_TABLE):
            i += 1
            continue
        # title, rule, header, rule, rows..., rule
        header_at = next(
            (j for j in range(i + 1, min(i + 4, len(body))) if body[j].startswith("ID ")), None
        )
        if header_at is None:
            i += 1
            continue
        header = body[header_at]
        rows: list[dict[str, str]] = []
        j = header_at + 1
        while j < len(body) and _RULE.match(body[j].strip()):
            j += 1
        while j < len(body) and not _RULE.match(body[j].strip()):
            row = _split_row(header, body[j])
            if row:
                rows.append(row)
            j += 1
        tables.append((title, rows))
        i = j
    return tables


def _compiler_body(lines: list[str]) -> list[str]:
    """The compiler's lines without their prefix; a wrapped line is joined to its start."""
    body: list[str] = []
    for line in lines:
        prefix = _COMPILER_PREFIX.match(line)
        if prefix:
            body.append(line[prefix.end() :])
        elif body and line and not _LOG_LINE.match(line) and _ROW.match(body[-1]):
            body[-1] += line  # the rest of a table row that a terminal wrapped
        else:
            body.append("")  # keeps a foreign line from gluing two compiler lines together
    return body


def _split_row(header: str, line: str) -> dict[str, str] | None:
    """Map a row's whitespace-separated cells onto the header's column names.

    The last column on each side of a "|" may be empty (e.g. FullName of an inserted layer)
    and the last one keeps any spaces it has.
    """
    if not _ROW.match(line):
        return None
    row: dict[str, str] = {}
    for names_part, cells_part in zip(header.split("|"), line.split("|"), strict=False):
        names = names_part.split()
        cells = cells_part.split(None, len(names) - 1) if names else []
        row.update(zip(names, cells, strict=False))
    return row


def _shapes(cell: str) -> tuple[list[list[int]], bool]:
    """'(1,3,4,4),(1)' -> [[1, 3, 4, 4], [1]]; True when the toolkit cut the list with '...'."""
    shapes = []
    for inner in _SHAPE.findall(cell):
        try:
            shapes.append([int(d) for d in inner.split(",") if d.strip()])
        except ValueError:
            continue
    return shapes, cell.rstrip().endswith("...")


def _layer(row: dict[str, str]) -> dict[str, Any] | None:
    if not {"ID", "OpType", "Target"} <= row.keys():
        return None
    inputs, cut_in = _shapes(row.get("InputShape", ""))
    outputs, cut_out = _shapes(row.get("OutputShape", ""))
    full_name = row.get("FullName", "").strip()
    return {
        "id": int(row["ID"]),
        "op": row["OpType"],
        "name": full_name.split(":", 1)[1] if ":" in full_name else full_name,
        "full_name": full_name,
        "target": row["Target"],
        "dtype": row.get("DataType", ""),
        "input_shapes": inputs,
        "output_shapes": outputs,
        "truncated": cut_in or cut_out,
        "io": row["OpType"] in IO_LAYERS
        or _own_input_layer(row["OpType"], full_name, inputs, outputs),
    }


def _own_input_layer(
    op: str, full_name: str, inputs: list[list[int]], outputs: list[list[int]]
) -> bool:
    """Whether a layer is the 1x1 Conv the toolkit puts after a model input for its own data
    layout (2.5.0 adds it to some shapes and not others): no ONNX node name, and its output
    the shape of its input. Like the input and output operators, it is not the model's."""
    return op == "Conv" and not full_name and bool(inputs) and outputs[:1] == inputs[:1]


def _tensor(row: dict[str, str]) -> dict[str, Any] | None:
    if not {"ID", "Tensor", "DataFormat"} <= row.keys():
        return None
    orig, _ = _shapes(row.get("OrigShape", ""))
    native, _ = _shapes(row.get("NativeShape", ""))
    return {
        "id": int(row["ID"]),
        "user": row.get("User", ""),
        "name": row["Tensor"],
        "dtype": row.get("DataType", ""),
        "format": row["DataFormat"],
        "orig_shape": orig[0] if orig else None,
        "native_shape": native[0] if native else None,
    }


def tensor_sizes(text: str) -> dict[str, int]:
    """Bytes per feature tensor, by tensor name: the Size column of the tensor table.

    A ``*`` between Start and End glues those two cells together, so the size is read as the
    last of the hexadecimal numbers right of the table's ``|``.
    """
    sizes: dict[str, int] = {}
    for title, rows in _tables(clean_lines(text)):
        if title != TENSOR_TABLE:
            continue
        for row in rows:
            cells = " ".join(row.get(k, "") for k in ("[Start", "End)", "Size"))
            numbers = cells.replace("*", " ").split()
            if "Tensor" in row and len(numbers) == 3:
                try:
                    sizes.setdefault(row["Tensor"], int(numbers[2], 16))
                except ValueError:
                    continue
    return sizes


_PASS = re.compile(r"^(>>>>>> start|<<<<<<<< end): (\S+)")
_UNCAUGHT = re.compile(r"terminate called after throwing an instance of '([^']+)'")


def crash_site(text: str) -> str:
    """Where a build that died was, from its log: the compiler pass that started and never
    ended, the C++ exception nobody caught and the last compiler error before it ("" when the
    log shows none of them).

    E.g. "compiler pass OpEmit, uncaught std::out_of_range: vector::_M_range_check: ...", or
    (rv1103b, rk2118) "..., after: failed to tile argb mode layer!".
    """
    lines = [_COMPILER_PREFIX.sub("", line) for line in clean_lines(text)]
    open_passes: list[str] = []
    for found in filter(None, map(_PASS.match, lines)):
        if found[1].startswith(">"):
            open_passes.append(found[2])
        elif found[2] in open_passes:
            open_passes.remove(found[2])
    parts = [f"compiler pass {open_passes[-1]}"] if open_passes else []
    for index, line in enumerate(lines):
        uncaught = _UNCAUGHT.search(line)
        if uncaught:
            what = lines[index + 1].strip() if index + 1 < len(lines) else ""
            what = what.removeprefix("what():").strip()
            parts.append(f"uncaught {uncaught[1]}" + (f": {what}" if what else ""))
            break
    errors = [error.splitlines()[0] for error in _errors(clean_lines(text)) if error.strip()]
    if errors:
        parts.append(f"after: {errors[-1]}")
    return ", ".join(parts)
