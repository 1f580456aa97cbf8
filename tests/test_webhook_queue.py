"""delivery: queue — the durable outbox survives a process restart (and kill -9)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from otelhooks import CriticalHookDeliveryError, WebhookConfig, WebhookDeliverer
from otelhooks._actions._outbox import Outbox, backoff_s
from otelhooks.testing import TestPipeline
from tests._realparts import reserved_port
from tests._webhook_server import Reply, WebhookServer

PRODUCER = textwrap.dedent(
    """
    import os, sys
    from opentelemetry.sdk.trace import TracerProvider
    from otelhooks import AgentTracer, HookSpanProcessor, HooksEngine, PayloadBuilder
    from otelhooks import WebhookDeliverer

    # content capture on, so the bodies carry the arguments that tell the events apart
    deliverer = WebhookDeliverer(
        outbox_path=sys.argv[1], builder=PayloadBuilder(capture_content=True))
    provider = TracerProvider()
    hooks = HookSpanProcessor(HooksEngine(deliverer=deliverer))
    provider.add_span_processor(hooks)
    hooks.register([{"id": "q", "type": "afterToolCall",
                     # a row whose delivery the kill cuts is leased for its timeout and 5 s
                     "webhook": {"url": sys.argv[2], "delivery": "queue", "timeout": 2}}])
    tracer = AgentTracer(tracer_provider=provider, hooks=hooks)
    with tracer.operation("agent") as op, op.step() as step:
        for i in range(5):
            step.run_tool("calc", "add", {"i": i}, lambda i: str(i))
    print("enqueued", flush=True)
    os.kill(os.getpid(), 9)   # no flush, no shutdown: only what is on disk survives
    """
)


def test_queued_deliveries_survive_kill_9_and_are_delivered_after_restart(
    tmp_path: Path, server: WebhookServer
) -> None:
    outbox = tmp_path / "outbox.db"
    accepting = False
    server.routes["/hook"] = lambda got: Reply(204 if accepting else 503)  # the endpoint is down
    proc = subprocess.run(
        [sys.executable, "-c", PRODUCER, str(outbox), server.url + "/hook"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert "enqueued" in proc.stdout
    accepting = True  # the endpoint recovers; a new process picks up the outbox
    box = Outbox(outbox, poll_s=0.02)
    assert box.pending() == 5
    deadline = time.monotonic() + 20
    while box.pending() and time.monotonic() < deadline:
        box.start()
        time.sleep(0.05)
    box.close()
    delivered = [r.json() for r in server.requests("/hook")]
    ids = {b["eventId"] for b in delivered}
    assert len(ids) == 5  # every event arrived; repeats (at-least-once) share their eventId
    assert sorted({b["eventId"]: b["args"]["i"] for b in delivered}.values()) == [0, 1, 2, 3, 4]


def test_a_failing_endpoint_is_retried_from_the_outbox(
    tmp_path: Path, server: WebhookServer
) -> None:
    server.routes["/q"] = [Reply(503), Reply(204)]
    box = Outbox(tmp_path / "o.db", poll_s=0.02)
    config = WebhookConfig.model_validate({"url": server.url + "/q", "delivery": "queue"})
    box.put("h", "evt-1", config, b'{"eventId": "evt-1"}')
    deadline = time.monotonic() + 30
    while box.pending() and time.monotonic() < deadline:
        time.sleep(0.05)
    box.close()
    requests = server.requests("/q")
    assert len(requests) == 2
    assert {r.headers["idempotency-key"] for r in requests} == {"evt-1"}


def test_rows_past_their_deadline_are_dropped_and_reported(tmp_path: Path) -> None:
    reports: list[tuple[str, str, str]] = []
    box = Outbox(
        tmp_path / "o.db", retry_deadline_s=0.3, poll_s=0.02,
        report=lambda hook, _event, outcome, _delivery, why: reports.append((hook, outcome, why)),
    )  # fmt: skip
    with reserved_port() as dead_port:
        config = WebhookConfig.model_validate(
            {"url": f"http://127.0.0.1:{dead_port}/x", "delivery": "queue"}
        )
        box.put("h", "e", config, b"{}")
        deadline = time.monotonic() + 30
        while not reports and time.monotonic() < deadline:
            time.sleep(0.05)
        box.close()
    assert reports == [("h", "dropped", "retry_deadline")]


def test_only_the_serializable_config_is_stored_never_resolved_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QTOKEN", "very-secret-value")
    box = Outbox(tmp_path / "o.db")
    with reserved_port() as dead_port:
        config = WebhookConfig.model_validate(
            {"url": f"http://127.0.0.1:{dead_port}/x", "delivery": "queue",
             "headers": {"Authorization": "Bearer ${QTOKEN}"}, "allowedEnvVars": ["QTOKEN"]}
        )  # fmt: skip
        box.put("h", "e", config, b"{}")
        box.close()
    raw = (tmp_path / "o.db").read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.glob("o.db-*") if p.is_file()
    )
    assert b"${QTOKEN}" in raw
    assert b"very-secret-value" not in raw
    row = json.loads(
        Outbox(tmp_path / "o.db")._db.execute("SELECT config FROM outbox").fetchone()[0]
    )
    assert row["headers"] == {"Authorization": "Bearer ${QTOKEN}"}


def test_fallback_none_raises_one_critical_error_after_sibling_hooks(
    pipe: TestPipeline, tmp_path: Path, server: WebhookServer
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the outbox folder should be")
    pipe.oh.engine.deliverer = WebhookDeliverer(
        metrics=pipe.oh.metrics, outbox_path=blocker / "o.db"
    )
    seen: list[str] = []
    pipe.register(
        {"id": "critical", "type": "afterToolCall",
         "webhook": {"url": server.url + "/q", "delivery": "queue", "fallback": "none"}},
        {"id": "sibling", "type": "afterToolCall", "webhook": {"url": server.url + "/n"}},
        {"id": "observer", "type": "afterToolCall", "handler": lambda e: seen.append(e.apiName)},
    )  # fmt: skip
    with (
        pytest.raises(CriticalHookDeliveryError) as info,
        pipe.tracer.operation("agent") as op,
        op.step() as step,
    ):
        step.run_tool("calc", "add", {}, lambda: "1")
    assert info.value.hook_id == "critical"
    pipe.flush()
    assert seen == ["add"]
    assert server.wait_for("/n", 1)
    assert pipe.span("execute_tool add") is not None  # the span was exported all the same


def test_queue_without_fallback_none_falls_back_to_fetch(
    pipe: TestPipeline, tmp_path: Path, server: WebhookServer
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    d = WebhookDeliverer(metrics=pipe.oh.metrics, outbox_path=blocker / "o.db")
    pipe.oh.engine.deliverer = d
    pipe.register(
        {
            "id": "q",
            "type": "afterToolCall",
            "webhook": {"url": server.url + "/q", "delivery": "queue"},
        }
    )
    with pipe.tracer.operation("agent") as op, op.step() as step:
        step.run_tool("calc", "add", {}, lambda: "1")
    d.flush(10)
    assert len(server.requests("/q")) == 1
    d.shutdown(5)


def test_backoff_has_full_jitter_under_an_exponential_cap() -> None:
    samples = [backoff_s(3) for _ in range(200)]
    assert all(0 <= s <= 4.0 for s in samples)
    assert max(samples) > 2.0
    assert min(samples) < 1.0
    assert all(backoff_s(40) <= 30.0 for _ in range(50))
