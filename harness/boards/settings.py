"""How a board file says to reach its board: one transport's settings.

A board file names exactly one transport: ``ssh:`` (host, port, user, auth, known_hosts) or
``adb:`` (serial, adb server host and port). The SSH keys may also stand at the top level of
the file, as board files had them before there was a second transport; such files load as
they always did. ``SETTINGS`` is the registry of the settings kinds by transport name
(``harness.boards.transport.TRANSPORTS`` holds their connectors under the same names): each
kind's schema, its loader and, for a transport a labgrid place can give the address of, the
schema of its section on a farm board. Each settings class says which environment variables
hold its secrets and which of its files must exist, so the inventory never asks its kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
ADB_SERVER_PORT = 5037  # adb's own default

SSH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["host", "user", "auth"],
    "properties": {
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
    },
}
# A board of a labgrid farm: the place's NetworkService gives host, port and user; the board file
# keeps the keys and known_hosts.
FARM_SSH_SCHEMA: dict[str, Any] = {
    **SSH_SCHEMA,
    "required": ["auth"],
    "properties": {key: SSH_SCHEMA["properties"][key] for key in ("auth", "known_hosts")},
}
_TAG = r"^[a-z][a-z0-9_]*$"  # labgrid's tag keys
LABGRID_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "coordinator": {"type": "string", "pattern": r"^[^\s]+$"},
        "place": {"type": "string", "pattern": r"^[A-Za-z0-9_.-]+$"},
        "tags": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": _TAG},
            "additionalProperties": {"type": "string", "pattern": r"^[A-Za-z0-9_.-]+$"},
        },
        "wait": {"type": "number", "exclusiveMinimum": 0, "maximum": 86400},
        # a board that stops answering mid-run: power-cycled through the place's power
        # resource, then waited for (seconds) before it is given up on
        "recovery": {"enum": ["power-cycle", "none"]},
        "recovery_wait": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600},
    },
    "oneOf": [{"required": ["place"]}, {"required": ["tags"]}],
}
ADB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["serial"],
    "properties": {
        # a USB serial, or host:port of a device adb reaches over TCP
        "serial": {"type": "string", "pattern": r"^[A-Za-z0-9._:\[\]-]+$"},
        "server_host": {"type": "string", "minLength": 1, "pattern": r"^[^\s]+$"},
        "server_port": {"type": "integer", "minimum": 1, "maximum": 65535},
    },
}


@dataclass(frozen=True)
class SshSettings:
    """An SSH board: exactly one of ``key_file``, ``agent`` and ``password_env`` is set."""

    host: str
    port: int
    user: str
    key_file: Path | None
    agent: bool
    password_env: str | None  # the NAME of the variable holding the password
    known_hosts: Path

    kind: ClassVar[str] = "ssh"
    where: ClassVar[str] = "{user}@{host}:{port}"

    @property
    def secret_variables(self) -> tuple[str, ...]:
        """The environment variables that hold its secrets (never shown in a message)."""
        return () if self.password_env is None else (self.password_env,)

    def files(self, *, new_known_hosts: bool = False) -> list[tuple[str, Path]]:
        """(key, path) of the files it names that must be there; ``new_known_hosts``: the
        known_hosts file is created on first use."""
        named = [] if self.key_file is None else [("auth.key_file", self.key_file)]
        return named if new_known_hosts else [*named, ("known_hosts", self.known_hosts)]


@dataclass(frozen=True)
class AdbSettings:
    """An adb board: a device ``serial`` as the adb server at ``server_host:server_port``
    knows it."""

    serial: str
    server_host: str
    server_port: int

    kind: ClassVar[str] = "adb"
    where: ClassVar[str] = "adb:{serial}@{server_host}:{server_port}"
    # no secrets (the host's adb key is adb's own), no files
    secret_variables: ClassVar[tuple[str, ...]] = ()

    def files(self, *, new_known_hosts: bool = False) -> list[tuple[str, Path]]:
        """None: the adb server holds what it needs."""
        return []


@dataclass(frozen=True)
class FarmSettings:
    """Where a farm board comes from: a labgrid coordinator and the place, by name or tags;
    how long to wait for a free one."""

    coordinator: str | None  # None: LG_COORDINATOR, else labgrid's default
    filters: dict[str, str]  # labgrid reservation filters: {"name": place} or the tags
    wait_s: float = 600.0
    recovery: str = "power-cycle"  # or "none": a board that stops answering stays down
    recovery_wait_s: float = 180.0  # for SSH to come back after a power cycle

    @property
    def wanted(self) -> str:
        """'place rk3562-a' or 'a place with soc=rk3562'."""
        if set(self.filters) == {"name"}:
            return f"place {self.filters['name']}"
        return "a place with " + ",".join(f"{k}={v}" for k, v in sorted(self.filters.items()))


def farm_settings(doc: Mapping[str, Any]) -> FarmSettings:
    """The board file's (schema-checked) ``labgrid`` section."""
    filters = {"name": doc["place"]} if "place" in doc else dict(doc["tags"])
    return FarmSettings(
        doc.get("coordinator"),
        filters,
        float(doc.get("wait", 600.0)),
        doc.get("recovery", "power-cycle"),
        float(doc.get("recovery_wait", 180.0)),
    )


TransportSettings = SshSettings | AdbSettings
# board file, its transport section (schema-checked), path resolver -> settings
Loader = Callable[[Path, Mapping[str, Any], Callable[[Path, str, str], Path]], TransportSettings]


def _ssh(
    path: Path, doc: Mapping[str, Any], resolve: Callable[[Path, str, str], Path]
) -> SshSettings:
    auth = doc["auth"]
    key_file = resolve(path, auth["key_file"], "auth.key_file") if "key_file" in auth else None
    return SshSettings(
        host=doc.get("host", ""),
        port=int(doc.get("port", 22)),
        user=doc.get("user", ""),
        key_file=key_file,
        agent=bool(auth.get("agent", False)),
        password_env=auth.get("password_env"),
        known_hosts=resolve(path, doc.get("known_hosts", DEFAULT_KNOWN_HOSTS), "known_hosts"),
    )


def _adb(
    path: Path, doc: Mapping[str, Any], resolve: Callable[[Path, str, str], Path]
) -> AdbSettings:
    return AdbSettings(
        serial=doc["serial"],
        server_host=doc.get("server_host", "127.0.0.1"),
        server_port=int(doc.get("server_port", ADB_SERVER_PORT)),
    )


class SettingsKind(NamedTuple):
    """One transport's board-file section."""

    schema: dict[str, Any]  # JSON schema of its section
    load: Loader
    # its section on a board of a labgrid place, whose NetworkService gives the rest (the
    # keys of ``schema`` it lacks); None: a place cannot give its address
    farm_schema: dict[str, Any] | None = None


# transport name -> its section
SETTINGS: dict[str, SettingsKind] = {
    "ssh": SettingsKind(SSH_SCHEMA, _ssh, FARM_SSH_SCHEMA),
    "adb": SettingsKind(ADB_SCHEMA, _adb),
}
