"""OpenAI Agents SDK: a ``ComputerTool``'s actions go through the tool hooks (the real SDK and
its ``OpenAIResponsesModel`` talking to a scripted Responses API on 127.0.0.1 that answers with
``computer_call`` items, a real ``Computer`` recording what it was asked)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    AsyncComputer,
    Computer,
    ComputerProvider,
    ComputerTool,
    set_trace_processors,
)
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI
from opentelemetry.trace import StatusCode

from otelhooks import Block, HookEvent, ToolDenied
from otelhooks.integrations.openai_agents import HookedRunner
from otelhooks.testing import TestPipeline
from tests.conftest import hook

_PNG = "iVBORw0KGgo="


@pytest.fixture(autouse=True)
def _no_sdk_trace_export() -> None:
    # The SDK's default trace processor would send traces to OpenAI when a key is set.
    set_trace_processors([])


class _Api:
    """The Responses API, scripted: answers request ``n`` with ``turns[n]`` (its output items),
    then a closing text; keeps every request body."""

    def __init__(self, turns: list[list[dict[str, Any]]]) -> None:
        self.turns = turns
        self.requests: list[dict[str, Any]] = []

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(body)
        n = len(self.requests)
        output = self.turns[n - 1] if n <= len(self.turns) else [_message("done")]
        return {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "model": "computer-use-preview",
            "output": output,
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 20,
                "output_tokens": 5,
                "total_tokens": 25,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _computer_call(call_id: str, *actions: dict[str, Any], checks: Any = ()) -> dict[str, Any]:
    return {
        "type": "computer_call",
        "id": f"cu_{call_id}",
        "call_id": call_id,
        "actions": list(actions),
        "pending_safety_checks": list(checks),
        "status": "completed",
    }


def _sse(answer: dict[str, Any]) -> bytes:
    """``answer`` as the Responses API streams it: created, each item done, completed."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**answer, "status": "in_progress", "output": []}}
    ]
    for n, item in enumerate(answer["output"]):
        events.append({"type": "response.output_item.done", "output_index": n, "item": item})
    events.append({"type": "response.completed", "response": answer})
    lines = [
        f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': n})}\n\n"
        for n, e in enumerate(events)
    ]
    return "".join(lines).encode()


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(api: _Api) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                answer = api.answer(body)
                data, kind = json.dumps(answer).encode(), "application/json"
                if body.get("stream"):
                    data, kind = _sse(answer), "text/event-stream"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


class Desktop(Computer):
    """A real (sync) computer: records each action and when it happened."""

    environment = "browser"  # the preview tool's payload names them
    dimensions = (1024, 768)

    def __init__(self, fail_on: str | None = None) -> None:
        self.done: list[tuple[str, Any]] = []
        self.at: list[int] = []
        self.fail_on = fail_on

    def _did(self, action: str, *args: Any) -> None:
        if action == self.fail_on:
            raise RuntimeError(f"{action} failed: the window is gone")
        self.done.append((action, args))
        self.at.append(time.time_ns())

    def screenshot(self) -> str:
        self._did("screenshot")
        return _PNG

    def click(self, x: int, y: int, button: Any) -> None:
        self._did("click", x, y, button)

    def double_click(self, x: int, y: int) -> None:
        self._did("double_click", x, y)

    def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int) -> None:
        self._did("scroll", x, y, scroll_x, scroll_y)

    def type(self, text: str) -> None:
        self._did("type", text)

    def wait(self) -> None:
        self._did("wait")

    def move(self, x: int, y: int) -> None:
        self._did("move", x, y)

    def keypress(self, keys: list[str]) -> None:
        self._did("keypress", keys)

    def drag(self, path: list[tuple[int, int]]) -> None:
        self._did("drag", path)


class Browser(AsyncComputer):
    """A real async computer that takes held modifier keys."""

    environment = "browser"  # the preview tool's payload names them
    dimensions = (1024, 768)

    def __init__(self) -> None:
        self.done: list[tuple[str, Any]] = []

    async def screenshot(self) -> str:
        return _PNG

    async def click(self, x: int, y: int, button: Any, *, keys: list[str] | None = None) -> None:
        self.done.append(("click", (x, y, button, keys)))

    async def double_click(self, x: int, y: int) -> None: ...
    async def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int) -> None: ...
    async def type(self, text: str) -> None:
        self.done.append(("type", (text,)))

    async def wait(self) -> None: ...
    async def move(self, x: int, y: int) -> None: ...
    async def keypress(self, keys: list[str]) -> None: ...
    async def drag(self, path: list[tuple[int, int]]) -> None: ...


