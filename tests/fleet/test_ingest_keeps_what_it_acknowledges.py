"""``/v1/logs`` acknowledges only what it kept: a model call's cost the store could not add is a
503 with ``Retry-After`` (it was a 200, the exporter did not retry, and the session's spend, which
a budget guard reads, stayed short), and the client's retry adds each call once, on both stores.

Real ``serve``, the OpenTelemetry SDK's OTLP/HTTP log exporter (which retries a 503 after the
``Retry-After``), and a throwaway PostgreSQL whose trigger refuses one insert."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import psycopg
import pytest
from google.protobuf import json_format
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.resources import Resource

from otelhooks import serve
from tests._webhook_server import webhook_server
from tests.integrations.test_claude_code_serve import AUTH, SESSION, TOKEN, _api_request_log

# The second insert into the spend table fails (the store is down a moment); the others pass.
# A sequence is not rolled back with the failed transaction, so it counts every attempt.
_REFUSE_SECOND = """
CREATE SEQUENCE attempts;
CREATE FUNCTION refuse_second() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF nextval('attempts') = 2 THEN RAISE EXCEPTION 'the store is down a moment'; END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER refuse_second BEFORE INSERT ON otelhooks_claude_code.spend
    FOR EACH ROW EXECUTE FUNCTION refuse_second();
