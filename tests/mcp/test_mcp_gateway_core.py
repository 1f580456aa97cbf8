"""The gateway's relay rules frame by frame, in process: a real ``HooksEngine`` and the real SDK
exporting to memory; only the transport is left out (the subprocess tests cover it)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks import Block, HooksEngine
from otelhooks.mcp import McpGateway, McpSession, Relay, UpstreamHeaders
from otelhooks.mcp._listing import MAX_SESSIONS_LISTED
from otelhooks.mcp._sse import events, with_data

pytestmark = pytest.mark.timeout(30)


class Harness:
    def __init__(self, hooks: list[dict[str, Any]], **options: Any) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.engine = HooksEngine(hooks)
        self.gateway = McpGateway(self.engine, provider.get_tracer("t"), name="srv", **options)
        self.session: McpSession = self.gateway.session("s1")
        # the server's list, as a client's tools/list would pass it: the gateway judges a call
        # of a tool only by what the server lists
        self.session.from_client(b'{"jsonrpc":"2.0","id":0,"method":"tools/list"}')
        tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("cat", "ls", "rm")]
        answer = {"jsonrpc": "2.0", "id": 0, "result": {"tools": tools}}
        settle(self.session.from_server(json.dumps(answer).encode()))

    def spans(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name == name]


@pytest.fixture
def deny_rm() -> Iterator[Harness]:
    h = Harness(
        [
            {
                "id": "no-rm",
                "type": "beforeToolCall",
                "matcher": "srv/rm",
                "handler": lambda e: Block("rm is off"),
            }
        ]
    )
    yield h
    h.engine.shutdown(2)


def settle(relay: Relay) -> Relay:
    while relay.later is not None:
        done = asyncio.run(_await(relay.later))
        relay = Relay(relay.to_server + done.to_server, relay.to_client + done.to_client)
    return relay


async def _await(later: Any) -> Relay:
    result: Relay = await later
    return result


def call(request_id: Any, tool: str, **args: Any) -> bytes:
    frame = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
    frame["params"] = {"name": tool, "arguments": args}
    return json.dumps(frame).encode()


def test_frames_pass_byte_for_byte_when_no_hook_acts(deny_rm: Harness) -> None:
    odd = (
        b'{ "method" : "tools/call", "id":7 ,"jsonrpc":"2.0",'
        b'"params":{"name":"ls","arguments":{"x":1.50}}}'
    )
    assert deny_rm.session.from_client(odd).to_server == [odd]
    answer = b'{"id":7,"jsonrpc":"2.0","result":{"content":[],"isError":false} }'
    assert deny_rm.session.from_server(answer).to_client == [answer]


def test_batch_with_a_denied_call_forwards_the_rest_and_answers_the_denied(
    deny_rm: Harness,
) -> None:
    batch = json.dumps([json.loads(call(1, "rm", path="/")), json.loads(call(2, "ls"))]).encode()
    relay = settle(deny_rm.session.from_client(batch))
    forwarded = json.loads(relay.to_server[0])
    answered = json.loads(relay.to_client[0])
    assert [m["id"] for m in forwarded] == [2]
    assert [(m["id"], m["result"]["isError"]) for m in answered] == [(1, True)]


def test_batch_no_hook_acts_on_passes_as_it_came(deny_rm: Harness) -> None:
    batch = b'[{"jsonrpc":"2.0","id":1,"method":"ping"}, {"jsonrpc":"2.0","method":"x"}]'
    assert deny_rm.session.from_client(batch).to_server == [batch]


def test_cancelled_while_hooks_decide_is_neither_forwarded_nor_answered() -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow_policy(event: Any) -> None:
        started.set()
        await release.wait()

    h = Harness([{"id": "slow", "type": "beforeToolCall", "handler": slow_policy}])

    async def scenario() -> Relay:
        relay = h.session.from_client(call(5, "ls"))
        assert relay.later is not None
        decided = asyncio.ensure_future(_await(relay.later))
        await started.wait()
        cancel = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}'
        assert h.session.from_client(cancel).to_server == [cancel]
        release.set()
        return await decided

    relay = asyncio.run(scenario())
    assert (relay.to_server, relay.to_client) == ([], [])
    (span,) = h.spans("tools/call ls")
    assert span.attributes is not None
    assert span.attributes["error.type"] == "cancelled"
    h.engine.shutdown(2)


def test_hooks_that_fail_answer_an_error_instead_of_forwarding() -> None:
    h = Harness([{"id": "broken", "type": "beforeToolCall", "handler": lambda e: Block("x")}])

    async def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("engine down")

    h.engine.adispatch = explode  # type: ignore[method-assign]
    relay = settle(h.session.from_client(call(3, "ls")))
    assert relay.to_server == []
    error = json.loads(relay.to_client[0])["error"]
    assert error["code"] == -32603
    assert "engine down" in error["message"]
    h.engine.shutdown(2)


def test_server_request_and_client_answer_pass_and_make_a_client_span(deny_rm: Harness) -> None:
    ask = b'{"jsonrpc":"2.0","id":0,"method":"roots/list"}'
    answer = b'{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}'
    assert deny_rm.session.from_server(ask).to_client == [ask]
    assert deny_rm.session.from_client(answer).to_server == [answer]
    (span,) = deny_rm.spans("roots/list")
    assert span.kind.name == "CLIENT"


def test_server_exit_answers_every_waiting_request(deny_rm: Harness) -> None:
    deny_rm.session.from_client(call(1, "ls"))
    deny_rm.session.from_client(call("a", "cat"))
    answers = [json.loads(a) for a in deny_rm.session.close("MCP server exited with code 3")]
    assert sorted(str(a["id"]) for a in answers) == ["1", "a"]
    assert all(a["error"]["message"] == "MCP server exited with code 3" for a in answers)
    assert len(deny_rm.spans("mcp.session")) == 1


def test_filter_tools_hides_a_tool_the_policy_always_denies() -> None:
    hooks = [
        {
            "id": "no-rm",
            "type": "beforeToolCall",
            "matcher": "srv/rm",
            "handler": lambda e: Block("no"),
        }
    ]
    tools = b'{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"rm"},{"name":"ls"}]}}'
    for filtered, expected in ((True, ["ls"]), (False, ["rm", "ls"])):
        h = Harness(hooks, filter_tools=filtered)
        h.session.from_client(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
        relay = settle(h.session.from_server(tools))
        listed = json.loads(relay.to_client[0])["result"]["tools"]
        assert [t["name"] for t in listed] == expected
        h.engine.shutdown(2)


def test_header_templates_read_only_allowed_variables() -> None:
    headers = UpstreamHeaders.parse(["X-Key: k-${KEY}"], allowed_env_vars=["KEY"])
    assert headers.resolve({"KEY": "1"}) == {"X-Key": "k-1"}
    with pytest.raises(ValueError, match="not an allowed env var"):
        UpstreamHeaders.parse(["X-Key: ${HOME}"], allowed_env_vars=["KEY"])
    with pytest.raises(ValueError, match="cannot be set"):
        UpstreamHeaders.parse(["Mcp-Session-Id: x"])
    with pytest.raises(LookupError, match="KEY is not set"):
        headers.resolve({})


def test_sse_events_split_across_chunks_keep_their_bytes() -> None:
    stream = [b"event: message\nid: 1\nda", b'ta: {"a":1}\n', b"\n: ping\n\ndata: {}\n\n"]

    async def chunks() -> Any:
        for chunk in stream:
            yield chunk

    async def collect() -> list[Any]:
        return [e async for e in events(chunks())]

    got = asyncio.run(collect())
    assert b"".join(e.raw for e in got) == b"".join(stream)
    assert [e.data for e in got] == [b'{"a":1}', None, b"{}"]
    assert with_data(got[0], b'{"b":2}') == b'event: message\nid: 1\ndata: {"b":2}\n\n'


@pytest.mark.parametrize(
    ("handshake", "result"),
    [
        ("initialize", {"protocolVersion": "2025-11-25", "serverInfo": {"name": "files"}}),
        # protocol 2026-07-28 (Claude Code 2.1.3xx): discovery, the name in the result's _meta
        (
            "server/discover",
            {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "files"}},
            },
        ),
    ],
)
def test_the_server_name_of_either_handshake_makes_the_guard_match(
    handshake: str, result: dict[str, Any]
) -> None:
    guard = {"id": "no-rm", "type": "beforeToolCall", "matcher": "files/rm",
             "handler": lambda e: Block("rm is off")}  # fmt: skip
    h = Harness([guard])
    h.gateway.name = None  # learned from the server, as without --name
    session = h.session  # it listed: a session that did not would have the gateway list
    opening = {"jsonrpc": "2.0", "id": 1, "method": handshake, "params": {}}
    session.from_client(json.dumps(opening).encode())
    session.from_server(json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode())
    relay = settle(session.from_client(call(2, "rm", path="/")))
    assert relay.to_server == []  # denied: never reaches the server
    (answer,) = relay.to_client
    assert json.loads(answer)["result"]["isError"] is True
    h.engine.shutdown(2)


def test_the_sessions_own_lists_are_kept_within_one_bound_together(deny_rm: Harness) -> None:
    """A client opening sessions that each list 10,000 tools: the sessions' tables keep
    MAX_SESSIONS_LISTED tools together (a session past it keeps none and lists again when it
    calls), given back when a session ends or its list changes."""
    many = 10_000
    tools = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(many)]
    answer = json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"tools": tools}}).encode()
    sessions = []
    for n in range(MAX_SESSIONS_LISTED // many + 1):
        session = deny_rm.gateway.session(f"many-{n}")
        session.from_client(b'{"jsonrpc":"2.0","id":0,"method":"tools/list"}')
        session.from_server(answer)
        sessions.append(session)
    assert deny_rm.gateway.session_listed == MAX_SESSIONS_LISTED
    assert [len(s.tools or ()) for s in sessions[-2:]] == [many - 3, 0]  # s1 keeps 3
    assert sessions[-1].listing("t0") is None
    assert sessions[0].listing("t0") is not None
    sessions[0].from_server(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}')
    assert sessions[0].tools == {}
    for session in sessions:
        session.close()
    assert deny_rm.gateway.session_listed == 3
