"""The PostgreSQL store's schema: created and migrated by ``otelhooks store migrate`` and by
``serve`` itself, recorded in a version table, refused when newer than this release."""

from __future__ import annotations

import subprocess
import sys

import psycopg
import pytest

from otelhooks._store._errors import StoreBusy, StoreError, StoreUnavailable
from otelhooks._store._open import STORE_ENV, open_store
from otelhooks._store._pg_schema import SCHEMA_VERSION
from otelhooks._store._postgres import PostgresStore
from tests._realparts import reserved_port


def _migrate_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", "store", "migrate", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def _versions(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT version FROM otelhooks_schema ORDER BY 1")]


def test_store_migrate_creates_the_schema_and_records_its_version(pg_url: str) -> None:
    done = _migrate_cli("--store", pg_url)
    assert done.returncode == 0, done.stderr
    assert f"schema version {SCHEMA_VERSION}" in done.stdout
    assert _versions(pg_url) == list(range(1, SCHEMA_VERSION + 1))
    with psycopg.connect(pg_url) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE 'otelhooks_%'"
            )
        }
    assert {"otelhooks_schema", "otelhooks_logs", "otelhooks_events", "otelhooks_outbox"} <= tables


def test_store_migrate_reads_the_store_from_the_environment(pg_url: str) -> None:
    import os

    done = _migrate_cli(env={**os.environ, STORE_ENV: pg_url})
    assert done.returncode == 0, done.stderr
    assert _versions(pg_url) == list(range(1, SCHEMA_VERSION + 1))


def test_migrating_twice_applies_nothing_again(pg_url: str) -> None:
    assert _migrate_cli("--store", pg_url).returncode == 0
    again = _migrate_cli("--store", pg_url)
    assert again.returncode == 0, again.stderr
    assert _versions(pg_url) == list(range(1, SCHEMA_VERSION + 1))


def test_opening_the_store_migrates_it(pg_url: str) -> None:
    store = open_store(pg_url)
    try:
        assert store.shared
        assert isinstance(store, PostgresStore)
        assert store.version() == SCHEMA_VERSION
    finally:
        store.close()


def test_a_newer_schema_is_refused_naming_the_store(pg_url: str) -> None:
    open_store(pg_url).close()
    with psycopg.connect(pg_url) as conn:
        conn.execute("INSERT INTO otelhooks_schema (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match=r"store postgresql://postgres@127\.0\.0\.1:\d+/t_\w+: "
                       r"schema version \d+ is newer"):  # fmt: skip
        open_store(pg_url)


def test_an_unreachable_store_is_unavailable_and_named_without_its_password() -> None:
    with reserved_port() as dead_port:
        url = f"postgresql://fleet:hunter2@127.0.0.1:{dead_port}/nowhere"
        with pytest.raises(StoreUnavailable) as caught:
            open_store(url)
        assert "postgresql://fleet@127.0.0.1" in str(caught.value)
        assert "hunter2" not in str(caught.value)


def test_an_unknown_store_scheme_is_refused() -> None:
    with pytest.raises(StoreError, match="unknown store"):
        open_store("mysql://db")


def test_no_store_is_the_sqlite_default() -> None:
    store = open_store("")
    assert not store.shared
    assert store.name == "sqlite"


def test_instances_starting_together_apply_each_migration_once(pg_url: str) -> None:
    import threading

    errors: list[BaseException] = []

    def start() -> None:
        try:
            open_store(pg_url).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert _versions(pg_url) == list(range(1, SCHEMA_VERSION + 1))
    open_store(pg_url).close()  # and once more after: nothing to apply, no error
    assert _versions(pg_url) == list(range(1, SCHEMA_VERSION + 1))


def _run(store: PostgresStore, sql: str) -> None:
    with store.transaction() as conn:
        conn.execute(sql.encode())


def test_a_query_past_the_statement_timeout_is_cancelled_and_names_the_store(
    pg_url: str,
) -> None:
    import time

    store = PostgresStore(pg_url, statement_timeout_s=0.2)
    try:
        started = time.monotonic()
        with pytest.raises(
            StoreUnavailable, match=r"store postgresql://postgres@.*statement timeout"
        ):
            _run(store, "SELECT pg_sleep(5)")
        assert time.monotonic() - started < 3
    finally:
        store.close()


def test_one_changes_wait_is_busy_and_a_lost_or_read_only_server_is_unavailable(
    pg_url: str,
) -> None:
    """Only a failure of the connection or the server makes the store unavailable (every
    session's changes and spend reads skip it a while); a change past its lock or statement
    timeout is that change's failure (it was the store unavailable: any agent could turn it
    off for every session by making its own changes wait)."""
    store = PostgresStore(pg_url, statement_timeout_s=0.3)
    try:
        with psycopg.connect(pg_url) as holder:  # a lock held by another connection
            holder.execute("SELECT pg_advisory_xact_lock(7)")
            with pytest.raises(StoreBusy):
                store.statement(b"SELECT pg_advisory_xact_lock(7)")
        with pytest.raises(StoreBusy, match="statement timeout"):
            store.statement(b"SELECT pg_sleep(5)")
        with pytest.raises(StoreUnavailable) as lost:  # the server ends the connection
            store.statement(b"SELECT pg_terminate_backend(pg_backend_pid())")
        assert not isinstance(lost.value, StoreBusy)
    finally:
        store.close()
    name = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as admin:  # as a standby after a failover
        admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    store = PostgresStore(pg_url)
    try:
        with pytest.raises(StoreUnavailable, match="read-only") as read_only:
            store.statement(b"CREATE TABLE t ()")
        assert not isinstance(read_only.value, StoreBusy)
    finally:
        store.close()


