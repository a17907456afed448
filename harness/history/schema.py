"""The tables of the results store (SQLAlchemy Core); the migrations in ``migrations/`` create
and change them, this module is what the code reads and writes.

``runs``: one row per results folder a run wrote (a shard is a run of its own), identified by
the run id ``run.json`` holds. ``records``: the last record of each case and SDK in that
folder, the fields the queries read, plus the case's definition digest (what it tests) and
its timing. Text columns hold JSON where a field is a mapping (versions, perf).
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

# Every migration of migrations/versions, oldest first; the last is the schema this code
# reads and writes (a test checks it against Alembic's own chain).
REVISIONS = ("0001",)
HEAD = REVISIONS[-1]

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uid", String(64), nullable=False, unique=True),
    Column("started", String(32), nullable=False),  # ISO 8601 UTC, seconds
    Column("night", String(10), nullable=False),  # the UTC date of started
    Column("host", String(255), nullable=False),  # "" when imported (run.json has no host)
    Column("revision", String(64), nullable=False),  # the harness's git revision, or version
    Column("configuration", String(255), nullable=False),  # --baseline last matches on it
    Column("platform", String(255), nullable=False),
    Column("backend", String(32), nullable=False),
    Column("tier", String(16), nullable=False),
    Column("shard", String(32), nullable=False),  # "I/N", or ""
    Column("sdks", String(255), nullable=False),  # comma-separated
    Column("versions", Text, nullable=False),  # JSON: run.json "versions"
    Column("results", Text, nullable=False),  # the results folder, absolute, as written
    Column("source", String(16), nullable=False),  # "run": written at its end; "import"
    Index("runs_configuration", "configuration", "started"),
)

records = Table(
    "records",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("case_id", String(512), nullable=False),
    Column("sdk", String(64), nullable=False),
    Column("platform", String(64), nullable=False),
    Column("op", String(128), nullable=False),
    Column("dtype", String(32), nullable=False),
    Column("limit_id", String(512), nullable=False),
    Column("documented", String(16), nullable=False),
    Column("backend", String(255), nullable=False),
    Column("verdict", String(32), nullable=False),
    Column("known", String(16), nullable=False),  # the known-issue status, or ""
    Column("started", String(32), nullable=False),
    Column("duration_s", Float, nullable=False),
    Column("definition", String(16), nullable=False),  # digest of what the case tests
    Column("versions", Text, nullable=False),  # JSON: the record's versions
    Column("median_s", Float, nullable=True),  # --perf: the median latency
    Column("perf", Text, nullable=True),  # JSON: the record's timing, when timed
    Column("detail", Text, nullable=False),
    Column("artifacts", Text, nullable=False),
    UniqueConstraint("run_id", "case_id", "sdk", name="records_run_case_sdk"),
    Index("records_case", "case_id", "platform", "sdk"),
    Index("records_limit", "limit_id"),
)
