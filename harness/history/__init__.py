"""The results store: every run's records in one database, for history across nights.

``store`` opens a store (SQLite file or PostgreSQL URL) and keeps its schema current through
the Alembic migrations shipped in ``migrations/``; ``importing`` writes a results folder's
journal into it (the journal stays the source of truth: a store can always be rebuilt from
journals); ``queries`` answers ``hil history`` (a case's verdict night by night, since when it
is in its current state and what changed that night, the flaky list); ``page`` writes the
self-contained history page. See docs/history.md.
"""

# A case is flaky when its verdict changed more than FLAKY_FLIPS times over its last
# FLAKY_RUNS stored runs of one configuration (``hil history --flaky``, the nightly's mark).
FLAKY_FLIPS = 2
FLAKY_RUNS = 10
