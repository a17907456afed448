"""Opening the results store: where it is, its engine, its schema kept current.

A store is named by ``--hil-db`` or ``HIL_DB`` (``harness.history.location``). SQLite needs no
set-up; PostgreSQL (through psycopg 3) serves a farm whose hosts write one history.

Several writers at once are safe: on SQLite every write transaction starts ``BEGIN
IMMEDIATE`` (the file's one writer at a time, the others waiting up to ``BUSY_TIMEOUT_S``,
in WAL mode so readers never wait), on PostgreSQL rows are upserted and migrations are
serialised by an advisory lock. Opening a store for writing creates it and runs the
migrations it lacks; a store written by a newer harness (a schema revision this one does not
know) is refused with ``StoreError``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from harness.history.location import ENV, NoStoreError, StoreError, check_location, shown
from harness.history.schema import HEAD, REVISIONS

BUSY_TIMEOUT_S = 120.0
CONNECT_TIMEOUT_S = 15
MIGRATIONS = Path(__file__).with_name("migrations")


def store_url(location: str) -> URL:
    """The SQLAlchemy URL of a store location (a URL or an SQLite file's path)."""
    if "://" not in location:
        return URL.create("sqlite", database=str(Path(location).expanduser().absolute()))
    check_location(location)
    try:
        url = make_url(location)
    except ArgumentError:
        raise StoreError(f"--hil-db / {ENV}: {shown(location)!r} is not a database URL") from None
    if url.drivername in ("postgresql", "postgres"):  # psycopg 3, not SQLAlchemy's default
        url = url.set(drivername="postgresql+psycopg")
    return url


class Store:
    """One store; ``Store.open`` it, use ``reading``/``writing`` connections, ``close``."""

    def __init__(
        self,
        location: str,
        engine: Engine,
        writable: bool = True,
        platform_vendors: Mapping[str, str] | None = None,
    ) -> None:
        self.location = location
        # lower-case platform -> vendor name, the installed vendors': the vendor of a run or
        # record written before runs recorded theirs (``runinfo.legacy_vendor``)
        self.platform_vendors = dict(platform_vendors or {})
        self.name = shown(location)
        self.engine = engine
        self.sqlite = engine.dialect.name == "sqlite"
        self.writable = writable

    @classmethod
    def open(
        cls,
        location: str,
        create: bool = True,
        platform_vendors: Mapping[str, str] | None = None,
    ) -> Store:
        """The store at ``location``. ``platform_vendors``: lower-case platform -> vendor
        name, as the installed vendors say (the caller, above the vendor seam, knows them; none:
        runs and records that name no vendor keep it unknown). ``create`` (a writer): made if
        missing, its schema brought to ``HEAD``. Otherwise (a reader) it is only read, nothing
        in it created or changed: an SQLite file is opened read-only, so a store on a
        read-only file system or in a folder the reader cannot write is read too; a missing
        file, or a database without npu-hil's schema (a typo naming another SQLite file), is a
        NoStoreError."""
        url = store_url(location)
        path = Path(url.database or "") if url.get_backend_name() == "sqlite" else None
        if path is not None and not create and not path.is_file():
            raise NoStoreError(
                f"{shown(location)}: no history store there (a run writes it at its end; "
                "hil history import RESULTS... fills it from results folders)"
            )
        if path is not None and create:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"{shown(location)}: cannot create its folder: {exc}") from None
        vendors = platform_vendors
        if create:
            return cls(location, _engine(url), True, vendors)._prepared(cls._migrate)
        if path is None:
            return cls(location, _engine(url), False, vendors)._prepared(cls._check_schema)
        try:
            store = cls(location, _engine(_read_only(path)), False, vendors)
            return store._prepared(cls._check_schema)
        except NoStoreError:
            raise
        except StoreError:
            # A WAL file's readers share its -shm file, made beside it: in a folder the reader
            # cannot write, with no -wal file left (everything written is in the file), the
            # file is read as it is.
            if Path(f"{path}-wal").exists():
                raise
        store = cls(location, _engine(_read_only(path, immutable=True)), False, vendors)
        return store._prepared(cls._check_schema)

    def _prepared(self, step: Callable[[Store], None]) -> Store:
        """This store once ``step`` (its schema migrated, or checked) is done; closed and a
        StoreError if it fails."""
        try:
            step(self)
        except SQLAlchemyError as exc:
            self.close()
            raise StoreError(f"{self.name}: {_reason(exc)}") from None
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def writing(self) -> Iterator[Connection]:
        """A connection in a write transaction (SQLite: ``BEGIN IMMEDIATE``), committed at the
        end, rolled back on an exception."""
        with self._transaction(write=True) as connection:
            yield connection

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        with self._transaction(write=False) as connection:
            yield connection

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Connection]:
        try:
            with self.engine.connect() as connection:
                connection = connection.execution_options(hil_write=write)
                with connection.begin():
                    yield connection
        except SQLAlchemyError as exc:
            raise StoreError(f"{self.name}: {_reason(exc)}") from None

    def _migrate(self) -> None:
        """Bring the schema to HEAD; the common case (already there) costs one query and no
        Alembic import."""
        current = self._revision()
        if current == HEAD:
            return
        if current is not None and current not in REVISIONS:
            raise StoreError(
                f"{self.name}: written by a newer npu-hil (schema revision {current}, this one "
                f"knows up to {HEAD}): upgrade npu-hil to use it"
            )
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        # One transaction, begun here (Alembic runs inside it): on SQLite BEGIN IMMEDIATE holds
        # the other openers off until the tables exist, and Alembic reads the revision again
        # inside it, so a second opener finds nothing left to do.
        with self._transaction(write=True) as connection:
            config.attributes["connection"] = connection
            config.attributes["platform_vendors"] = self.platform_vendors  # 0003 fills them
            command.upgrade(config, HEAD)

    def _check_schema(self) -> None:
        """A reader's check: npu-hil's schema, at the revision this harness reads."""
        current = self._revision()
        if current == HEAD:
            return
        if current is None:
            raise NoStoreError(
                f"{self.name}: not an npu-hil history store (no npu-hil tables in it); "
                "a run or hil history import RESULTS... writes one"
            )
        if current not in REVISIONS:
            raise StoreError(
                f"{self.name}: written by a newer npu-hil (schema revision {current}, this one "
                f"knows up to {HEAD}): upgrade npu-hil to use it"
            )
        raise StoreError(
            f"{self.name}: written by an older npu-hil (schema revision {current}, this one "
            f"reads {HEAD}): a run or hil history import upgrades it"
        )

    def _revision(self) -> str | None:
        """The schema revision the store is at; None: no schema yet."""
        with self._transaction(write=False) as connection:
            exists = connection.dialect.has_table(connection, "alembic_version")
            if not exists:
                return None
            found = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
            return None if found is None else str(found)


