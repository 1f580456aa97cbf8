"""Which store ``otelhooks serve`` and ``otelhooks store migrate`` open: the one a URL names,
else ``OTELHOOKS_STORE``, else the embedded default."""

from __future__ import annotations

import os

from otelhooks._store._base import DEFAULT_STATEMENT_TIMEOUT_S, Store
from otelhooks._store._errors import StoreError

__all__ = ["STORE_ENV", "open_store"]

STORE_ENV = "OTELHOOKS_STORE"


def open_store(
    url: str | None = None, *, statement_timeout_s: float = DEFAULT_STATEMENT_TIMEOUT_S
) -> Store:
    """The store ``url`` names: ``postgresql://...`` (or ``postgres://...``) for PostgreSQL,
    ``sqlite`` or nothing for the embedded default. ``url`` defaults to ``OTELHOOKS_STORE``.

    Opening a PostgreSQL store connects and migrates its schema; ``statement_timeout_s`` is
    the longest one of its statements (or lock waits) may take.

    Raises:
        StoreError: an unknown scheme, a missing ``postgresql`` extra, or an unreachable store.
    """
    url = url if url is not None else os.environ.get(STORE_ENV, "")
    url = url.strip()
    if url in ("", "sqlite"):
        from otelhooks._store._sqlite import SqliteStore

        return SqliteStore()
    scheme = url.partition("://")[0].lower()
    if scheme in ("postgresql", "postgres"):
        from otelhooks._store._postgres import PostgresStore

        store = PostgresStore(url, statement_timeout_s=statement_timeout_s)
        try:
            store.migrate()
        except BaseException:
            store.close()
            raise
        return store
    raise StoreError(
        scheme or url[:40],
        "unknown store; use postgresql://user@host/db or leave it unset (SQLite)",
    )
