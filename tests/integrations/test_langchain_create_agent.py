"""LangChain v1 ``create_agent`` with ``OtelHooksMiddleware``: a real agent (its graph, its
``ToolNode``, its middleware chain, ``HumanInTheLoopMiddleware`` with a checkpointer) and a
scripted chat model. Before the middleware, a tool given to ``create_agent`` as it is ran
whatever the guards decided (a warning said the deny was not enforced)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt
from pydantic import Field
from structlog.testing import capture_logs

from otelhooks import Block, HookEvent, ToolDenied
from otelhooks.integrations.langchain import (
    OtelHooksCallbackHandler,
    OtelHooksMiddleware,
    ToolNotHookedError,
)
from otelhooks.testing import TestPipeline
from tests.conftest import hook

SECRET = "sk-live-4242"


class Scripted(GenericFakeChatModel):
    """A chat model answering from a script; it records what it was shown each turn."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Scripted:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def ai(*calls: tuple[str, dict[str, Any], str], text: str = "") -> AIMessage:
    return AIMessage(
        content=text,
        tool_calls=[{"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in calls],
    )


@dataclass
class World:
    ran: list[tuple[str, str]] = field(default_factory=list)

    def tools(self) -> list[BaseTool]:
        @tool
        def delete_file(path: str) -> str:
            """Delete a file."""
            self.ran.append(("delete_file", path))
            return f"deleted {path}"

        @tool
        def read_file(path: str) -> str:
            """Read a file."""
            self.ran.append(("read_file", path))
            return f"{path}: token {SECRET}"

        @tool
        def search(query: str) -> str:
            """Search the web."""
            self.ran.append(("search", query))
            return "live results"

        @tool
        def deploy(target: str) -> str:
            """Deploy."""
            self.ran.append(("deploy", target))
            raise ValueError(f"deploy to {target} failed with key {SECRET}")

        return [delete_file, read_file, search, deploy]


def _redact(event: HookEvent) -> None:
    result = event.result  # type: ignore[attr-defined]
    result["content"] = result["content"].replace(SECRET, "[REDACTED]")


def _sandbox(event: Any) -> None:
    if event.apiName == "read_file":
        event.args["path"] = "/sandbox/" + event.args["path"]


GUARDS = (
    hook("no-delete", "before_tool_call", lambda e: Block("no deleting"), matcher="delete_file"),
    hook("offline", "before_tool_call", lambda e: e.mock("cached results"), matcher="search"),
    hook("sandbox", "before_tool_call", _sandbox),
    hook("redact", "tool_result_persist", _redact),
)


def _invoke(agent: Any, given: Any, config: Any, mode: str) -> Any:
    if mode == "invoke":
        return agent.invoke(given, config)
    return asyncio.run(agent.ainvoke(given, config))


def _by_id(result: Any) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in result["messages"] if isinstance(m, ToolMessage)}


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_every_tool_call_of_create_agent_obeys_the_hooks(pipe: TestPipeline, mode: str) -> None:
    # before: the tools as given to create_agent ran whatever the guards decided
    pipe.register(*GUARDS)
    world = World()
    calls = (
        ("delete_file", {"path": "a.txt"}, "c1"),
        ("search", {"query": "otel"}, "c2"),
        ("read_file", {"path": "notes.txt"}, "c3"),
    )
    model = Scripted(messages=iter([ai(*calls), ai(text="done")]))
    handler = OtelHooksCallbackHandler(pipe.tracer, agent_name="helper")
    agent = create_agent(model, tools=world.tools(), middleware=[OtelHooksMiddleware(handler)])
    result = _invoke(agent, {"messages": [("user", "go")]}, {"callbacks": [handler]}, mode)
    pipe.flush()

    assert world.ran == [("read_file", "/sandbox/notes.txt")]  # denied and mocked never ran
    answers = _by_id(result)
    assert (answers["c1"].status, answers["c1"].content) == ("error", "no deleting")
    assert answers["c1"].response_metadata["otelhooks"]["decidedBy"] == "no-delete"
    assert answers["c2"].content == "cached results"
    assert answers["c3"].content == "/sandbox/notes.txt: token [REDACTED]"
    assert all(m in model.seen[-1] for m in answers.values())  # the model's next turn read them
    # the handler, in the config and in the tool's callbacks, opened each call once
    names = sorted(s.name for s in pipe.spans() if s.name.startswith("execute_tool"))
    assert names == ["execute_tool delete_file", "execute_tool read_file", "execute_tool search"]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_create_agent_tool_error_reaches_the_caller_as_the_hooks_kept_it(
    pipe: TestPipeline, mode: str
) -> None:
    # before: the exception, its secret in its text, left the agent as the tool raised it
    pipe.register(*GUARDS)
    world = World()
    model = Scripted(messages=iter([ai(("deploy", {"target": "prod"}, "c1")), ai(text="x")]))
    handler = OtelHooksCallbackHandler(pipe.tracer)
    agent = create_agent(model, tools=world.tools(), middleware=[OtelHooksMiddleware(handler)])
    with pytest.raises(ValueError, match="deploy to prod failed") as raised:
        _invoke(agent, {"messages": [("user", "go")]}, {"callbacks": [handler]}, mode)
    assert world.ran == [("deploy", "prod")]
    assert SECRET not in str(raised.value)
    assert "[REDACTED]" in str(raised.value)


class Substitute(AgentMiddleware):
    """A user's middleware that swaps in a tool of its own (the dynamic tools pattern)."""

    def __init__(self, swap_in: BaseTool) -> None:
        super().__init__()
        self.swap_in = swap_in

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request.override(tool=self.swap_in))

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await handler(request.override(tool=self.swap_in))


