"""Host/board version combinations known not to work, checked before any case runs.

The rules are data (``data/compatibility.yaml``): each compares one host-side version (the
toolkit that converts, or a board fact) with a board fact and is an ``error`` (the board is not
used: one infrastructure error naming both versions and the fix) or a ``warning`` (recorded; the
board runs). A fact the board does not show ("unknown") matches no rule.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
import yaml

from harness.boards.inventory import VersionCheck
from harness.vendors.rknn import DATA_DIR

RULES_FILE = DATA_DIR / "compatibility.yaml"
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["rules"],
    "properties": {
        "rules": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "severity", "host", "board", "when", "message", "fix"],
                "properties": {
                    "id": {"type": "string"},
                    "severity": {"enum": ["error", "warning"]},
                    "host": {"type": "string"},
                    "board": {"type": "string"},
                    "when": {
                        "enum": [
                            "major-below",
                            "minor-differs",
                            "release-differs",
                            "below",
                            "earlier",
                        ]
                    },
                    "minimum": {"type": "string"},
                    "message": {"type": "string"},
                    "fix": {"type": "string"},
                    "source": {"type": "string"},
                },
            },
        }
    },
}
_RELEASE = re.compile(r"v?(\d+(?:\.\d+)*)")


def release(text: object) -> tuple[int, ...] | None:
    """'2.3.2 (429f97ae6b@2025-04-09)' -> (2, 3, 2); None when it is no version."""
    match = _RELEASE.match(str(text).strip())
    return tuple(int(part) for part in match[1].split(".")) if match else None


def _padded(version: tuple[int, ...]) -> tuple[int, ...]:
    return (*version, 0, 0, 0)[:3]


_CONDITIONS: dict[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]] = {
    "major-below": lambda host, board: board[0] < host[0],
    "minor-differs": lambda host, board: _padded(host)[:2] != _padded(board)[:2],
    "release-differs": lambda host, board: _padded(host) != _padded(board),
    "below": lambda minimum, board: _padded(board) < _padded(minimum),
    "earlier": lambda host, board: board < host,
}


@functools.cache
def rules() -> tuple[dict[str, Any], ...]:
    """The rules file, schema-checked."""
    document = yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))
    jsonschema.validate(document, _SCHEMA)
    return tuple(document["rules"])


def check_versions(toolkit: str, facts: Mapping[str, Any]) -> VersionCheck:
    """The rules that ``facts`` (a board's discovery) and the host's rknn-toolkit2 ``toolkit``
    break, as an error or a warning each, the fix included."""
    known = {**facts, "toolkit": toolkit}
    errors: list[str] = []
    warnings: list[str] = []
    for rule in rules():
        host_text = str(rule.get("minimum", known.get(rule["host"], "unknown")))
        host, board = release(host_text), release(known.get(rule["board"], "unknown"))
        if host is None or board is None or not _CONDITIONS[rule["when"]](host, board):
            continue
        values = {
            "host": _short(known.get(rule["host"])),
            "board": _short(known.get(rule["board"])),
            "minimum": rule.get("minimum", ""),
        }
        text = f"{rule['message'].format(**values)}; fix: {rule['fix'].format(**values)}"
        (errors if rule["severity"] == "error" else warnings).append(text)
    return VersionCheck(host={"rknn_toolkit2": toolkit}, errors=errors, warnings=warnings)


def _short(value: object) -> str:
    """A version without its build suffix: '2.3.2 (429f...)' -> '2.3.2'."""
    return str(value).split(" ", 1)[0]
