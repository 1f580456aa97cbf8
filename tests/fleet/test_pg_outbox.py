"""The webhook outbox in PostgreSQL: each delivery done once, by whichever instance is alive."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import psycopg

from otelhooks import WebhookConfig
from otelhooks._store._open import open_store
from otelhooks._store._pg_outbox import PostgresOutbox
from otelhooks._store._postgres import PostgresStore
from tests._webhook_server import WebhookServer
from tests.fleet._fleet import start_instance
from tests.reliability._procs import cli_env
from tests.reliability._serve_proc import post_traces, tool_spans_json


def _outbox(url: str, **options: float) -> tuple[PostgresStore, PostgresOutbox]:
    store = open_store(url)
    assert isinstance(store, PostgresStore)
    return store, PostgresOutbox(store, **options)


def _event_ids(server: WebhookServer) -> Counter[str]:
    return Counter(r.headers["idempotency-key"] for r in server.requests("/hook"))


def test_two_pumping_instances_deliver_each_row_once(pg_url: str, server: WebhookServer) -> None:
    config = WebhookConfig(url=f"{server.url}/hook", delivery="queue")
    (sa, a), (sb, b) = _outbox(pg_url), _outbox(pg_url)
    try:
        for n in range(100):
            (a if n % 2 else b).put("q", f"e{n}", config, json.dumps({"n": n}).encode())
        assert a.flush(30)
        assert b.flush(30)
        server.wait_for("/hook", 100)
        time.sleep(0.3)  # a second delivery of any row would arrive by now
    finally:
        a.close()
        b.close()
        sa.close()
        sb.close()
    assert _event_ids(server) == Counter({f"e{n}": 1 for n in range(100)})


CLAIMER = textwrap.dedent(
    """
    import os, sys
    from otelhooks import WebhookConfig
    from otelhooks._store._open import open_store
    from otelhooks._store._pg_outbox import PostgresOutbox

    store = open_store(sys.argv[1])
    outbox = PostgresOutbox(store, lease_s=1.0)
    config = WebhookConfig(url=sys.argv[2], delivery="queue")
    with store.transaction() as conn:
        for n in range(10):
            conn.execute(
                "INSERT INTO otelhooks_outbox (hook_id, event_id, config, body, next_at, "
                "deadline_at) VALUES ('q', %s, %s, '{}', 0, 1e12)",
                (f"e{n}", __import__("json").dumps(config.persisted())),
            )
    claimed = outbox.claim(limit=10)   # leased to this process, not delivered yet
    print(len(claimed), flush=True)
    os.kill(os.getpid(), 9)
    """
)


def test_rows_leased_by_an_instance_killed_9_are_delivered_by_another(
    pg_url: str, server: WebhookServer
) -> None:
    open_store(pg_url).close()  # the schema
    done = subprocess.run(
        [sys.executable, "-c", CLAIMER, pg_url, f"{server.url}/hook"],
        capture_output=True, text=True, timeout=60, env=cli_env(),
    )  # fmt: skip
    assert done.returncode == -9, done.stderr
    assert done.stdout.strip() == "10"
    store, outbox = _outbox(pg_url)
    try:
        assert outbox.claim() == []  # still leased by the dead process
        started = time.monotonic()
        outbox.start()
        server.wait_for("/hook", 10, timeout_s=20)
        assert outbox.flush(10)
        assert time.monotonic() - started >= 0.5  # not before the lease ran out
    finally:
        outbox.close()
        store.close()
    assert _event_ids(server) == Counter({f"e{n}": 1 for n in range(10)})


def test_a_queued_webhook_of_serve_is_delivered_once_by_the_fleet(
    tmp_path: Path, pg_url: str, server: WebhookServer
) -> None:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(
        "hooks:\n  - id: q\n    type: afterToolCall\n    webhook:\n"
        f"      url: {server.url}/hook\n      delivery: queue\n"
    )
    a = start_instance(tmp_path, pg_url, "--hooks", str(hooks))
    try:
        b = start_instance(tmp_path, pg_url, "--hooks", str(hooks))
    except BaseException:
        a.stop()
        raise
    try:
        assert post_traces(a.url, tool_spans_json(20)).status_code == 200
        assert post_traces(b.url, tool_spans_json(20, start=20)).status_code == 200
        server.wait_for("/hook", 40, timeout_s=30)
        time.sleep(0.5)
    finally:
        a.stop()
        b.stop()
    counts = _event_ids(server)
    assert len(counts) == 40
    assert set(counts.values()) == {1}
    with psycopg.connect(pg_url) as conn:  # they went through the shared outbox
        row = conn.execute("SELECT last_value FROM otelhooks_outbox_id_seq").fetchone()
    assert row == (40,)
