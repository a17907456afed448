"""Text columns without a length: PostgreSQL enforced the lengths of 0001 (a user model's
124-character file name overflowed ``records.op``) where SQLite never did.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# the VARCHAR columns of 0001
LENGTHS = {
    "runs": {
        **{"uid": 64, "started": 32, "night": 10, "host": 255, "revision": 64},
        **{"configuration": 255, "platform": 255, "backend": 32, "tier": 16, "shard": 32},
        **{"sdks": 255, "source": 16},
    },
    "records": {
        **{"case_id": 512, "sdk": 64, "platform": 64, "op": 128, "dtype": 32},
        **{"limit_id": 512, "documented": 16, "backend": 255, "verdict": 32, "known": 16},
        **{"started": 32, "definition": 16},
    },
}


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return  # SQLite reads VARCHAR(n) as TEXT: it never checked a length
    for table, columns in LENGTHS.items():
        for column in columns:
            op.alter_column(table, column, type_=sa.Text)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, columns in LENGTHS.items():
        for column, length in columns.items():
            op.alter_column(table, column, type_=sa.String(length))
