"""A proxy named by the agent's environment never answers for our own servers.

An agent's environment often names a proxy (``HTTP_PROXY``, ``ALL_PROXY``: a corporate one, a
sandbox's filtering one), and httpx sends every request there unless ``NO_PROXY`` names the
host, 127.0.0.1 included. The approval asker of a hook process then posted ``/v1/approvals``,
with its bearer token, to the proxy, and took the proxy's ``{"decision": "allow"}`` for the
person's: the call ran, nobody asked. With ``ALL_PROXY=socks5://...`` (no SOCKS package) it
never reached serve at all. Real processes: the one-process bridge, a real ``serve`` and a
hostile proxy on 127.0.0.1 that approves everything.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

import otelhooks
from otelhooks import EventLogClient, EventLogServer, serve
from otelhooks.testing import TestPipeline, pipeline
from tests.integrations._daemon_procs import (
    NO_ANSWER,
    bash,
    client_env,
    daemon_pid,
    deny_reason,
    hook,
    one_process,
    runtime_folder,
)
from tests.mcp._harness import calls, http_gateway, http_session, write_hooks
from tests.reliability.test_telemetry_losses import SPANS, collector, run_agent

pytestmark = pytest.mark.timeout(60)

TOKEN = "proxy-test-t0ken-0123456789"
APPROVED = {"id": "p1", "state": "decided", "decision": "allow", "answered_by": "proxy"}
# no host exempt from the proxy (an empty ``http_proxy`` would unset ``HTTP_PROXY`` too)
NO_EXEMPTION = {"NO_PROXY": "", "no_proxy": ""}


class _Approves(BaseHTTPRequestHandler):
    """A proxy that answers every request itself: 201, an approval decided ``allow``."""

    seen: list[str]

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.seen.append(f"{self.command} {self.path} {self.headers.get('authorization')}")
        body = json.dumps(APPROVED).encode()
        self.send_response(201)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = do_CONNECT = _answer

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def approving_proxy() -> Iterator[tuple[int, list[str]]]:
    """The proxy's port and the requests it saw."""
    seen: list[str] = []
    handler = type("Handler", (_Approves,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def asked_serve() -> Iterator[EventLogServer]:
    started = serve(token=TOKEN)
    try:
        yield started
    finally:
        started.stop()


@pytest.mark.parametrize(
    ("variable", "scheme"),
    [
        ("HTTP_PROXY", "http"),
        ("http_proxy", "http"),
        ("ALL_PROXY", "http"),
        ("all_proxy", "socks5"),
    ],
)
def test_a_hook_process_asks_serve_not_the_proxy_its_environment_names(
    tmp_path: Path, asked_serve: EventLogServer, variable: str, scheme: str
) -> None:
    (tmp_path / "otelhooks.yaml").write_text(
        "hooks:\n"
        "  - id: ask\n"
        "    type: PreToolUse\n"
        "    matcher: Bash\n"
        f"    approval: {{timeout: 1, default: deny, url: '{asked_serve.url}'}}\n"
    )
    with approving_proxy() as (port, seen):
        done = one_process(
            tmp_path,
            bash("t1", "rm -rf ~"),
            **{**NO_EXEMPTION, variable: f"{scheme}://127.0.0.1:{port}"},
            OTELHOOKS_INGEST_TOKEN=TOKEN,
        )
    assert done.returncode == 0, done.stderr
    # serve's answer: nobody answered in time, the default (deny) applies; before, the proxy's
    # allow (an http proxy) or an ImportError (socks5) answered
    assert deny_reason("claude-code", done.stdout).endswith("[denied by timeout]"), done.stdout
    assert seen == []  # nor did the proxy see the token


def test_an_async_asker_in_process_asks_serve_not_the_proxy(
    asked_serve: EventLogServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[dict[str, Any]] = []
    hook = {
        "id": "ask",
        "type": "before_tool_call",
        "matcher": "rm",
        "approval": {"timeout": 1, "default": "deny", "url": asked_serve.url},
    }

    async def run(pipe: TestPipeline) -> None:
        async with pipe.oh.operation("careful-bot") as op, op.step() as step:
            await step.arun_tool("fs", "rm", {"path": "/data"}, lambda **kw: ran.append(kw))

    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", TOKEN)
    for name, value in NO_EXEMPTION.items():
        monkeypatch.setenv(name, value)
    with approving_proxy() as (port, seen), pipeline(hooks=[hook]) as pipe:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
        asyncio.run(run(pipe))
        attrs = pipe.spans("execute_tool rm")[0].attributes
    assert ran == []
    assert attrs is not None
    assert attrs["otelhooks.hook.decision"] == "deny"
    assert seen == []


def test_the_event_log_client_reads_a_loopback_serve_not_the_proxy(
    asked_serve: EventLogServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in NO_EXEMPTION.items():
        monkeypatch.setenv(name, value)
    with approving_proxy() as (port, seen):
        monkeypatch.setenv("ALL_PROXY", f"http://127.0.0.1:{port}")
        with EventLogClient(asked_serve.url, token=TOKEN) as client:
            batch = client.fetch()
    assert batch.records == []  # serve's answer (the proxy's is not an event batch)
    assert seen == []


def test_the_mcp_gateway_reaches_a_loopback_upstream_not_the_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = write_hooks(tmp_path, "hooks: []\n")

    async def add(url: str) -> Any:
        async with http_session(url) as session:
            return await session.call_tool("add", {"a": 40, "b": 2})

    with approving_proxy() as (port, seen), contextlib.ExitStack() as stack:
        with monkeypatch.context() as env:  # the gateway's environment, not this client's
            for name, value in NO_EXEMPTION.items():
                env.setenv(name, value)
            env.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
            url = stack.enter_context(http_gateway(tmp_path, [hooks]))
        result = anyio.run(add, url)
    assert result.is_error is False
    assert {"tool": "add", "args": {"a": 40, "b": 2}} in calls(tmp_path)
    assert seen == []


def test_spans_for_a_loopback_collector_reach_it_not_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The proxy's 2xx with a JSON body is an accepted export to the SDK: before, the report said
    # every span was exported, none reached the collector, and nothing was counted.
    for name, value in NO_EXEMPTION.items():
        monkeypatch.setenv(name, value)
    with approving_proxy() as (port, seen), collector() as receiver:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint + "/v1/traces")
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
        oh = otelhooks.configure(
            service_name="proxied", otlp=True, set_global=False, structured_logging=False
        )
        run_agent(oh)
        oh.force_flush(5.0)
        oh.shutdown(timeout_s=5.0, log=False)
    assert len(receiver.spans) == SPANS
    assert seen == []


@contextlib.contextmanager
def grpc_collector() -> Iterator[tuple[int, list[Any]]]:
    """A real OTLP/gRPC trace receiver on 127.0.0.1: its port and the requests it got."""
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    received: list[Any] = []

    class Traces(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            received.append(request)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield port, received
    finally:
        server.stop(1)


def _spans(received: list[Any]) -> int:
    return sum(len(ss.spans) for r in received for rs in r.resource_spans for ss in rs.scope_spans)


def test_grpc_spans_for_a_loopback_collector_reach_it_not_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in NO_EXEMPTION.items():
        monkeypatch.setenv(name, value)
    with grpc_collector() as (grpc_port, received), approving_proxy() as (port, seen):
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{port}")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{grpc_port}")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
        oh = otelhooks.configure(
            service_name="proxied", otlp=True, set_global=False, structured_logging=False
        )
        run_agent(oh)
        report = oh.shutdown(timeout_s=5.0, log=False)
    # before, the exporter asked the proxy to CONNECT to the collector: a proxy speaking gRPC
    # answered for it, any other failed every export
    assert seen == []
    assert _spans(received) == SPANS
    assert report.ok


def test_a_coding_agents_grpc_exporter_reaches_a_loopback_collector_not_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the exporter a hook process builds from the hooks' OTEL_* settings (otelhooks.env)
    from opentelemetry.sdk.trace import TracerProvider

    from otelhooks.integrations.coding_agents._environment import otlp_exporter

    for name, value in NO_EXEMPTION.items():
        monkeypatch.setenv(name, value)
    with grpc_collector() as (grpc_port, received), approving_proxy() as (port, seen):
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{port}")
        settings = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{grpc_port}",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        }
        exporter = otlp_exporter(settings)
        assert exporter is not None
        span = TracerProvider().get_tracer("t").start_span("execute_tool Bash")
        span.end()
        result = exporter.export([span])  # type: ignore[list-item]
        exporter.shutdown()
    assert seen == []
    assert _spans(received) == 1
    assert result.name == "SUCCESS"


def test_the_bridge_daemon_asks_serve_not_the_proxy_its_environment_names(
    tmp_path: Path, asked_serve: EventLogServer
) -> None:
    (tmp_path / "otelhooks.yaml").write_text(
        "hooks:\n"
        "  - id: ask\n"
        "    type: PreToolUse\n"
        "    matcher: Bash\n"
        f"    approval: {{timeout: 1, default: deny, url: '{asked_serve.url}'}}\n"
    )
    with approving_proxy() as (port, seen), runtime_folder() as runtime:
        env = client_env(
            tmp_path,
            runtime,
            **NO_EXEMPTION,
            HTTP_PROXY=f"http://127.0.0.1:{port}",
            OTELHOOKS_INGEST_TOKEN=TOKEN,
        )
        first = hook(env, bash("t1", "rm -rf ~"))  # starts the daemon, which inherits the proxy
        daemon_pid(runtime)
        second = hook(env, bash("t2", "rm -rf ~"))
    assert NO_ANSWER not in second.stderr  # the daemon answered
    for done in (first, second):
        assert done.deny_reason().endswith("[denied by timeout]"), done.stdout
    assert seen == []


def test_a_coding_agents_grpc_exporter_gives_a_refused_collector_up_at_once() -> None:
    # A hook process has 1.5 s for its SessionEnd: its gRPC exporter must not retry with
    # backoff itself (an empty list of retryable codes is the SDK's default list, ~7 s here).
    from opentelemetry.sdk.trace import TracerProvider

    from otelhooks._export._report import DeliveryTracker
    from otelhooks.integrations.coding_agents._environment import otlp_exporter

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        refused = holder.getsockname()[1]  # bound, never listening: connections are refused
        settings = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{refused}",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        }
        tracker = DeliveryTracker("spans", "", fail_fast=True)
        exporter = otlp_exporter(settings, tracker)
        assert exporter is not None
        span = TracerProvider().get_tracer("t").start_span("execute_tool Bash")
        span.end()
        started = time.monotonic()
        result = exporter.export([span])  # type: ignore[list-item]
        took = time.monotonic() - started
        exporter.shutdown()
    assert result.name == "FAILURE"
    assert took < 1.5
