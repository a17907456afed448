"""The first schema: runs and their records.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uid", sa.String(64), nullable=False, unique=True),
        sa.Column("started", sa.String(32), nullable=False),
        sa.Column("night", sa.String(10), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("revision", sa.String(64), nullable=False),
        sa.Column("configuration", sa.String(255), nullable=False),
        sa.Column("platform", sa.String(255), nullable=False),
        sa.Column("backend", sa.String(32), nullable=False),
        sa.Column("tier", sa.String(16), nullable=False),
        sa.Column("shard", sa.String(32), nullable=False),
        sa.Column("sdks", sa.String(255), nullable=False),
        sa.Column("versions", sa.Text, nullable=False),
        sa.Column("results", sa.Text, nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
    )
    op.create_index("runs_configuration", "runs", ["configuration", "started"])
    op.create_table(
        "records",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("case_id", sa.String(512), nullable=False),
        sa.Column("sdk", sa.String(64), nullable=False),
        sa.Column("platform", sa.String(64), nullable=False),
        sa.Column("op", sa.String(128), nullable=False),
        sa.Column("dtype", sa.String(32), nullable=False),
        sa.Column("limit_id", sa.String(512), nullable=False),
        sa.Column("documented", sa.String(16), nullable=False),
        sa.Column("backend", sa.String(255), nullable=False),
        sa.Column("verdict", sa.String(32), nullable=False),
        sa.Column("known", sa.String(16), nullable=False),
        sa.Column("started", sa.String(32), nullable=False),
        sa.Column("duration_s", sa.Float, nullable=False),
        sa.Column("definition", sa.String(16), nullable=False),
        sa.Column("versions", sa.Text, nullable=False),
        sa.Column("median_s", sa.Float, nullable=True),
        sa.Column("perf", sa.Text, nullable=True),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("artifacts", sa.Text, nullable=False),
        sa.UniqueConstraint("run_id", "case_id", "sdk", name="records_run_case_sdk"),
    )
    op.create_index("records_case", "records", ["case_id", "platform", "sdk"])
    op.create_index("records_limit", "records", ["limit_id"])


def downgrade() -> None:
    op.drop_table("records")
    op.drop_table("runs")
