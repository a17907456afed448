"""Board files: one YAML file per board, a directory of them is the inventory.

A board file says how to reach a board (host, port, user, auth, known_hosts), what it should
be (SoC, toolkit platform) and how to run cases on it (board-side python or, for boards with
only the C API, the host path of the ``hil_c_runner`` built for it; work directory, runtime,
NPU core mask). Secrets never live in it: a password is given only as the NAME of an
environment variable (``auth.password_env``), and a ``password`` key is rejected outright.
Every error names the file, the key and the value, like the catalogue loader's.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from harness.spec.loader import CatalogueError, key_path, load_yaml

# RKNN.config(target_platform=...) of rknn-toolkit2 2.5.0.
PLATFORMS = (
    "rk3562",
    "rk3566",
    "rk3568",
    "rk3576",
    "rk3588",
    "rv1103",
    "rv1106",
    "rv1103b",
    "rv1106b",
    "rk2118",
    "rv1126b",
)
# rknn-toolkit-lite2 (the on-board Python runtime) exists for these only; the rest need a C runner.
LITE2_PLATFORMS = ("rk3562", "rk3566", "rk3568", "rk3576", "rk3588", "rv1126b")
STAND_IN = "simulator-stand-in"  # TEST ONLY: the runner simulates the shipped ONNX model
# Boards without Python (RV1103/RV1106/RK2118): the C runner of harness.vendors.rknn.
C_RUNNER = "c-runner"
RUNTIMES = (
    "rknnlite",  # rknn-toolkit-lite2 through harness/vendors/rknn/board_files/hil_board_runner.py
    C_RUNNER,
    STAND_IN,
)
# Platforms whose only runtime is librknnmrt.so, which has no rknn_set_core_mask (design.md).
MRT_PLATFORMS = ("rv1103", "rv1106", "rv1103b", "rv1106b", "rk2118")
NPU_CORES = {"rk3588": 3, "rk3576": 2}  # other platforms have one core and no mask to choose
CORE_MASKS = ("auto", "all", "0", "1", "2", "0_1", "0_1_2")
DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
_NOT_SHOWN = "<not shown>"
_AUTH_HELP = (
    "auth needs exactly one of: key_file (path to a private key), agent: true (the SSH agent), "
    "or password_env (the NAME of an environment variable holding the password)"
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "host", "user", "auth", "soc", "platform", "workdir", "runtime"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]*$"},
        "host": {"type": "string", "minLength": 1, "pattern": r"^[^\s]+$"},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "user": {"type": "string", "pattern": r"^[A-Za-z0-9._][A-Za-z0-9._-]*$"},
        "auth": {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "maxProperties": 1,
            "properties": {
                "key_file": {"type": "string", "minLength": 1},
                "agent": {"const": True},
                "password_env": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
            },
        },
        "known_hosts": {"type": "string", "minLength": 1},
        "soc": {"type": "string", "pattern": r"^r[kv]\d{4}[a-z]?$"},
        "platform": {"enum": list(PLATFORMS)},
        "python": {"type": "string", "minLength": 1},
        "c_runner": {"type": "string", "minLength": 1},
        "workdir": {"type": "string", "pattern": r"^/(?!/*$)"},  # absolute, not "/" itself
        "runtime": {"enum": list(RUNTIMES)},
        "core_mask": {"enum": list(CORE_MASKS)},
        "tags": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "sysroot": {"type": "string", "pattern": r"^/"},
    },
}


class BoardFileError(CatalogueError):
    """A board file (or inventory directory) that cannot be used: file, key path, value."""


@dataclass(frozen=True)
class Board:
    """One board as its file describes it; paths are resolved against the file's folder."""

    name: str
    host: str
    port: int
    user: str
    key_file: Path | None  # exactly one of key_file, agent, password_env is set
    agent: bool
    password_env: str | None
    known_hosts: Path
    soc: str  # expected SoC, e.g. "rk3588"; discovery flags a board that reports another
    platform: str  # RKNN.config target_platform used to convert models for this board
    python: str  # board-side interpreter for the runner
    c_runner: Path | None  # runtime c-runner: the hil_c_runner binary on the host, else None
    workdir: str  # absolute board-side folder the harness may own (locks, sessions)
    runtime: str
    core_mask: str
    tags: tuple[str, ...]
    sysroot: str  # test/diagnostic aid: prefix of the probed /proc, /sys and /usr/lib paths
    source: Path  # the board file

    @property
    def address(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"


def load_board(path: Path) -> Board:
    """Read and check one board file."""
    document = load_yaml(path, BoardFileError)
    _reject_passwords(path, document, [])
    if isinstance(document, dict) and isinstance(document.get("core_mask"), int):
        raise BoardFileError(
            path,
            "core_mask",
            document["core_mask"],
            'quote the core mask (e.g. "0_1"): YAML reads an unquoted 0_1 as the number 1',
        )
    errors = sorted(
        jsonschema.Draft202012Validator(SCHEMA).iter_errors(document),
        key=lambda e: list(e.absolute_path),
    )
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        assert error is not None  # errors is non-empty
        where = key_path(error.absolute_path)
        if where.startswith("auth") or not isinstance(document, dict):
            # The value may be a secret typed into the wrong key: never echo it.
            raise BoardFileError(path, where, _NOT_SHOWN, f"{_AUTH_HELP} ({error.validator})")
        raise BoardFileError(path, where, error.instance, error.message)
    return _board(path, document)


def load_inventory(directory: Path) -> list[Board]:
    """Every ``*.yaml``/``*.yml`` board file directly in ``directory``, sorted by name.

    Sub-folders (``examples/``, ``runner/``) are not read, so the shipped examples never
    become part of an inventory by accident. Board names must be unique.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise BoardFileError(directory, "", str(directory), "board directory does not exist")
    files = sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    boards: dict[str, Board] = {}
    for path in files:
        board = load_board(path)
        if board.name in boards:
            first = boards[board.name].source
            raise BoardFileError(path, "name", board.name, f"board name already used by {first}")
        boards[board.name] = board
    return [boards[name] for name in sorted(boards)]


def _reject_passwords(path: Path, node: object, where: list[object]) -> None:
    """A ``password`` key anywhere in the file is an error; its value is never shown."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and re.fullmatch(r"pass(word|wd|phrase)?", key, re.I):
                raise BoardFileError(
                    path,
                    key_path([*where, key]),
                    _NOT_SHOWN,
                    "passwords must not be stored in board files; put the NAME of an "
                    "environment variable holding it in auth.password_env",
                )
            _reject_passwords(path, value, [*where, key])
    elif isinstance(node, list):
        for index, item in enumerate(node):
            _reject_passwords(path, item, [*where, index])


def _board(path: Path, doc: dict[str, Any]) -> Board:
    platform, runtime = doc["platform"], doc["runtime"]
    if runtime == "rknnlite" and platform not in LITE2_PLATFORMS:
        raise BoardFileError(
            path,
            "runtime",
            runtime,
            f"rknn-toolkit-lite2 does not support platform {platform}; "
            "use runtime c-runner for boards with the C API only",
        )
    if runtime == C_RUNNER and "c_runner" not in doc:
        raise BoardFileError(
            path,
            "c_runner",
            None,
            f"runtime {C_RUNNER} needs c_runner: the host path of the hil_c_runner built for "
            f"this board (hil boards build-runner --platform {platform} ...)",
        )
    if runtime != C_RUNNER and "c_runner" in doc:
        raise BoardFileError(
            path, "c_runner", doc["c_runner"], f"only for runtime {C_RUNNER} (runtime: {runtime})"
        )
    core_mask = str(doc.get("core_mask", "auto"))
    if runtime == C_RUNNER and platform in MRT_PLATFORMS and core_mask != "auto":
        raise BoardFileError(
            path,
            "core_mask",
            core_mask,
            f"platform {platform} runs librknnmrt, which cannot choose NPU cores; use auto",
        )
    cores = NPU_CORES.get(platform, 0)
    if core_mask not in ("auto", "all") and max(map(int, core_mask.split("_"))) >= cores:
        raise BoardFileError(
            path,
            "core_mask",
            core_mask,
            f"platform {platform} has no such NPU core to choose "
            f"(selectable cores: {', '.join(map(str, range(cores))) or 'none; use auto'})",
        )
    auth = doc["auth"]
    key_file = _path(path, auth["key_file"]) if "key_file" in auth else None
    return Board(
        name=doc["name"],
        host=doc["host"],
        port=int(doc.get("port", 22)),
        user=doc["user"],
        key_file=key_file,
        agent=bool(auth.get("agent", False)),
        password_env=auth.get("password_env"),
        known_hosts=_path(path, doc.get("known_hosts", DEFAULT_KNOWN_HOSTS)),
        soc=doc["soc"],
        platform=platform,
        python=doc.get("python", "python3"),
        c_runner=_path(path, doc["c_runner"]) if "c_runner" in doc else None,
        workdir=doc["workdir"].rstrip("/") or "/",
        runtime=runtime,
        core_mask=core_mask,
        tags=tuple(doc.get("tags", [])),
        sysroot=doc.get("sysroot", "/"),
        source=path,
    )


def c_runner_binary(board: Board) -> Path:
    """The board's ``c_runner`` file; refused, naming the field, when it is not built yet."""
    if board.c_runner is None or not board.c_runner.is_file():
        raise BoardFileError(
            board.source,
            "c_runner",
            str(board.c_runner),
            "no such file: build the runner (hil boards build-runner; see the C runner's README)",
        )
    return board.c_runner


def _path(board_file: Path, text: str) -> Path:
    """``~`` expanded; relative paths are relative to the board file's folder."""
    return Path(os.path.normpath((board_file.parent / Path(text).expanduser()).absolute()))
