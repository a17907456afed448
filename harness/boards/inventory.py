"""Board files: one YAML file per board, a directory of them is the inventory.

A board file says how to reach a board (one transport's settings: ``harness.boards.settings``),
what it should be (SoC, toolkit platform), where the harness may work on it (work
directory, board-side python) and which runtime runs cases on it, with that runtime's own keys.
Runtimes belong to the vendors: the loader takes a registry (``Runtimes``: runtime name ->
``RuntimeKind``) and each kind checks its part of the file and makes the board's ``Runtime``.
Secrets never live in a board file: a password is given only as the NAME of an environment
variable (``auth.password_env``), and a ``password`` key is rejected outright; loading a board
file declares its ``password_env`` variable to the run's redactor (``harness.text``). Every
error names the file and the key. It shows the value only when that is a scalar under a key the
schema knows outside ``auth``: an unknown key, a mapping or a list may hold a secret typed into
the wrong place, so their values are never shown.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import jsonschema

from harness.boards.settings import (
    LABGRID_SCHEMA,
    SETTINGS,
    FarmSettings,
    TransportSettings,
    farm_settings,
)
from harness.names import suggestion
from harness.safe_yaml import DataFileError, key_path, load_yaml
from harness.text import clipped, declare_secret_variable, printable

_NOT_SHOWN = "<not shown>"
_AUTH_HELP = (
    "auth needs exactly one of: key_file (path to a private key), agent: true (the SSH agent), "
    "or password_env (the NAME of an environment variable holding the password)"
)
_TRANSPORT_HELP = (
    "a board file names one transport: ssh: {host, user, auth, ...} (or those keys at the top "
    "level) or adb: {serial, server_host, server_port}"
)
_AUTH_PATH = re.compile(r"^(ssh\.)?auth(\.|\[|$)")
# What a key's value must be, in words, for errors (never the schema's regular expression);
# by key path, the SSH keys without their optional "ssh." section
_EXPECTED = {
    "name": "name is letters, digits, '.', '_' and '-', starting with a letter or a digit",
    "soc": "soc is lower-case rk/rv and four digits, e.g. rk3588",
    "workdir": "workdir must be an absolute path on the board, e.g. /home/hil/npu-hil, "
    "and not / itself",
    "sysroot": "sysroot must be an absolute path on the board",
    "python": "python is the board's Python, e.g. python3 or /usr/bin/python3",
    "tags": "tags is a list of words, e.g. [nightly]",
    "host": "host is a host name or an address, without spaces",
    "port": "port is a whole number from 1 to 65535",
    "user": "user is a login name: letters, digits, '.', '_' and '-'",
    "known_hosts": "known_hosts is the path of a known_hosts file",
    "labgrid": "labgrid names either a place or tags, not both: {place: NAME} or "
    "{tags: {soc: rk3588}}",
    "labgrid.coordinator": "labgrid.coordinator is the coordinator's HOST:PORT, without spaces",
    "labgrid.place": "labgrid.place is a place name: letters, digits, '.', '_' and '-'",
    "labgrid.tags": "labgrid.tags maps lower-case tag names to words of letters, digits, "
    "'.', '_' and '-', e.g. {soc: rk3588}",
    "labgrid.wait": "labgrid.wait is the seconds to wait for a free place: above 0, at most "
    "86400 (a day)",
    "adb.serial": "adb.serial is the serial adb devices lists, or HOST:PORT for adb over TCP",
    "adb.server_host": "adb.server_host is a host name or an address, without spaces",
    "adb.server_port": "adb.server_port is a whole number from 1 to 65535",
}

# The transport whose keys may stand at the top level of a board file: SSH's, as in the board
# files of before the adb transport
_TOP_LEVEL = "ssh"
# Without platform and runtime, whose values the runtime registry gives (``_schema``).
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "soc", "platform", "workdir", "runtime"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]*$"},
        **SETTINGS[_TOP_LEVEL].schema["properties"],
        # sections; which keys each needs is checked with the board's transport (``_transport``)
        **{name: {**kind.schema, "required": []} for name, kind in SETTINGS.items()},
        "labgrid": LABGRID_SCHEMA,
        "soc": {"type": "string", "pattern": r"^r[kv]\d{4}[a-z]?$"},
        "python": {"type": "string", "minLength": 1},
        "workdir": {"type": "string", "pattern": r"^/(?!/*$)"},  # absolute, not "/" itself
        "tags": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "sysroot": {"type": "string", "pattern": r"^/"},
    },
}


class BoardFileError(DataFileError):
    """A board file (or inventory directory) that cannot be used: file, key path and, when it
    may be shown, value; printable on a terminal whatever the file's names hold. A message
    that names its key itself ("soc is ...") is not prefixed with it again."""

    def __init__(self, file: Path | str, key_path: str, value: object, message: str) -> None:
        super().__init__(file, key_path, value, message)
        named = not key_path or message.startswith((f"{key_path} ", f"{_bare(key_path)} "))
        shown = "" if value is None or value == _NOT_SHOWN else f" (value: {value!r})"
        text = f"{file}: {'' if named else f'{key_path}: '}{message}{shown}"
        self.args = (printable(text),)


def _bare(key_path: str) -> str:
    """The key path without the optional ``ssh.`` section of the SSH keys."""
    return key_path.removeprefix("ssh.")


@dataclass(frozen=True)
class VersionCheck:
    """A board's versions judged against the host's: ``errors`` keep the board from running
    cases, ``warnings`` are recorded; each names both versions and the fix."""

    host: dict[str, str]  # the host-side versions compared, the toolkit's name -> its version
    errors: list[str]
    warnings: list[str]


Sections = Mapping[str, list[str]]  # the script's output: section name -> its lines


@dataclass(frozen=True)
class BoardDiscovery:
    """What a board's runtime looks for on it, besides what every board shows (SoC, Python,
    free disk): its vendor's part of the one discovery round trip (``Runtime.discovery``)."""

    # sh code between the neutral parts, printing "@@name" headed sections (a "driver"
    # section: the NPU driver's version line); it may use ``first`` and ``version``
    script: str
    python_packages: tuple[str, ...]  # distributions whose board-side versions it reads
    soc: re.Pattern[str]  # a device-tree compatible string -> group 1: the SoC
    # (sections, the packages' versions in order) -> its fields of the report
    facts: Callable[[Sections, list[str]], dict[str, Any]]
    # report field -> title: the versions ``hil boards check`` and the report header show
    shown: tuple[tuple[str, str], ...]