def _read_only(path: Path, immutable: bool = False) -> URL:
    """The URL of SQLite file ``path`` opened read-only (``immutable``: as a file nothing
    changes, which needs no -shm file)."""
    query = {"mode": "ro", "uri": "true", **({"immutable": "1"} if immutable else {})}
    return URL.create("sqlite", database=f"file:{quote(str(path.absolute()))}", query=query)


def _engine(url: URL) -> Engine:
    if url.get_backend_name() != "sqlite":
        # a run opens few connections, briefly: no pool to outlive it; a database host that
        # is down costs CONNECT_TIMEOUT_S, not the system's TCP timeout
        connect = {"connect_timeout": CONNECT_TIMEOUT_S}
        return create_engine(url, poolclass=NullPool, connect_args=connect)
    engine = create_engine(url, poolclass=NullPool, connect_args={"timeout": BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # Transactions are begun below, not by the driver, so a write can begin IMMEDIATE.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if url.query.get("mode") != "ro":  # a reader leaves the file's journal mode alone
            _wal(cursor)
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        write = connection.get_execution_options().get("hil_write", True)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def _wal(cursor: Any) -> None:
    """Switch the file to write-ahead logging. SQLite does not wait out its busy timeout for
    that switch: while a second process creates the same new store, it answers "database is
    locked" at once, so it is tried again (with a pause) until the busy timeout has passed."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _reason(exc: SQLAlchemyError) -> str:
    """The database's own message, without SQLAlchemy's statement and parameters dump."""
    original = getattr(exc, "orig", None)
    return str(original if original is not None else exc).strip().splitlines()[0]