def test_the_pool_is_bounded_and_a_caller_waits_at_most_the_pool_timeout(pg_url: str) -> None:
    import contextlib
    import time

    store = PostgresStore(pg_url, max_connections=2, pool_timeout_s=0.5)
    try:
        with contextlib.ExitStack() as held:
            for _ in range(2):
                held.enter_context(store.transaction())
            started = time.monotonic()
            with pytest.raises(StoreBusy, match="all 2 pooled connections in use"):
                _run(store, "SELECT 1")
            assert 0.4 < time.monotonic() - started < 3
        _run(store, "SELECT 1")  # released: usable again
    finally:
        store.close()


def test_a_pool_all_in_use_is_busy_and_a_pool_that_cannot_connect_is_unavailable(
    pg_url: str,
) -> None:
    """An operator tells serve's saturation from the store down: a wait for a connection while
    every pooled one is lent is :class:`StoreBusy` (its message says so, its answer
    ``store_busy``), so the store is not skipped for every session; one while the pool cannot
    open a connection is the store unavailable. Before, both were unavailable: one busy moment
    left every session's spend unread for a second, its budget guard failing."""
    import contextlib

    from otelhooks._store._errors import error_reason
    from otelhooks._store._pg_sessions import SharedSessions

    store = PostgresStore(pg_url, max_connections=2, pool_timeout_s=0.3)
    sessions = SharedSessions(store)
    try:
        store.migrate()
        with contextlib.ExitStack() as held:
            for _ in range(2):
                held.enter_context(store.transaction())
            with pytest.raises(StoreBusy, match="serve is saturated, not the store") as busy:
                store.statement(b"SELECT 1")
            assert error_reason(busy.value) == "store_busy"
            sessions.current_operation("s1")  # made in the scratch, as a busy change is
        assert sessions.spend_of("s2").calls == 0  # the store is still asked: it answers
    finally:
        store.close()
    with reserved_port() as dead_port:
        dead = pg_url.rsplit(":", 1)[0] + f":{dead_port}/nobody"  # nothing listens there
        store = PostgresStore(dead, max_connections=2, pool_timeout_s=0.3)
        try:
            with pytest.raises(StoreUnavailable, match="no connection") as down:
                store.statement(b"SELECT 1")
            assert not isinstance(down.value, StoreBusy)
            assert error_reason(down.value) == "store_unavailable"
        finally:
            store.close()


def test_a_transaction_passes_over_every_pooled_connection_the_server_dropped(
    pg_url: str,
) -> None:
    """A restart (or ``pg_terminate_backend``) leaves every idle pooled connection dead: a
    transaction passes over all of them (it took one more and failed: an approval asked then
    was denied as failing)."""
    import contextlib
    import time

    import psycopg

    store = PostgresStore(pg_url, max_connections=4)
    try:
        with contextlib.ExitStack() as held:
            for _ in range(4):
                held.enter_context(store.transaction())
        with psycopg.connect(pg_url, autocommit=True) as admin:
            kill = (
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = 'otelhooks' AND datname = current_database() "
                "AND pid <> pg_backend_pid()"
            )
            assert admin.execute(kill).fetchone() == (4,)
            gone = (
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE application_name = 'otelhooks' AND datname = current_database()"
            )
            while admin.execute(gone).fetchone() != (0,):
                time.sleep(0.02)
        assert _run(store, "SELECT 1") is None
        with store.transaction() as conn:
            assert conn.execute("SELECT 2").fetchone() == (2,)
    finally:
        store.close()


def test_serve_counts_a_saturated_pool_and_a_store_it_cannot_reach_apart(pg_url: str) -> None:
    """What an operator alerts on (``otelhooks.store.errors``) tells serve saturated (every
    pooled connection in use: ``store_busy``) from the store down (``store_unavailable``).
    Before, both were a ``503`` with ``Retry-After: 1`` and a log line, and no metric at all."""
    import contextlib

    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from otelhooks import AgentMetrics, HookSpanProcessor
    from otelhooks import _semconv as sc
    from otelhooks._store._serve import open_state
    from tests.fleet._fleet import StallingProxy

    reader = InMemoryMetricReader()
    metrics = AgentMetrics(MeterProvider(metric_readers=[reader]))
    proxy = StallingProxy(int(pg_url.rsplit(":", 1)[1].split("/")[0]))
    state, _, closing = open_state(proxy.url(pg_url), [], HookSpanProcessor(metrics=metrics))
    try:

        def fill(held: contextlib.ExitStack) -> None:
            for _ in range(100):  # past the pool's bound: the one that waits is refused
                held.enter_context(state.transaction())

        with contextlib.ExitStack() as held, pytest.raises(StoreBusy):
            fill(held)
        proxy.close()  # every connection lost, none can be opened
        with pytest.raises(StoreUnavailable) as down:
            state.statement(b"SELECT 1")  # type: ignore[attr-defined]
        assert not isinstance(down.value, StoreBusy)
    finally:
        for thing in closing:
            thing.close()
        state.close()
    assert metrics.flush()
    counted: dict[str, float] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for found in scope.metrics:
                for point in found.data.data_points if found.name == sc.METRIC_STORE_ERRORS else ():
                    error = str(point.attributes[sc.ATTR_STORE_ERROR])
                    counted[error] = counted.get(error, 0) + point.value
    assert counted.get("store_busy") == 1, counted
    assert counted.get("store_unavailable", 0) >= 1, counted