class RunsItself(AgentMiddleware):
    """A user's middleware that runs a tool itself, never calling the handler."""

    def __init__(self, own: BaseTool) -> None:
        super().__init__()
        self.own = own

    def _answer(self, request: Any, text: Any) -> ToolMessage:
        return ToolMessage(str(text), tool_call_id=request.tool_call["id"])

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return self._answer(request, self.own.invoke(request.tool_call["args"]))

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return self._answer(request, await self.own.ainvoke(request.tool_call["args"]))


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("kind", ["substitute", "runs_itself"])
def test_a_middleware_after_ours_cannot_run_a_tool_around_the_guards(
    pipe: TestPipeline, mode: str, kind: str
) -> None:
    # before: the user's middleware ran delete_file unwrapped; the deny was a warning only
    pipe.register(*GUARDS)
    world = World()
    delete_file = world.tools()[0]
    user_mw = Substitute(delete_file) if kind == "substitute" else RunsItself(delete_file)
    model = Scripted(messages=iter([ai(("delete_file", {"path": "a.txt"}, "c1")), ai(text="x")]))
    handler = OtelHooksCallbackHandler(pipe.tracer)
    mw = [OtelHooksMiddleware(handler), user_mw]
    agent = create_agent(model, tools=world.tools(), middleware=mw)
    with pytest.raises(ToolNotHookedError, match="delete_file"):
        _invoke(agent, {"messages": [("user", "go")]}, {"callbacks": [handler]}, mode)
    assert world.ran == []


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_human_in_the_loop_approvals_and_edits_are_judged_when_the_agent_resumes(
    pipe: TestPipeline, mode: str
) -> None:
    # the edited call is judged as edited (denied here); the approved one runs on resume
    def guard(event: Any) -> Block | None:
        return Block("not that one") if event.args.get("path") == "keep.txt" else None

    pipe.register(hook("keep", "before_tool_call", guard, matcher="delete_file"))
    world = World()
    calls = (("delete_file", {"path": "a.txt"}, "c1"), ("delete_file", {"path": "b.txt"}, "c2"))
    model = Scripted(messages=iter([ai(*calls), ai(text="done")]))
    handler = OtelHooksCallbackHandler(pipe.tracer)
    ask = HumanInTheLoopMiddleware(interrupt_on={"delete_file": True})
    agent = create_agent(
        model,
        tools=world.tools(),
        middleware=[OtelHooksMiddleware(handler), ask],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"callbacks": [handler], "configurable": {"thread_id": f"hitl-{mode}"}}
    asked = _invoke(agent, {"messages": [("user", "tidy")]}, config, mode)
    assert world.ran == []
    assert asked["__interrupt__"]
    edit = {"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "keep.txt"}}}
    decisions = {"decisions": [{"type": "approve"}, edit]}
    done = _invoke(agent, Command(resume=decisions), config, mode)

    assert world.ran == [("delete_file", "a.txt")]
    answers = _by_id(done)
    assert answers["c1"].content == "deleted a.txt"
    assert answers["c2"].status == "error"
    assert "not that one" in str(answers["c2"].content)


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_the_middleware_alone_enforces_the_hooks_and_says_what_it_cannot_see(
    pipe: TestPipeline, mode: str
) -> None:
    # the handler given to the middleware only: each call is still judged and enforced (the
    # handler rides in the wrapped tool's callbacks); that a tool a later middleware runs
    # itself goes unseen is said, once, as an error (before: nothing said it)
    pipe.register(*GUARDS)
    world = World()
    calls = (("delete_file", {"path": "a.txt"}, "c1"), ("read_file", {"path": "n.txt"}, "c2"))
    script = [ai(*calls), ai(text="again"), ai(*calls), ai(text="done")]
    handler = OtelHooksCallbackHandler(pipe.tracer)
    agent = create_agent(
        Scripted(messages=iter(script)),
        tools=world.tools(),
        middleware=[OtelHooksMiddleware(handler)],
    )
    with capture_logs() as logs:
        first = _invoke(agent, {"messages": [("user", "go")]}, {}, mode)
        _invoke(agent, {"messages": [("user", "go")]}, {}, mode)

    assert world.ran == [("read_file", "/sandbox/n.txt")] * 2
    assert _by_id(first)["c1"].content == "no deleting"
    assert _by_id(first)["c2"].content == "/sandbox/n.txt: token [REDACTED]"
    told = [e for e in logs if "not in the run's callbacks" in e["event"]]
    assert len(told) == 1
    assert told[0]["log_level"] == "error"


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_middleware_before_ours_running_a_tool_itself_is_said_or_refused(
    pipe: TestPipeline, mode: str
) -> None:
    # a user's middleware listed BEFORE ours that runs the tool itself (a cache, a retry)
    # never reaches our wrap_tool_call. With the handler given to the middleware only, the
    # denied delete runs unjudged: that is said, as an error, at the agent's model call
    # (before: not a word, since the check lived in the wrap_tool_call never reached). With
    # the handler in the run's config too, the handler refuses the unwrapped tool as it starts
    pipe.register(*GUARDS)
    world = World()
    delete_file = world.tools()[0]
    script = [ai(("delete_file", {"path": "a.txt"}, "c1")), ai(text="done")]
    handler = OtelHooksCallbackHandler(pipe.tracer)
    mw = [RunsItself(delete_file), OtelHooksMiddleware(handler)]
    agent = create_agent(Scripted(messages=iter(script)), tools=[delete_file], middleware=mw)
    with capture_logs() as logs:
        _invoke(agent, {"messages": [("user", "go")]}, {}, mode)
    assert world.ran == [("delete_file", "a.txt")]  # no guard can see it: said, not hidden
    told = [e for e in logs if "not in the run's callbacks" in e["event"]]
    assert [e["log_level"] for e in told] == ["error"]

    world.ran.clear()
    agent = create_agent(Scripted(messages=iter(script)), tools=[delete_file], middleware=mw)
    with pytest.raises(ToolDenied, match="no deleting"):
        _invoke(agent, {"messages": [("user", "go")]}, {"callbacks": [handler]}, mode)
    assert world.ran == []


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_tool_a_middleware_before_ours_supplies_is_wrapped_and_judged(
    pipe: TestPipeline, mode: str
) -> None:
    # the dynamic tools pattern, the supplying middleware listed first: its tool is hooked
    pipe.register(*GUARDS)
    world = World()
    delete_file = world.tools()[0]
    model = Scripted(messages=iter([ai(("delete_file", {"path": "a.txt"}, "c1")), ai(text="x")]))
    handler = OtelHooksCallbackHandler(pipe.tracer)
    mw = [Substitute(delete_file), OtelHooksMiddleware(handler)]
    agent = create_agent(model, tools=[], middleware=mw)
    result = _invoke(agent, {"messages": [("user", "go")]}, {"callbacks": [handler]}, mode)
    assert world.ran == []
    assert (_by_id(result)["c1"].status, _by_id(result)["c1"].content) == ("error", "no deleting")


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_parallel_calls_that_ask_a_person_each_take_their_own_answer_on_resume(
    pipe: TestPipeline, mode: str
) -> None:
    # create_agent sends each call to a task of its own: the read the guards refuse on
    # resume takes no answer, and the delete takes the "no" given to it, not the read's "yes"
    got: dict[str, Any] = {}

    @tool
    def act(what: str) -> str:
        """Act once a person says yes."""
        got[what] = interrupt({"act": what})
        return f"{what}: {got[what]}"

    resumed: list[bool] = []

    def guard(event: Any) -> Block | None:
        refused = resumed and event.args["what"] == "read a.txt"
        return Block("reads are off now") if refused else None

    pipe.register(hook("reads", "before_tool_call", guard))
    calls = (("act", {"what": "read a.txt"}, "c1"), ("act", {"what": "delete prod"}, "c2"))
    model = Scripted(messages=iter([ai(*calls), ai(text="done")]))
    handler = OtelHooksCallbackHandler(pipe.tracer)
    agent = create_agent(
        model, tools=[act], middleware=[OtelHooksMiddleware(handler)], checkpointer=InMemorySaver()
    )
    config: Any = {"callbacks": [handler], "configurable": {"thread_id": f"par-{mode}"}}
    asked = _invoke(agent, {"messages": [("user", "go")]}, config, mode)
    questions = {i.value["act"]: i.id for i in asked["__interrupt__"]}
    assert sorted(questions) == ["delete prod", "read a.txt"]
    resumed.append(True)
    answers = {questions["read a.txt"]: "yes", questions["delete prod"]: "no"}
    done = _invoke(agent, Command(resume=answers), config, mode)

    assert got == {"delete prod": "no"}
    assert _by_id(done)["c1"].content == "reads are off now"
    assert _by_id(done)["c2"].content == "delete prod: no"


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_the_graph_s_runtime_is_no_argument_the_guards_or_listeners_see(
    pipe: TestPipeline, mode: str, tmp_path: Any
) -> None:
    # LangChain's own ShellToolMiddleware declares its shell tool's ToolRuntime in the
    # argument schema as ``runtime: Any`` (its function says ToolRuntime, which LangChain
    # reads to hide it). Wrapped, the tool's ToolRuntime (the agent's whole state, the run's
    # config) was an argument: every guard, the span and each callback handler got it
    from langchain.agents.middleware import HostExecutionPolicy, ShellToolMiddleware
    from langchain_core.callbacks import BaseCallbackHandler

    class Listener(BaseCallbackHandler):
        def __init__(self) -> None:
            self.inputs: list[Any] = []

        def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
            self.inputs.append(dict(kwargs.get("inputs") or {}))

    seen: list[dict[str, Any]] = []

    def no_pwn(event: Any) -> Block | None:
        seen.append(dict(event.args))
        return Block("no") if "pwned" in str(event.args.get("command")) else None

    pipe.register(hook("no-pwn", "before_tool_call", no_pwn))
    handler, listener = OtelHooksCallbackHandler(pipe.tracer), Listener()
    shell = ShellToolMiddleware(
        workspace_root=str(tmp_path / "ws"), execution_policy=HostExecutionPolicy()
    )
    mark = tmp_path / "pwned"
    calls = (("shell", {"command": f"touch {mark}"}, "c1"), ("shell", {"command": "echo hi"}, "c2"))
    model = Scripted(messages=iter([ai(*calls), ai(text="done")]))
    agent = create_agent(model, tools=[], middleware=[OtelHooksMiddleware(handler), shell])
    result = _invoke(
        agent, {"messages": [("user", "go")]}, {"callbacks": [handler, listener]}, mode
    )

    assert not mark.exists()
    answers = _by_id(result)
    assert (answers["c1"].status, answers["c2"].content) == ("error", "hi\n")
    assert sorted(seen, key=str) == [{"command": "echo hi"}, {"command": f"touch {mark}"}]
    assert all("runtime" not in given for given in listener.inputs)