def _agent(url: str, computer: Any, **tool: Any) -> Agent[Any]:
    client = AsyncOpenAI(base_url=url, api_key="test-key", max_retries=0)
    model = OpenAIResponsesModel(model="computer-use-preview", openai_client=client)
    return Agent(name="operator", model=model, tools=[ComputerTool(computer=computer, **tool)])


def _no_rm(event: HookEvent) -> Block | None:
    return Block("no rm -rf") if "rm -rf" in str(event.args.get("text", "")) else None  # type: ignore[attr-defined]


_TURN = [
    _computer_call(
        "c1",
        {"type": "click", "x": 10, "y": 20, "button": "left"},
        {"type": "type", "text": "rm -rf ~"},
        {"type": "keypress", "keys": ["enter"]},
    )
]


async def _streamed(pipe: TestPipeline, agent: Agent[Any], input: str) -> Any:
    result = await HookedRunner(pipe.tracer).run_streamed(agent, input)
    async for _ in result.stream_events():
        pass
    return result


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_denied_computer_action_never_runs(
    pipe: TestPipeline, serve: Any, streamed: bool
) -> None:
    """Before, the guard's deny was only recorded (``UnguardedToolCall``): the SDK typed
    ``rm -rf ~`` and pressed enter on the user's computer."""
    seen: list[dict[str, Any]] = []
    pipe.register(
        hook("seen", "before_tool_call", lambda e: seen.append(dict(e.args))),
        hook("no-rm", "before_tool_call", _no_rm, matcher="computer_use_preview"),
    )
    desktop = Desktop()
    agent = _agent(serve(_Api([_TURN])), desktop)

    runner = HookedRunner(pipe.tracer)
    go = _streamed(pipe, agent, "clean") if streamed else runner.run(agent, "clean")
    with pytest.raises(ToolDenied, match="no rm -rf"):
        asyncio.run(go)
    pipe.flush()

    assert desktop.done == [("click", (10, 20, "left"))]  # nothing typed, nothing pressed
    spans = pipe.spans("execute_tool computer_use_preview")
    assert seen == [
        {"action": "click", "x": 10, "y": 20, "button": "left"},
        {"action": "type", "text": "rm -rf ~"},
    ]
    assert spans[0].status.status_code is not StatusCode.ERROR
    assert spans[1].attributes["otelhooks.hook.decision"] == "deny"  # type: ignore[index]


def test_a_computer_action_s_span_ends_when_the_action_did(pipe: TestPipeline, serve: Any) -> None:
    """Before, the span was written from the model's request before the SDK ran anything: it
    said ``success`` for a click that then failed, and ended before any action happened."""
    seen: list[str] = []
    pipe.register(hook("seen", "before_tool_call", lambda e: seen.append(e.args["action"])))
    desktop = Desktop(fail_on="type")
    agent = _agent(serve(_Api([_TURN])), desktop)

    with pytest.raises(RuntimeError, match="the window is gone"):
        asyncio.run(HookedRunner(pipe.tracer).run(agent, "go"))
    pipe.flush()

    spans = pipe.spans("execute_tool computer_use_preview")
    assert seen == ["click", "type"]
    click, typing = spans
    assert click.end_time is not None
    assert click.end_time >= desktop.at[0]
    assert typing.status.status_code is StatusCode.ERROR


