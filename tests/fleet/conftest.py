"""One throwaway PostgreSQL cluster for the whole run (a test that stops it starts it again),
and a fresh database per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests._postgres import PostgresCluster, new_database, postgres_cluster


@pytest.fixture(scope="session")
def cluster() -> Iterator[PostgresCluster]:
    with postgres_cluster() as running:
        yield running


@pytest.fixture
def pg_url(cluster: PostgresCluster) -> str:
    """A new, empty database of the module's cluster (tests do not see each other's rows)."""
    return new_database(cluster)
