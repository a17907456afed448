"""The vendor of every run and record: runs of two vendors are never compared.

Existing rows are filled from what they hold, as ``hil history import`` fills a folder written
before runs recorded their vendor: a record from its platform, by the platforms of the vendors
npu-hil shipped then (``runinfo.legacy_vendor``); a run from its own platform (its first, for
several), else (``all``) from its records' one vendor. A platform none of those vendors had
leaves the vendor unknown ("").

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from harness.history.runinfo import LEGACY_PLATFORMS, legacy_vendor

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_runs = sa.table("runs", sa.column("id"), sa.column("platform"), sa.column("vendor"))
_records = sa.table(
    "records", sa.column("run_id"), sa.column("platform"), sa.column("vendor", sa.Text)
)


def upgrade() -> None:
    for table in ("runs", "records"):  # "" until filled below; every writer names it
        op.add_column(table, sa.Column("vendor", sa.Text, nullable=False, server_default=""))
    for vendor, platforms in LEGACY_PLATFORMS.items():
        op.execute(
            _records.update()
            .where(sa.func.lower(_records.c.platform).in_(platforms))
            .values(vendor=vendor)
        )
    connection = op.get_bind()
    stored = connection.execute(sa.select(_runs.c.platform).distinct()).scalars()
    for platform in list(stored):
        if vendor := legacy_vendor(platform):
            op.execute(_runs.update().where(_runs.c.platform == platform).values(vendor=vendor))
    # a run of "all" platforms, or of one no vendor shipped: its records' one vendor
    one = sa.func.count(sa.distinct(_records.c.vendor)) == 1
    theirs = (
        sa.select(sa.case((one, sa.func.min(_records.c.vendor)), else_=""))
        .where(_records.c.run_id == _runs.c.id)
        .where(_records.c.vendor != "")
        .scalar_subquery()
    )
    op.execute(_runs.update().where(_runs.c.vendor == "").values(vendor=theirs))


def downgrade() -> None:
    for table in ("runs", "records"):
        op.drop_column(table, "vendor")