def test_a_rewrite_and_a_mock_reach_the_computer(pipe: TestPipeline, serve: Any) -> None:
    """A guard's rewrite of a computer action is what the computer does; a mocked screenshot is
    what the model is sent; held modifier keys reach a computer that takes them."""

    def safer(event: Any) -> Any:
        if event.args.get("action") == "type":
            return event.model_copy(update={"args": {**event.args, "text": "ls ~"}})
        if event.args.get("action") == "screenshot":
            event.mock("bW9jaw==")
        return None

    pipe.register(hook("safer", "before_tool_call", safer))
    browser = Browser()
    turn = [
        _computer_call(
            "c1",
            {"type": "click", "x": 1, "y": 2, "button": "left", "keys": ["shift"]},
            {"type": "type", "text": "rm -rf ~"},
        )
    ]
    api = _Api([turn])
    agent = _agent(serve(api), browser)
    asyncio.run(HookedRunner(pipe.tracer).run(agent, "go"))

    assert browser.done == [("click", (1, 2, "left", ["shift"])), ("type", ("ls ~",))]
    sent = [i for i in api.requests[1]["input"] if i.get("type") == "computer_call_output"]
    assert sent[0]["output"]["image_url"] == "data:image/png;base64,bW9jaw=="


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_guard_sees_the_safety_checks_the_api_flagged_a_call_with(
    pipe: TestPipeline, serve: Any, streamed: bool
) -> None:
    """Before, a call the model's API flagged (``pending_safety_checks``: it saw instructions
    planted in the page) ran with no hook told: with no ``on_safety_check`` the SDK only logs a
    warning, and a guard refusing flagged actions never saw the flag."""

    def flagged(event: Any) -> Block | None:
        checks = event.args.get("pending_safety_checks") or []
        codes = [c["code"] for c in checks]
        return Block(f"flagged: {codes}") if codes else None

    pipe.register(hook("flagged", "before_tool_call", flagged))
    check = {"id": "sc1", "code": "malicious_instructions", "message": "the page asks for this"}
    turns = [
        [_computer_call("c1", {"type": "click", "x": 5, "y": 5, "button": "left"})],
        [_computer_call("c2", {"type": "type", "text": "my password"}, checks=[check])],
    ]
    desktop = Desktop()
    agent = _agent(serve(_Api(turns)), desktop)

    runner = HookedRunner(pipe.tracer)
    go = _streamed(pipe, agent, "log in") if streamed else runner.run(agent, "log in")
    with pytest.raises(ToolDenied, match="malicious_instructions"):
        asyncio.run(go)

    # the unflagged call ran (its click and screenshot), the flagged one never did
    assert desktop.done == [("click", (5, 5, "left")), ("screenshot", ())]


def test_a_computer_a_provider_makes_is_guarded_and_disposed(
    pipe: TestPipeline, serve: Any
) -> None:
    """Before, a computer made per run (``ComputerProvider``) typed what a guard denied; now its
    actions are guarded and its ``dispose`` is handed the computer it made."""
    made: list[Desktop] = []
    disposed: list[Any] = []

    def create(*, run_context: Any) -> Desktop:
        made.append(Desktop())
        return made[-1]

    def dispose(*, run_context: Any, computer: Any) -> None:
        disposed.append(computer)

    pipe.register(hook("no-rm", "before_tool_call", _no_rm))
    provider = ComputerProvider(create=create, dispose=dispose)
    agent = _agent(serve(_Api([_TURN])), provider)

    with pytest.raises(ToolDenied):
        asyncio.run(HookedRunner(pipe.tracer).run(agent, "go"))

    assert [d.done for d in made] == [[("click", (10, 20, "left"))]]
    assert disposed == made


def test_an_unhooked_computer_s_calls_are_still_recorded_as_not_enforced(
    pipe: TestPipeline, serve: Any
) -> None:
    """With ``hook_tools=False`` nothing wraps the computer: each ``computer_call`` is recorded
    from the model's response and a deny of it fails its span (``UnguardedToolCall``)."""
    pipe.register(
        hook("no", "before_tool_call", lambda e: Block("no"), matcher="computer_use_preview")
    )
    desktop = Desktop()
    agent = _agent(
        serve(_Api([[_computer_call("c1", {"type": "type", "text": "rm -rf ~"})]])), desktop
    )

    asyncio.run(HookedRunner(pipe.tracer, hook_tools=False).run(agent, "go"))
    pipe.flush()

    assert desktop.done == [("type", ("rm -rf ~",)), ("screenshot", ())]
    (span,) = pipe.spans("execute_tool computer_use_preview")
    assert span.attributes["error.type"] == (  # type: ignore[index]
        "otelhooks.integrations.openai_agents.UnguardedToolCall"
    )
