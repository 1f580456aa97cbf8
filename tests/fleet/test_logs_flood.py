"""``/v1/logs`` under a flood from anything holding the ingest token: a Claude Code run's cost
records still land, so its budget guard sees the spend.

Real ``serve`` on a throwaway PostgreSQL, flooders posting requests of thousands of model calls
of made-up sessions (each a store write), and the OpenTelemetry SDK's OTLP/HTTP log exporter as
the run's (it retries a 503 after its ``Retry-After``, within its timeout, as Claude Code's does).
Before, the route's four threads were the flood's: every request past them was refused at once,
the run's export failed, and its cost was never added."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import httpx
import psycopg
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.sdk._logs.export import LogRecordExportResult

from otelhooks import serve
from otelhooks._instrument._spend import session_key
from otelhooks.integrations.coding_agents._telemetry import MAX_CALLS_PER_REQUEST
from tests.fleet.test_ingest_keeps_what_it_acknowledges import _call
from tests.integrations.test_claude_code_serve import AUTH, SESSION, TOKEN, _kv


def _flood_body(calls: int) -> bytes:
    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    for n in range(calls):
        record = scope.log_records.add()
        record.time_unix_nano = time.time_ns()
        record.body.string_value = "claude_code.api_request"
        for key, value in {
            "session.id": uuid.uuid4().hex,  # a session new to the store: two writes
            "event.name": "api_request",
            "event.sequence": n,
            "model": "claude-sonnet-4-5",
            "input_tokens": 3,
            "output_tokens": 1,
            "cost_usd": 0.001,
        }.items():
            record.attributes.append(_kv(key, value))
    return request.SerializeToString()


def test_a_runs_cost_records_land_while_the_ingest_token_floods_the_route(
    tmp_path: Path, pg_url: str
) -> None:
    """Up to ~15 s: the flood must hold every thread of the route for seconds."""
    hooks = tmp_path / "none.yaml"
    hooks.write_text("hooks: []\n")
    server = serve([hooks], token=TOKEN, store=pg_url, web=False)
    headers = {**AUTH, "Content-Type": "application/x-protobuf"}
    body = _flood_body(4 * MAX_CALLS_PER_REQUEST)
    stop = threading.Event()
    answers: list[httpx.Response] = []

    def flood() -> None:
        with httpx.Client(timeout=120) as client:
            while not stop.is_set():
                answers.append(client.post(server.url + "/v1/logs", content=body, headers=headers))

    flooders = [threading.Thread(target=flood) for _ in range(6)]
    try:
        for thread in flooders:
            thread.start()
        while not answers and not _writing(pg_url):  # the flood holds the route's threads
            time.sleep(0.05)
        exporter = OTLPLogExporter(endpoint=server.url + "/v1/logs", headers=AUTH, timeout=10)
        result = exporter.export([_call(0.25, 1), _call(0.5, 2)])
        exporter.shutdown()
        stop.set()
        for thread in flooders:
            thread.join(60)
        with psycopg.connect(pg_url) as conn:
            spend = conn.execute(
                "SELECT cost_usd, calls FROM otelhooks_claude_code.spend WHERE key = %s",
                (session_key(SESSION),),
            ).fetchall()
    finally:
        stop.set()
        server.stop()
    assert result == LogRecordExportResult.SUCCESS  # was FAILURE: 503 on every try
    assert spend == [(0.75, 2)]
    kept = [a for a in answers if a.status_code == 200]
    assert kept, [a.status_code for a in answers]
    # a flood request adds at most MAX_CALLS_PER_REQUEST calls, the rest refused as OTLP says
    partial = ExportLogsServiceResponse.FromString(kept[0].content).partial_success
    assert partial.rejected_log_records == 3 * MAX_CALLS_PER_REQUEST


def _writing(pg_url: str) -> bool:
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT count(*) FROM otelhooks_claude_code.spend").fetchone()
    return bool(row and row[0])