class Runtime(Protocol):
    """How cases run on a board: a vendor's object, made from its part of the board file."""

    @property
    def name(self) -> str:
        """The board file's ``runtime`` value."""

    @property
    def discovery(self) -> BoardDiscovery:
        """What discovery looks for on the board besides what every board shows."""

    def check_versions(self, facts: Mapping[str, Any], sdk: str | None = None) -> VersionCheck:
        """The board's ``facts`` (discovery) against the host's tools of release ``sdk``
        (None: this environment's)."""


class RuntimeKind(Protocol):
    """A runtime that board files may name, as its vendor declares it."""

    @property
    def platforms(self) -> tuple[str, ...]:
        """The toolkit platforms it serves."""

    @property
    def keys(self) -> Mapping[str, Any]:
        """Its own board-file keys, each with its JSON schema."""

    def load(self, path: Path, document: Mapping[str, Any]) -> Runtime:
        """Its part of the (schema-checked) board file at ``path``; ``BoardFileError`` if bad."""


Runtimes = Mapping[str, RuntimeKind]  # the registry: board-file runtime name -> its kind


@dataclass(frozen=True)
class Board:
    """One board as its file describes it; paths are resolved against the file's folder."""

    name: str
    transport: TransportSettings  # how to reach it: SSH or adb settings
    soc: str  # expected SoC, e.g. "rk3588"; discovery flags a board that reports another
    platform: str  # toolkit target platform used to convert models for this board
    python: str  # board-side interpreter (a Python runner's, and discovery's)
    workdir: str  # absolute board-side folder the harness may own (locks, sessions)
    runtime: Runtime
    tags: tuple[str, ...]
    sysroot: str  # test/diagnostic aid: prefix of the probed /proc, /sys and /usr/lib paths
    source: Path  # the board file
    # A labgrid place to lease (``harness.boards.farm``): the SSH host, port and user come
    # from it; None for a board the file reaches itself.
    farm: FarmSettings | None = None

    @property
    def address(self) -> str:
        """Where the transport reaches the board: ``user@host:port``, ``adb:serial@server``, or
        for a farm board not yet leased the place it wants."""
        if self.farm is not None:
            return f"labgrid {self.farm.wanted}"
        return self.transport.where.format(**vars(self.transport))


