"""Fixtures of the results store's tests: a throwaway PostgreSQL (tests/fakes/postgres.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.fakes.postgres import Cluster, need_binaries


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL on 127.0.0.1 for the session (tests/fakes/postgres.py)."""
    cluster = Cluster(need_binaries())
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster: Cluster) -> str:
    """A fresh database of the session's PostgreSQL, as a store URL."""
    return postgres_cluster.create_database()
