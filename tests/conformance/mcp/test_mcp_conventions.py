"""The MCP gateway's spans and metrics against ``model/mcp/*.yaml`` (``mcp_conventions.json``).

A real :class:`~otelhooks.mcp.McpGateway` with a real ``HooksEngine`` and the real SDK
(spans and metrics in memory) sees the JSON-RPC answers the fixture lists, frame by frame; the
transport tests in ``tests/mcp`` run the same gateway between the MCP SDK's client and server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from otelhooks import Block, HooksEngine
from otelhooks.mcp import McpGateway, McpSession

FIXTURE = json.loads((Path(__file__).parent / "mcp_conventions.json").read_text())
STATUS = FIXTURE["status"]


class Gateway:
    def __init__(self, **options: Any) -> None:
        self.spans = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.engine = HooksEngine(
            [{"id": "no-rm", "type": "beforeToolCall", "matcher": "rm", "handler": _deny}]
        )
        self.gateway = McpGateway(
            self.engine,
            provider.get_tracer("t"),
            name="srv",
            meter_provider=MeterProvider(metric_readers=[self.reader]),
            **options,
        )
        self.session: McpSession = self.gateway.session("s1")
        # the server's list, as a client's tools/list passes it: the gateway judges a guarded
        # call only of a tool the server lists
        self.session.from_client(b'{"jsonrpc":"2.0","id":0,"method":"tools/list"}')
        tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("t", "rm")]
        answer = {"jsonrpc": "2.0", "id": 0, "result": {"tools": tools}}
        self.session.from_server(json.dumps(answer).encode())
        self._id = 0

    def call(self, method: str, answer: dict[str, Any], *, from_server: bool = False) -> None:
        """One request and its answer, each through the side it really comes from."""
        self._id += 1
        request = {"jsonrpc": "2.0", "id": self._id, "method": method, "params": {"name": "t"}}
        reply = json.dumps({"jsonrpc": "2.0", "id": self._id, **answer}).encode()
        if from_server:
            self.session.from_server(json.dumps(request).encode())
            self.session.from_client(reply)
        else:
            self.session.from_client(json.dumps(request).encode())
            self.session.from_server(reply)

    def last(self) -> ReadableSpan:
        return self.spans.get_finished_spans()[-1]

    def metric_points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        return [
            point
            for rm in data.resource_metrics
            for sm in rm.scope_metrics
            for metric in sm.metrics
            if metric.name == name
            for point in metric.data.data_points
        ]


async def _await(later: Awaitable[Any]) -> Any:
    return await later


def _deny(event: Any) -> Block:
    return Block("rm is not allowed")


@pytest.fixture
def gw() -> Iterator[Gateway]:
    made = Gateway()
    yield made
    made.engine.shutdown(1.0)


def _error(code: int) -> dict[str, Any]:
    return {"error": {"code": code, "message": f"code {code}"}}


@pytest.mark.parametrize("code", STATUS["server_not_errors"])
def test_a_request_the_server_cannot_serve_is_not_an_error_on_the_server_span(
    gw: Gateway, code: int
) -> None:
    gw.call("tools/call", _error(code))
    span = gw.last()
    assert span.kind == SpanKind.SERVER
    assert span.attributes is not None
    assert span.attributes["rpc.response.status_code"] == str(code)
    assert "error.type" not in span.attributes
    assert span.status.status_code == StatusCode.UNSET


@pytest.mark.parametrize("code", STATUS["server_errors_examples"])
def test_other_codes_are_errors_on_the_server_span(gw: Gateway, code: int) -> None:
    gw.call("tools/call", _error(code))
    span = gw.last()
    assert span.attributes is not None
    assert span.attributes["error.type"] == str(code)
    assert span.attributes["rpc.response.status_code"] == str(code)
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == f"code {code}"  # the JSONRPCError.message


@pytest.mark.parametrize("code", STATUS["server_not_errors"])
def test_every_code_is_an_error_on_a_client_span(gw: Gateway, code: int) -> None:
    gw.call("sampling/createMessage", _error(code), from_server=True)
    span = gw.last()
    assert span.kind == SpanKind.CLIENT
    assert span.attributes is not None
    assert span.attributes["error.type"] == str(code)
    assert span.status.status_code == StatusCode.ERROR


def test_an_is_error_result_is_a_tool_error(gw: Gateway) -> None:
    gw.call("tools/call", {"result": {"content": [], "isError": True}})
    span = gw.last()
    assert span.attributes is not None
    assert span.attributes["error.type"] == STATUS["tool_result_is_error"]


def test_a_hook_denial_is_not_an_error(gw: Gateway) -> None:
    request = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "rm"}}
    relay = gw.session.from_client(json.dumps(request).encode())
    assert relay.later is not None
    answered = asyncio.run(_await(relay.later))
    assert json.loads(answered.to_client[0])["result"]["isError"] is True
    span = gw.last()
    assert span.attributes is not None
    assert span.attributes["otelhooks.hook.decision"] == "deny"
    assert "error.type" not in span.attributes
    assert span.status.status_code == StatusCode.UNSET


def test_the_server_exiting_records_the_code_the_client_got(gw: Gateway) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}}
    gw.session.from_client(json.dumps(request).encode())
    (answer,) = gw.session.close("the MCP server exited with code 3")
    code = json.loads(answer)["error"]["code"]
    call = next(s for s in gw.spans.get_finished_spans() if s.name == "tools/call t")
    assert call.attributes is not None
    assert call.attributes["error.type"] == "server_exited"
    assert call.attributes["rpc.response.status_code"] == str(code)
    (session,) = gw.metric_points("mcp.server.session.duration")
    assert session.attributes["error.type"] == "server_exited"


def test_operations_are_measured_with_the_conventions_attributes(gw: Gateway) -> None:
    gw.call("tools/call", {"result": {"content": []}})
    gw.call("tools/call", _error(-32603))
    spec = FIXTURE["metrics"]["mcp.server.operation.duration"]
    every = gw.metric_points("mcp.server.operation.duration")
    for point in every:
        assert set(point.attributes) <= set(spec["attributes"])
    # (the harness's own tools/list first)
    points = [p for p in every if p.attributes["mcp.method.name"] == "tools/call"]
    assert sum(p.count for p in points) == 2
    for point in points:
        assert point.attributes["gen_ai.tool.name"] == "t"
    failed = [p for p in points if "error.type" in p.attributes]
    assert [p.attributes["rpc.response.status_code"] for p in failed] == ["-32603"]


def test_requests_from_the_server_are_measured_as_client_operations(gw: Gateway) -> None:
    gw.call("roots/list", {"result": {"roots": []}}, from_server=True)
    (point,) = gw.metric_points("mcp.client.operation.duration")
    assert point.attributes["mcp.method.name"] == "roots/list"
    assert set(point.attributes) <= set(
        FIXTURE["metrics"]["mcp.client.operation.duration"]["attributes"]
    )


def test_the_metrics_have_the_conventions_units(gw: Gateway) -> None:
    gw.call("ping", {"result": {}})
    gw.session.close()
    data = gw.reader.get_metrics_data()
    found = {
        m.name: m.unit
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    }
    for name in ("mcp.server.operation.duration", "mcp.server.session.duration"):
        assert found[name] == FIXTURE["metrics"][name]["unit"]
    (session,) = gw.metric_points("mcp.server.session.duration")
    assert set(session.attributes) <= set(
        FIXTURE["metrics"]["mcp.server.session.duration"]["attributes"]
    )
    assert "error.type" not in session.attributes  # ended by the client, not an error


def test_a_server_span_has_no_server_address() -> None:
    made = Gateway(transport="tcp", upstream=("127.0.0.1", 9))
    made.session.peer = {"client.address": "127.0.0.1", "client.port": 5000}
    made.call("ping", {"result": {}})
    span = made.last()
    assert span.attributes is not None
    for name in FIXTURE["server_span"]["not_defined"]:
        assert name not in span.attributes
    assert (span.attributes["client.address"], span.attributes["client.port"]) == (
        "127.0.0.1",
        5000,
    )
    made.engine.shutdown(1.0)