def load_board(path: Path, runtimes: Runtimes) -> Board:
    """Read and check one board file; ``runtimes`` are those it may name."""
    document = load_yaml(path, BoardFileError)
    _reject_passwords(path, document, [])
    validate(path, document, _schema(runtimes))
    board = _board(path, document, runtimes)
    for variable in board.transport.secret_variables:
        declare_secret_variable(variable)
    return board


def check_files(board: Board, *, new_known_hosts: bool = False) -> None:
    """The files a board's transport settings name are there (SSH: its ``auth.key_file`` and,
    unless ``new_known_hosts`` (trust on first use creates it), its ``known_hosts``). A missing
    one is a bad board file, not an unreachable board: ``BoardFileError`` naming the file and
    key."""
    for key, path in board.transport.files(new_known_hosts=new_known_hosts):
        if not path.is_file():
            why = "is not a file" if path.exists() else "does not exist"
            raise BoardFileError(board.source, key, _NOT_SHOWN, f"{path} {why}")


def validate(path: Path, document: object, schema: Mapping[str, Any]) -> None:
    """Check ``document`` (all or part of the board file at ``path``) against a JSON schema;
    the best-matching error is raised as a ``BoardFileError``."""
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(document),
        key=lambda e: list(e.absolute_path),
    )
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        assert error is not None  # errors is non-empty
        where = key_path(error.absolute_path)
        if error.validator in ("additionalProperties", "required"):
            # named in words; the mapping's values stay hidden
            raise BoardFileError(path, where, _NOT_SHOWN, _keys_in_words(error))
        if _AUTH_PATH.match(where):
            raise BoardFileError(path, where, _NOT_SHOWN, _AUTH_HELP)
        if not where:
            raise BoardFileError(path, where, _NOT_SHOWN, "a board file is a mapping of keys")
        shown = error.instance if _scalar(error.instance) else _NOT_SHOWN
        raise BoardFileError(path, where, shown, _value_in_words(error, where))


def _keys_in_words(error: jsonschema.exceptions.ValidationError) -> str:
    """An unknown key (with the closest known one) or a missing key, in words."""
    found = cast("dict[str, Any]", error.instance)  # these validators check mappings only
    if error.validator == "required":
        missing = [key for key in cast("list[str]", error.validator_value) if key not in found]
        return f"missing key {', '.join(missing)}"
    known = list(cast("Mapping[str, Any]", error.schema).get("properties", {}))
    unknown = [key for key in found if key not in known]
    return "; ".join(
        f"unknown key {clipped(str(key), 80)}{suggestion(str(key), known)}" for key in unknown[:3]
    )


def _value_in_words(error: jsonschema.exceptions.ValidationError, where: str) -> str:
    """What the key's value must be: the words of ``_EXPECTED``, the allowed values of an
    enum, else jsonschema's own sentence (a type, a length; never a pattern)."""
    if error.validator == "enum":
        choices = [str(choice) for choice in cast("list[object]", error.validator_value)]
        hint = suggestion(str(error.instance), choices)
        return f"{where} must be one of {', '.join(choices)}{hint}"
    parts = _bare(where).split(".")
    for end in range(len(parts), 0, -1):  # labgrid.tags.soc: the words of labgrid.tags
        words = _EXPECTED.get(".".join(parts[:end]))
        if words:
            return words
    if error.validator == "pattern" or not _scalar(error.instance):
        return f"{where} does not have the form a board file needs"
    return error.message  # a type or a length, in jsonschema's words


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float)