"""


def _call(cost: float, sequence: int) -> ReadableLogRecord:
    record = LogRecord(
        timestamp=time.time_ns(),
        body="claude_code.api_request",
        event_name="claude_code.api_request",
        attributes={
            "session.id": SESSION,
            "event.name": "api_request",
            "event.sequence": sequence,
            "model": "claude-sonnet-4-5",
            "input_tokens": 30,
            "output_tokens": 12,
            "cost_usd": cost,
        },
    )
    return ReadableLogRecord(record, Resource.create({"service.name": "claude-code"}))


def test_a_cost_the_store_refused_is_a_503_and_the_exporters_retry_adds_each_call_once(
    tmp_path: Path, pg_url: str
) -> None:
    hooks = tmp_path / "none.yaml"
    hooks.write_text("hooks: []\n")
    server = serve([hooks], token=TOKEN, store=pg_url, web=False)
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(_REFUSE_SECOND)
        exporter = OTLPLogExporter(endpoint=server.url + "/v1/logs", headers=AUTH, timeout=20)
        # two calls in one request: the first is kept, the second refused; then the retry
        result = exporter.export([_call(0.25, 1), _call(0.5, 2)])
        exporter.shutdown()
        with psycopg.connect(pg_url) as conn:
            spend = conn.execute(
                "SELECT cost_usd, calls FROM otelhooks_claude_code.spend"
            ).fetchall()
            attempts = conn.execute("SELECT last_value FROM attempts").fetchone()
    finally:
        server.stop()
    assert result == LogRecordExportResult.SUCCESS
    assert attempts == (3,)  # kept, refused, and the refused one again: the kept one not again
    assert spend == [(pytest.approx(0.75), 2)]  # was (0.25, 1): the 200 made the exporter stop


def test_the_answer_to_a_refused_cost_is_a_retryable_otlp_failure(
    tmp_path: Path, pg_url: str
) -> None:
    hooks = tmp_path / "none.yaml"
    hooks.write_text("hooks: []\n")
    server = serve([hooks], token=TOKEN, store=pg_url, web=False)
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(_REFUSE_SECOND)
        headers = {**AUTH, "Content-Type": "application/json"}
        first, second = (json_format.MessageToJson(_api_request_log()) for _ in range(2))
        answers = [
            httpx.post(server.url + "/v1/logs", content=text, headers=headers)
            for text in (first, second, second)  # kept; refused; the client's retry, kept
        ]
    finally:
        server.stop()
    kept, refused, retried = answers
    assert kept.status_code == 200
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["details"][0]["reason"] == "NOT_KEPT"
    assert retried.status_code == 200


def test_a_request_the_store_stalls_on_is_answered_503_after_one_store_timeout(
    tmp_path: Path, pg_url: str
) -> None:
    hooks = tmp_path / "none.yaml"
    hooks.write_text("hooks: []\n")
    server = serve([hooks], token=TOKEN, store=pg_url, web=False)
    request = _api_request_log()
    records = request.resource_logs[0].scope_logs[0].log_records
    for n in range(1, 4):  # four calls in one request, each its own
        records.add().CopyFrom(records[0])
        records[n].time_unix_nano += n
    headers = {**AUTH, "Content-Type": "application/x-protobuf"}
    try:
        with psycopg.connect(pg_url) as holder:  # a neighbour holds the spend table's lock
            holder.execute("LOCK TABLE otelhooks_claude_code.spend IN ACCESS EXCLUSIVE MODE")
            started = time.monotonic()
            answer = httpx.post(
                server.url + "/v1/logs",
                content=request.SerializeToString(),
                headers=headers,
                timeout=60,
            )
            took = time.monotonic() - started
    finally:
        server.stop()
    assert answer.status_code == 503
    # one wait for the store, not one per call: was four (16-20 s, past an exporter's own 10 s
    # timeout), and on main then a 200 for nothing kept
    assert took < 9


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_request_sent_twice_adds_and_reports_its_calls_once(
    tmp_path: Path, pg_url: str, kind: str
) -> None:
    with webhook_server() as sink:
        hooks = tmp_path / "llm.yaml"
        hooks.write_text(
            "hooks:\n  - id: llm-audit\n    type: llm_output\n"
            f'    webhook: {{url: "{sink.url}/llm"}}\n'
        )
        store = pg_url if kind == "postgresql" else None
        server = serve([hooks], token=TOKEN, store=store, web=False)
        try:
            headers = {**AUTH, "Content-Type": "application/x-protobuf"}
            once, other = _api_request_log(), _api_request_log()  # two calls, then a retry
            for request in (once, once, other):
                body = request.SerializeToString()
                answer = httpx.post(server.url + "/v1/logs", content=body, headers=headers)
                assert answer.status_code == 200
            sink.wait_for("/llm", 2, timeout_s=60)
        finally:
            server.stop()  # its webhooks delivered: a repeated call's would be among them
        got = [r.json() for r in sink.requests("/llm")]
    totals = sorted(g.get("payload", g)["spend"]["session"]["costUsd"] for g in got)
    assert totals == [pytest.approx(0.00036), pytest.approx(0.00072)]  # was 3 calls, $0.00108


def test_requests_the_store_stalls_on_leave_the_event_log_readable(
    tmp_path: Path, pg_url: str
) -> None:
    hooks = tmp_path / "none.yaml"
    hooks.write_text("hooks: []\n")
    server = serve([hooks], token=TOKEN, store=pg_url, web=False)
    headers = {**AUTH, "Content-Type": "application/x-protobuf"}
    answers: list[int] = []

    def export() -> None:
        body = _api_request_log().SerializeToString()
        answer = httpx.post(server.url + "/v1/logs", content=body, headers=headers, timeout=60)
        answers.append(answer.status_code)

    try:
        with psycopg.connect(pg_url) as holder:  # a neighbour holds the spend table's lock
            holder.execute("LOCK TABLE otelhooks_claude_code.spend IN ACCESS EXCLUSIVE MODE")
            exporters = [threading.Thread(target=export) for _ in range(12)]  # a fleet's sessions
            for thread in exporters:
                thread.start()
            time.sleep(0.5)  # their requests wait for the store
            started = time.monotonic()
            events = httpx.get(server.url + "/v1/events", params={"since": 0}, headers=AUTH)
            took = time.monotonic() - started
            for thread in exporters:
                thread.join()
    finally:
        server.stop()
    assert events.status_code == 200
    assert took < 2  # was 7-8 s: the stalled requests held every thread of asyncio's pool
    assert answers == [503] * 12  # at once past the route's own threads, else after one wait
