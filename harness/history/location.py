"""Where the results store is (``--hil-db``, ``HIL_DB``), told without importing the database
layer: a run that never touches the store pays no import for it.

A location is a database URL (``postgresql://user@host/db``, ``sqlite:///path``) or the path
of an SQLite file; default ``$XDG_DATA_HOME/npu-hil/history.sqlite``
(``~/.local/share/...``); ``off``: none.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from harness.text import SECRET_NAME

ENV = "HIL_DB"
OFF = "off"
SCHEMES = ("sqlite", "postgresql", "postgres")


class StoreError(RuntimeError):
    """A store that cannot be opened, read or written; the message names it (no password)."""


class NoStoreError(StoreError):
    """No store at the location yet (an SQLite file no run has written)."""


def default_location() -> Path:
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "npu-hil" / "history.sqlite"


def configured(value: str | None = None) -> str:
    """The store a command or run uses: ``value`` (an option), else ``HIL_DB``, else the
    default SQLite file; ``off`` when disabled."""
    return value or os.environ.get(ENV) or str(default_location())


def check_location(location: str) -> None:
    """Raise StoreError for a URL of a database the store does not use."""
    if "://" not in location:
        return
    scheme = location.split("://", 1)[0].split("+", 1)[0].lower()
    if scheme not in SCHEMES:
        raise StoreError(
            f"--hil-db / {ENV}: {shown(location)!r}: the store is SQLite or PostgreSQL, "
            f"not {scheme}"
        )


def sqlite_file(location: str) -> Path | None:
    """The SQLite file a location names (a path, or a ``sqlite:///`` URL); None for another
    database or an in-memory one."""
    if "://" not in location:
        return Path(location).expanduser()
    scheme, rest = location.split("://", 1)
    if scheme.split("+", 1)[0].lower() != "sqlite" or not rest.startswith("/") or rest == "/":
        return None
    return Path(rest[1:].split("?", 1)[0])


# A URL's password as SQLAlchemy reads it (``make_url``): after the user name and its colon, up
# to an "@"; here the last one, so that a password holding "/", "?" or "@" is masked whole.
_PASSWORD = re.compile(r"^([A-Za-z][\w+.-]*://[^:/@]*:)(.*)@", re.S)
# key=value pairs of a URL's query (``?password=...``) or of a libpq keyword string
_PAIR = re.compile(r"((?:^|[?&\s])([^=?&\s]+)=)([^&\s]*)")
MASK = "***"


def shown(location: str) -> str:
    """A store location as it is ever shown or stored (messages, help texts, run.json, the
    reports): the password of a URL's user, and the value of any key named like a secret's
    (``?password=``, ``sslpassword=``), replaced by ``***``."""
    masked = _PASSWORD.sub(rf"\1{MASK}@", location)
    return _PAIR.sub(lambda m: m[1] + MASK if SECRET_NAME.search(m[2]) and m[3] else m[0], masked)


def help_default() -> str:
    """The configured store as a help text names it: ``shown``, its ``%`` doubled (argparse
    formats help texts with ``%``; a percent-encoded password would break ``--help``)."""
    return shown(configured()).replace("%", "%%")
