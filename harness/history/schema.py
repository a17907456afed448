"""The tables of the results store (SQLAlchemy Core); the migrations in ``migrations/`` create
and change them, this module is what the code reads and writes.

``runs``: one row per results folder a run wrote (a shard is a run of its own), identified by
the run id ``run.json`` holds, with its vendor. ``records``: the last record of each case and
SDK in that folder, the fields the queries read (the vendor among them: a case is a vendor's,
platform's and SDK's, and no query mixes vendors), plus the case's definition digest (what it
tests) and its timing. A vendor "" is unknown: a run written before runs recorded theirs, on a
platform no installed vendor has (migration 0003, ``runinfo.legacy_vendor``). Text columns
hold JSON where a field is a mapping (versions, perf); every text column is ``StoredText`` (TEXT
of any length, NUL and lone surrogates stored reversibly).
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    UniqueConstraint,
)

from harness.history.stored_text import StoredText

# Every migration of migrations/versions, oldest first; the last is the schema this code
# reads and writes (a test checks it against Alembic's own chain).
REVISIONS = ("0001", "0002", "0003")
HEAD = REVISIONS[-1]

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uid", StoredText, nullable=False, unique=True),
    Column("started", StoredText, nullable=False),  # ISO 8601 UTC, seconds
    Column("night", StoredText, nullable=False),  # the UTC date of started
    Column("host", StoredText, nullable=False),  # "" when imported (run.json has no host)
    Column("revision", StoredText, nullable=False),  # the harness's git revision, or version
    Column("configuration", StoredText, nullable=False),  # --baseline last matches on it
    Column("vendor", StoredText, nullable=False),  # and on it: run.json "vendor", "" unknown
    Column("platform", StoredText, nullable=False),
    Column("backend", StoredText, nullable=False),
    Column("tier", StoredText, nullable=False),
    Column("shard", StoredText, nullable=False),  # "I/N", or ""
    Column("sdks", StoredText, nullable=False),  # comma-separated
    Column("versions", StoredText, nullable=False),  # JSON: run.json "versions"
    Column("results", StoredText, nullable=False),  # the results folder, absolute, as written
    Column("source", StoredText, nullable=False),  # "run": written at its end; "import"
    Index("runs_configuration", "configuration", "started"),
)

records = Table(
    "records",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("case_id", StoredText, nullable=False),
    Column("sdk", StoredText, nullable=False),
    Column("vendor", StoredText, nullable=False),  # the record's vendor, "" unknown
    Column("platform", StoredText, nullable=False),
    Column("op", StoredText, nullable=False),
    Column("dtype", StoredText, nullable=False),
    Column("limit_id", StoredText, nullable=False),
    Column("documented", StoredText, nullable=False),
    Column("backend", StoredText, nullable=False),
    Column("verdict", StoredText, nullable=False),
    Column("known", StoredText, nullable=False),  # the known-issue status, or ""
    Column("started", StoredText, nullable=False),
    Column("duration_s", Float, nullable=False),
    Column("definition", StoredText, nullable=False),  # digest of what the case tests
    Column("versions", StoredText, nullable=False),  # JSON: the record's versions
    Column("median_s", Float, nullable=True),  # --perf: the median latency
    Column("perf", StoredText, nullable=True),  # JSON: the record's timing, when timed
    Column("detail", StoredText, nullable=False),
    Column("artifacts", StoredText, nullable=False),
    UniqueConstraint("run_id", "case_id", "sdk", name="records_run_case_sdk"),
    Index("records_case", "case_id", "platform", "sdk"),
    Index("records_limit", "limit_id"),
)


def indexed_text(table: Table) -> tuple[str, ...]:
    """The text columns of ``table`` an index or unique constraint holds: the ids whose
    length ``stored_text.MAX_ID_BYTES`` bounds."""
    keyed: list[Index | UniqueConstraint] = [*table.indexes]
    keyed += [c for c in table.constraints if isinstance(c, UniqueConstraint)]
    names = {column.name for key in keyed for column in key.columns}
    return tuple(
        c.name for c in table.columns if c.name in names and isinstance(c.type, StoredText)
    )
