"""The one safe YAML loader (``DataLoader``) every file a user or vendor hands over is read with:
parse, validate against a JSON schema, report errors precisely.

Every error names the file, the key path inside it and the offending value, because the
people correcting a table are reading a vendor PDF side by side with the YAML.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema
import yaml

# libyaml's loader when PyYAML was built with it: the catalogue loads ten times faster.
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


MAX_EXPANDED = 1_000_000  # values plus scalar characters of a document, aliases expanded


class DataLoader(_SAFE_LOADER):
    """The safe loader, refusing a document that aliases (``*name``) expand beyond
    ``MAX_EXPANDED``, or that an alias makes cyclic: a few hundred bytes of nested aliases
    (a billion-laughs file) expand to gigabytes in any code that walks or prints the result,
    as schema validation does. Aliases of moderate use (a shared ``versions``) still load."""

    def construct_document(self, node: yaml.Node) -> Any:
        _check_expansion(node)
        return super().construct_document(node)


def _check_expansion(root: yaml.Node) -> None:
    """Raise a ComposerError when ``root`` expanded is larger than ``MAX_EXPANDED`` or
    contains itself; linear in the document's distinct nodes."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # the path from the root: an alias back to one is a cycle
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > MAX_EXPANDED:
                raise _alias_error(f"aliases (*name) expand it beyond {MAX_EXPANDED} values", node)
        elif key in open_nodes:
            raise _alias_error("an alias (*name) inside the value it names", node)
        elif key not in sizes:
            if isinstance(node, yaml.ScalarNode):
                sizes[key] = 1 + len(node.value)
                continue
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    return []


def _alias_error(problem: str, node: yaml.Node) -> yaml.YAMLError:
    return yaml.composer.ComposerError(None, None, problem, node.start_mark)


class DataFileError(ValueError):
    """A data file (a document's YAML, a board file) that cannot be used: names file, key path
    and value."""

    def __init__(self, file: Path | str, key_path: str, value: object, message: str) -> None:
        self.file = str(file)
        self.key_path = key_path
        self.value = value
        self.message = message
        where = f"{key_path}: " if key_path else ""  # the whole file: no key to name
        super().__init__(f"{self.file}: {where}{message} (value: {value!r})")


def key_path(parts: Iterable[object]) -> str:
    """Render a path such as ``operators.GRU.inputs[0].dims.seqlength``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load_yaml(path: Path, error: type[DataFileError] = DataFileError) -> Any:
    """The parsed file. A syntax error gives its position and the parser's problem but never
    the offending line, which in a board file may hold a secret; ``error`` is the raised type."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(path, "", None, f"cannot read file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise error(path, "", None, f"not UTF-8 text (byte {exc.start})") from None
    try:
        return yaml.load(text, Loader=DataLoader)
    except ValueError:  # a scalar YAML resolves but cannot construct, e.g. the date 2024-13-45
        raise error(
            path, "", None, "not valid YAML: a value such as a date does not exist"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        problem = getattr(exc, "problem", None) or "syntax error"
        raise error(path, "", None, f"not valid YAML at {where}: {problem}") from None


def load_validated(path: Path, schema_path: Path) -> Any:
    """Load ``path`` and validate it against the JSON schema stored (as YAML) at ``schema_path``."""
    document = load_yaml(path)
    validator = jsonschema.Draft202012Validator(load_yaml(schema_path))
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        assert error is not None  # errors is non-empty
        raise DataFileError(path, key_path(error.absolute_path), error.instance, error.message)
    return document