def _schema(runtimes: Runtimes) -> dict[str, Any]:
    """``SCHEMA`` with the registry's platforms and runtime names; the runtimes' own keys take
    any value here, as each runtime checks its own."""
    platforms = list(dict.fromkeys(p for kind in runtimes.values() for p in kind.platforms))
    properties: dict[str, Any] = {key: True for kind in runtimes.values() for key in kind.keys}
    properties.update(SCHEMA["properties"])
    properties["platform"] = {"enum": platforms}
    properties["runtime"] = {"enum": list(runtimes)}
    return {**SCHEMA, "properties": properties}


def load_inventory(directory: Path, runtimes: Runtimes) -> list[Board]:
    """Every ``*.yaml``/``*.yml`` board file directly in ``directory``, sorted by name; a
    board file given for ``directory`` is an inventory of that one board.

    Sub-folders (``examples/``, ``runner/``) are not read, so the shipped examples never
    become part of an inventory by accident. Board names must be unique; ``runtimes`` are
    those the files may name.
    """
    directory = Path(directory)
    if directory.is_file():
        return [load_board(directory, runtimes)]
    if not directory.is_dir():
        raise BoardFileError(directory, "", str(directory), "no such board file or folder")
    files = sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    boards: dict[str, Board] = {}
    for path in files:
        board = load_board(path, runtimes)
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


def _board(path: Path, doc: dict[str, Any], runtimes: Runtimes) -> Board:
    name = doc["runtime"]
    kind = runtimes[name]
    for key, value in doc.items():
        owners = [other for other, owner in runtimes.items() if key in owner.keys]
        if owners and key not in kind.keys:
            raise BoardFileError(
                path,
                key,
                value if _scalar(value) else _NOT_SHOWN,
                f"only for runtime {' or '.join(owners)} (runtime: {name})",
            )
    return Board(
        name=doc["name"],
        transport=_transport(path, doc),
        soc=doc["soc"],
        platform=doc["platform"],
        python=doc.get("python", "python3"),
        workdir=doc["workdir"].rstrip("/") or "/",
        runtime=kind.load(path, doc),
        tags=tuple(doc.get("tags", [])),
        sysroot=doc.get("sysroot", "/"),
        source=path,
        farm=farm_settings(doc["labgrid"]) if "labgrid" in doc else None,
    )


def _transport(path: Path, doc: Mapping[str, Any]) -> TransportSettings:
    """The settings of the board file's one transport (its section was schema-checked)."""
    flat = [key for key in SETTINGS[_TOP_LEVEL].schema["properties"] if key in doc]
    named = [name for name in SETTINGS if name in doc]
    if len(named) + bool(flat) != 1:
        extra = named[1:] + flat if named else []
        raise BoardFileError(path, extra[0] if extra else "", _NOT_SHOWN, _TRANSPORT_HELP)
    name = named[0] if named else _TOP_LEVEL
    section = doc[name] if named else {key: doc[key] for key in flat}
    prefix = f"{name}." if named else ""
    kind = SETTINGS[name]
    schema = kind.schema
    if "labgrid" in doc:  # the place gives what its section's schema leaves out
        if kind.farm_schema is None:
            at_place = " or ".join(n for n, k in SETTINGS.items() if k.farm_schema is not None)
            raise BoardFileError(
                path, name, _NOT_SHOWN, f"a labgrid place is reached by {at_place}, not {name}"
            )
        for key in section:
            if key not in kind.farm_schema["properties"]:
                raise BoardFileError(
                    path,
                    prefix + key,
                    section[key],
                    "comes from the labgrid place's NetworkService (labgrid:); remove it",
                )
        schema = kind.farm_schema
    missing = [key for key in schema["required"] if key not in section]
    if missing:
        raise BoardFileError(path, prefix + missing[0], None, f"'{missing[0]}' is required")
    return kind.load(path, section, board_path)


def board_path(board_file: Path, text: str, key: str) -> Path:
    """``~`` expanded; relative paths are relative to the board file's folder. ``key`` names
    the path's key in errors."""
    try:
        expanded = Path(text).expanduser()
    except (RuntimeError, ValueError):  # ~user of no such user, or a NUL byte in the name
        raise BoardFileError(board_file, key, text, "cannot expand ~ in this path") from None
    return Path(os.path.normpath((board_file.parent / expanded).absolute()))
