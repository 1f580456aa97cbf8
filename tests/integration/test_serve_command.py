"""``otelhooks serve`` as a real process: OTLP in, event log out, a clean SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan

from otelhooks import EventLogClient, EventRecord, OtlpJsonLinesSpanExporter
from otelhooks.testing import pipeline
from tests._realparts import serve_url

TOKEN = "serve-command-token"


def agent_spans() -> list[ReadableSpan]:
    with pipeline() as pipe:
        op = pipe.tracer.operation("remote", session_id="s-1")
        with op, op.step() as step:
            step.run_tool("shop", "order_create", {"sku": "A"}, lambda sku: "ok")
            step.run_tool("shop", "settings_get", {}, lambda: "{}")
        return pipe.spans()


def start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OTELHOOKS_"))}
    return subprocess.Popen(
        [sys.executable, "-m", "otelhooks", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**clean, **(env or {})},
    )


@pytest.fixture
def hook_files(tmp_path: Path) -> list[str]:
    events = tmp_path / "events.yaml"
    events.write_text(
        "kind: agent_events\nname: shop\nagent: shop-bot\non: [after_tool_result, after_loop]\n"
        "ignore: [settings_get]\nmutating: [order_create]\n"
        "durable: true\npath: events.sqlite3\n"
    )
    hooks = tmp_path / "hooks.json"
    hooks.write_text(
        json.dumps([{"id": "gate", "type": "PreToolUse", "handler": "builtins:print"}])
    )
    return [str(events), str(hooks)]


@pytest.fixture
def server(hook_files: list[str]) -> Iterator[tuple[subprocess.Popen[str], int, str]]:
    """``otelhooks serve --port 0``: the process, its port and what it printed up to saying so."""
    args = [a for f in hook_files for a in ("--hooks", f)]
    proc = start(*args, "--port", "0", env={"OTELHOOKS_ADMIN_TOKEN": TOKEN})
    try:
        url, said = serve_url(proc)
        yield proc, int(url.rsplit(":", 1)[1]), said
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def test_serve_receives_otlp_and_serves_the_log_then_stops_cleanly(
    server: tuple[subprocess.Popen[str], int, str], tmp_path: Path
) -> None:
    proc, port, said = server
    url = f"http://127.0.0.1:{port}"
    exporter = OtlpJsonLinesSpanExporter(tmp_path / "spans.jsonl")
    exporter.export(agent_spans())  # the body: one line of OTLP JSON
    exporter.shutdown()
    response = httpx.post(
        f"{url}/v1/traces",
        content=(tmp_path / "spans.jsonl").read_bytes(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    assert response.status_code == 200
    got: list[EventRecord] = []
    with EventLogClient(url, token=TOKEN, wait_timeout=5) as client:
        for _ in range(10):
            got += client.wait()
            if len(got) >= 2:
                break
    assert [(r.agent, r.kind, r.tool, r.mutating) for r in got] == [
        ("shop-bot", "after_tool_result", "shop/order_create", True),
        ("shop-bot", "after_loop", None, False),
    ]
    assert httpx.get(f"{url}/v1/events").status_code == 401

    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=20)
    output = said + output
    assert proc.returncode == 0, output
    assert f"listening on {url}" in output
    assert "intercept hooks cannot act" in output
    assert "gate" in output
    with sqlite3.connect(tmp_path / "events.sqlite3") as conn:
        rows = conn.execute("SELECT seq, tool FROM events ORDER BY seq").fetchall()
    assert rows == [(1, "shop/order_create"), (2, None)]


def test_serve_without_an_admin_token_exits_with_a_message() -> None:
    proc = start("--port", "0")
    output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "OTELHOOKS_ADMIN_TOKEN" in output
