"""The vendor of every run and record: runs of two vendors are never compared.

Existing rows are filled from what they hold, as ``hil history import`` fills a folder written
before runs recorded their vendor: a record from its platform, by the platforms of the vendors
installed where the store is upgraded (``Store.open``'s ``platform_vendors``, in the Alembic
config's attributes; ``runinfo.legacy_vendor``); a run from its own platform (its first, for
several), else (``all``) from its records' one vendor. A platform no vendor has leaves the
vendor unknown ("").

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from collections import defaultdict

import sqlalchemy as sa
from alembic import context, op

from harness.history.runinfo import legacy_vendor

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
    vendors: dict[str, str] = context.config.attributes.get("platform_vendors", {})
    platforms: dict[str, list[str]] = defaultdict(list)
    for platform, vendor in vendors.items():
        platforms[vendor].append(platform)
    for vendor, theirs in platforms.items():
        op.execute(
            _records.update()
            .where(sa.func.lower(_records.c.platform).in_(theirs))
            .values(vendor=vendor)
        )
    stored = op.get_bind().execute(sa.select(_runs.c.platform).distinct()).scalars()
    for platform in list(stored):
        if vendor := legacy_vendor(vendors, platform):
            op.execute(_runs.update().where(_runs.c.platform == platform).values(vendor=vendor))
    # a run of "all" platforms, or of one no vendor has: its records' one vendor
    one = sa.func.count(sa.distinct(_records.c.vendor)) == 1
    records_vendor = (
        sa.select(sa.case((one, sa.func.min(_records.c.vendor)), else_=""))
        .where(_records.c.run_id == _runs.c.id)
        .where(_records.c.vendor != "")
        .scalar_subquery()
    )
    op.execute(_runs.update().where(_runs.c.vendor == "").values(vendor=records_vendor))


def downgrade() -> None:
    for table in ("runs", "records"):
        op.drop_column(table, "vendor")
