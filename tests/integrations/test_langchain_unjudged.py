"""A ``hook_tool`` call runs only as its guards judged it: a call its otelhooks handler could not
judge is refused, and the function gets the values the guards saw."""

from __future__ import annotations

import asyncio
import enum
import threading
import uuid
from typing import Annotated, Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolArg, StructuredTool, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel, field_validator
from structlog.testing import capture_logs

import otelhooks
from otelhooks import Block, ToolCallEvent
from otelhooks.integrations.langchain import OtelHooksCallbackHandler, hook_tool


class Unprintable:
    """A value whose text cannot be taken: the handler fails on it as a tool starts."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


def _deny_all(event: ToolCallEvent) -> Block:
    return Block(f"denied: {sorted(map(str, event.args))}")


def _setup() -> tuple[otelhooks.Otelhooks, OtelHooksCallbackHandler, list[Any], BaseTool]:
    hooks = [{"id": "deny", "type": "before_tool_call", "matcher": "*", "handler": _deny_all}]
    oh = otelhooks.configure(otlp=False, set_global=False, hooks=hooks)
    ran: list[Any] = []

    @tool
    def wipe(targets: dict[Any, str]) -> str:
        """Wipe the targets."""
        ran.append(targets)
        return "wiped"

    return oh, OtelHooksCallbackHandler(oh.tracer), ran, hook_tool(wipe)


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_arguments_json_cannot_key_are_still_judged(mode: str) -> None:
    # a tuple key (JSON has no spelling for it) made the call's span fail to open: no guard
    # ran and the wrapper ran the tool past a deny-everything guard
    oh, handler, ran, wipe = _setup()
    args = {"targets": {(1, 2): "/"}}
    config: Any = {"callbacks": [handler]}
    if mode == "invoke":
        result = wipe.invoke(args, config=config)
    else:
        result = asyncio.run(wipe.ainvoke(args, config=config))
    assert result == "denied: ['targets']"
    assert ran == []
    assert oh.shutdown().ok


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_call_the_handler_failed_to_open_is_refused(mode: str) -> None:
    # before: the handler's failure was logged and swallowed, the wrapper found no record,
    # warned that no handler was given (untrue) and ran the tool
    oh, handler, ran, wipe = _setup()
    config: Any = {"callbacks": [handler], "metadata": {"thread_id": Unprintable()}}
    with capture_logs() as logs:
        if mode == "invoke":
            result = wipe.invoke({"targets": {"a": "/"}}, config=config)
        else:
            result = asyncio.run(wipe.ainvoke({"targets": {"a": "/"}}, config=config))
    assert ran == []
    assert "refused rather than run without its guards" in result
    events = [entry["event"] for entry in logs]
    assert "a hooked tool's call was not judged: refused" in events
    assert not any("ran without the otelhooks handler" in e for e in events)
    assert oh.shutdown().ok


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_tool_node_tells_the_model_the_unjudged_call_was_refused(mode: str) -> None:
    oh, handler, ran, wipe = _setup()
    graph = StateGraph(MessagesState).add_node("tools", ToolNode([wipe]))
    compiled = graph.add_edge(START, "tools").compile()
    call = {"name": "wipe", "args": {"targets": {"a": "/"}}, "id": "c1", "type": "tool_call"}
    state: Any = {"messages": [AIMessage("", tool_calls=[call])]}
    config: Any = {"callbacks": [handler], "metadata": {"thread_id": Unprintable()}}
    if mode == "invoke":
        out = compiled.invoke(state, config=config)
    else:
        out = asyncio.run(compiled.ainvoke(state, config=config))
    message = out["messages"][-1]
    assert isinstance(message, ToolMessage)
    assert ran == []
    assert message.status == "error"
    assert message.tool_call_id == "c1"
    assert message.response_metadata["otelhooks"]["decidedBy"] == "otelhooks"
    assert oh.shutdown().ok


class ReadArgs(BaseModel):
    path: str
    mode: str = "text"

    @field_validator("path")
    @classmethod
    def _strip_scheme(cls, value: str) -> str:
        return value.removeprefix("file://")

    @field_validator("mode")
    @classmethod
    def _tag_mode(cls, value: str) -> str:
        return f"{value}!"


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "tool_node", "no_handler"])
def test_the_function_gets_the_values_the_guard_judged(mode: str) -> None:
    # before: the schema's validators ran again on the validated values, so the guard judged
    # "file:///etc/passwd" (one prefix stripped) and the function read "/etc/passwd" (two)
    judged: list[dict[str, Any]] = []

    def no_passwd(event: ToolCallEvent) -> Block | None:
        judged.append(dict(event.args))
        return Block("no passwd") if event.args.get("path") == "/etc/passwd" else None

    hooks = [{"id": "passwd", "type": "before_tool_call", "matcher": "*", "handler": no_passwd}]
    oh = otelhooks.configure(otlp=False, set_global=False, hooks=hooks)
    ran: list[tuple[str, str]] = []

    def read(path: str, mode: str = "text") -> str:
        ran.append((path, mode))
        return "contents"

    inner = StructuredTool.from_function(read, name="read", description="d", args_schema=ReadArgs)
    reader = hook_tool(inner)
    args = {"path": "file://file:///etc/passwd"}
    config: Any = {
        "callbacks": [] if mode == "no_handler" else [OtelHooksCallbackHandler(oh.tracer)]
    }
    if mode == "invoke" or mode == "no_handler":
        reader.invoke(args, config=config)
    elif mode == "ainvoke":
        asyncio.run(reader.ainvoke(args, config=config))
    else:
        graph = StateGraph(MessagesState).add_node("tools", ToolNode([reader]))
        call = {"name": "read", "args": args, "id": "c1", "type": "tool_call"}
        state: Any = {"messages": [AIMessage("", tool_calls=[call])]}
        graph.add_edge(START, "tools").compile().invoke(state, config=config)
    # what the function gets unwrapped: each validator once, the default as it is
    inner.invoke(args)
    assert ran[0] == ran[-1] == ("file:///etc/passwd", "text")
    assert len(ran) == 2
    if mode != "no_handler":
        assert judged[0] == {"path": "file:///etc/passwd", "mode": "text"}
    assert oh.shutdown().ok


def test_two_calls_under_one_run_id_are_both_refused() -> None:
    # a caller's fixed config["run_id"] on two calls at once: the later start replaced the
    # earlier call's record, so the denied call found the allowed one's decision and ran
    passwd_waiting, go, b_over, a_over = (threading.Event() for _ in range(4))

    def no_passwd(event: ToolCallEvent) -> Block | None:
        return Block("no passwd") if event.args["path"] == "/etc/passwd" else None

    def slow_audit(event: ToolCallEvent) -> None:
        if event.args["path"] == "/etc/passwd":
            passwd_waiting.set()
            go.wait(30)

    guard_hooks = [
        {"id": "passwd", "type": "before_tool_call", "matcher": "*", "handler": no_passwd}
    ]
    audit_hooks = [
        {"id": "audit", "type": "before_tool_call", "matcher": "*", "handler": slow_audit}
    ]
    guard = otelhooks.configure(otlp=False, set_global=False, hooks=guard_hooks)
    audit = otelhooks.configure(otlp=False, set_global=False, hooks=audit_hooks)
    handlers = [OtelHooksCallbackHandler(guard.tracer), OtelHooksCallbackHandler(audit.tracer)]
    ran: list[str] = []

    @tool
    def read(path: str) -> str:
        """Read a file."""
        ran.append(path)
        if path == "/tmp/ok":
            b_over.set()
            a_over.wait(30)  # still open when the denied call looks its decision up
        return "contents"

    reader = hook_tool(read)
    config: Any = {"callbacks": handlers, "run_id": uuid.UUID(int=7)}
    results: dict[str, Any] = {}

    def call(path: str, done: threading.Event) -> None:
        try:
            results[path] = reader.invoke({"path": path}, config=config)
        finally:
            done.set()

    first = threading.Thread(target=call, args=("/etc/passwd", a_over))
    second = threading.Thread(target=call, args=("/tmp/ok", b_over))
    with capture_logs() as logs:
        first.start()
        assert passwd_waiting.wait(30)
        second.start()
        assert b_over.wait(30)
        go.set()
        first.join(30)
        second.join(30)
    assert "/etc/passwd" not in ran
    assert "refused rather than run without its guards" in results["/etc/passwd"]
    assert "refused rather than run without its guards" in results["/tmp/ok"]
    assert "two tool calls share one run id: refused" in [entry["event"] for entry in logs]
    assert guard.shutdown().ok
    assert audit.shutdown().ok


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_guards_judge_and_rewrite_what_the_caller_injected(mode: str) -> None:
    # before: LangChain hides InjectedToolArg arguments from callbacks, so a guard denying
    # guests never saw `user` and the guest's delete ran
    def no_guests(event: ToolCallEvent) -> Block | ToolCallEvent | None:
        if event.args.get("user") == "guest":
            return Block("guests may not delete")
        if event.args.get("user") == "root":
            event.args["user"] = "operator"  # a rewrite reaches the function too
            return event
        return None

    hooks = [{"id": "guests", "type": "before_tool_call", "matcher": "*", "handler": no_guests}]
    oh = otelhooks.configure(otlp=False, set_global=False, hooks=hooks)
    handler = OtelHooksCallbackHandler(oh.tracer)
    ran: list[tuple[str, str]] = []

    @tool
    def delete(path: str, user: Annotated[str, InjectedToolArg]) -> str:
        """Delete a file."""
        ran.append((path, user))
        return "deleted"

    deleter = hook_tool(delete)
    config: Any = {"callbacks": [handler]}
    results = []
    for user in ("guest", "root", "alice"):
        args = {"path": "a.txt", "user": user}
        if mode == "invoke":
            results.append(deleter.invoke(args, config=config))
        else:
            results.append(asyncio.run(deleter.ainvoke(args, config=config)))
    assert results == ["guests may not delete", "deleted", "deleted"]
    assert ran == [("a.txt", "operator"), ("a.txt", "alice")]
    assert oh.shutdown().ok


@pytest.mark.parametrize("mode", ["invoke", "tool_node"])
def test_an_invalid_call_answers_as_the_unwrapped_tool_does(mode: str) -> None:
    # before: the wrapper validated the input without the tool's handle_validation_error, so
    # a call the tool answers with "Tool input validation error" raised instead
    oh = otelhooks.configure(otlp=False, set_global=False)
    config: Any = {"callbacks": [OtelHooksCallbackHandler(oh.tracer)]}
    ran: list[int] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append(a + b)
        return a + b

    add.handle_validation_error = True
    answers = []
    for candidate in (add, hook_tool(add)):
        if mode == "invoke":
            answers.append(candidate.invoke({"a": "x", "b": 1}, config=config))
            continue
        nodes = ToolNode([candidate], handle_tool_errors=False)
        graph = StateGraph(MessagesState).add_node("tools", nodes).add_edge(START, "tools")
        call = {"name": "add", "args": {"a": "x", "b": 1}, "id": "c1", "type": "tool_call"}
        state: Any = {"messages": [AIMessage("", tool_calls=[call])]}
        message = graph.compile().invoke(state, config=config)["messages"][-1]
        answers.append((message.content, message.status))
    assert answers[0] == answers[1]
    assert ran == []
    assert oh.shutdown().ok


class Mode(enum.Enum):
    READ = "read"
    DELETE = "delete"


class Opts(BaseModel):
    force: bool = False
    depth: int = 1


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "tool_node"])
def test_a_guard_reads_enums_and_nested_models_as_the_model_wrote_them(mode: str) -> None:
    # before: the guard got the schema's Python values, Mode.DELETE (!= "delete") and an Opts
    # object (not subscriptable: the guard failed): both deletes ran past it
    def guard(event: ToolCallEvent) -> Block | ToolCallEvent | None:
        if event.args["mode"] == "delete":
            return Block("no delete")
        if event.args["opts"]["force"]:
            return Block("no force")
        event.args["opts"]["depth"] = 0  # a rewrite in place, in the same form, still reaches
        return event

    hooks = [{"id": "g", "type": "before_tool_call", "matcher": "*", "handler": guard}]
    oh = otelhooks.configure(otlp=False, set_global=False, hooks=hooks)
    config: Any = {"callbacks": [OtelHooksCallbackHandler(oh.tracer)]}
    ran: list[tuple[Mode, Opts]] = []

    @tool
    def act(path: str, mode: Mode, opts: Opts) -> str:
        """Act on a path."""
        ran.append((mode, opts))
        return "done"

    acting = hook_tool(act)
    given = [
        {"path": "a", "mode": "delete", "opts": {}},
        {"path": "a", "mode": "read", "opts": {"force": True}},
        {"path": "a", "mode": "read", "opts": {"depth": 5}},
    ]
    if mode == "invoke":
        answers = [acting.invoke(args, config=config) for args in given]
    elif mode == "ainvoke":
        answers = [asyncio.run(acting.ainvoke(args, config=config)) for args in given]
    else:
        calls = [
            {"name": "act", "args": args, "id": f"c{i}", "type": "tool_call"}
            for i, args in enumerate(given)
        ]
        graph = StateGraph(MessagesState).add_node("tools", ToolNode([acting]))
        state: Any = {"messages": [AIMessage("", tool_calls=calls)]}
        out = graph.add_edge(START, "tools").compile().invoke(state, config=config)
        by_id = {m.tool_call_id: m.content for m in out["messages"] if isinstance(m, ToolMessage)}
        answers = [by_id[f"c{i}"] for i in range(len(given))]
    assert answers == ["no delete", "no force", "done"]
    # the function still gets the schema's values: the enum member, the model
    assert ran == [(Mode.READ, Opts(force=False, depth=0))]
    assert oh.shutdown().ok


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("order", ["sandbox-first", "redact-first"])
def test_two_handlers_rewriting_a_call_differently_refuse_it(mode: str, order: str) -> None:
    # one handler's hooks sandbox the path, another's redact the token: the wrapper ran the
    # first rewrite it found, so the other was dropped without a word (the token reached the
    # tool, or the path left the sandbox)
    def sandbox(event: ToolCallEvent) -> ToolCallEvent:
        event.args["path"] = "/sandbox" + str(event.args["path"])
        return event

    def redact(event: ToolCallEvent) -> ToolCallEvent:
        event.args["token"] = "***"
        return event

    def same(event: ToolCallEvent) -> ToolCallEvent:
        event.args["path"] = "/sandbox/x"
        return event

    pipelines = {
        name: otelhooks.configure(
            otlp=False,
            set_global=False,
            hooks=[{"id": name, "type": "before_tool_call", "matcher": "*", "handler": fn}],
        )
        for name, fn in (("sandbox", sandbox), ("redact", redact), ("same", same))
    }
    handlers = {name: OtelHooksCallbackHandler(oh.tracer) for name, oh in pipelines.items()}
    ran: list[tuple[str, str]] = []

    @tool
    def fetch(path: str, token: str) -> str:
        """Fetch a file with a token."""
        ran.append((path, token))
        return "fetched"

    fetcher = hook_tool(fetch)
    names = ["sandbox", "redact"] if order == "sandbox-first" else ["redact", "sandbox"]
    call = {"name": "fetch", "args": {"path": "/x", "token": "s3cret"}, "id": "c1"}

    def run(*names: str) -> Any:
        config: Any = {"callbacks": [handlers[n] for n in names]}
        if mode == "invoke":
            return fetcher.invoke({**call, "type": "tool_call"}, config=config)
        return asyncio.run(fetcher.ainvoke({**call, "type": "tool_call"}, config=config))

    with capture_logs() as logs:
        refused = run(*names)
    assert ran == []
    assert refused.status == "error"
    assert refused.response_metadata["otelhooks"]["decidedBy"] == "otelhooks"
    assert "rewrote" in refused.content
    assert "two otelhooks handlers rewrote a call differently: refused" in [
        e["event"] for e in logs
    ]
    # the control: handlers rewriting it alike (or one alone) run it as rewritten
    assert run("same", "sandbox").content == "fetched"
    assert ran == [("/sandbox/x", "s3cret")]
    for oh in pipelines.values():
        assert oh.shutdown().ok


class Shell(BaseTool):
    """A tool of the caller's own class, its arguments only in its ``_run``'s signature."""

    name: str = "shell"
    description: str = "Run a command."
    ran: list[str] = []

    def _run(self, command: str, timeout: int = 5, run_manager: Any = None) -> str:
        self.ran.append(command)
        return f"ran {command}"


def test_a_tool_class_without_an_args_schema_keeps_its_arguments_wrapped() -> None:
    # the wrapper took the tool's args_schema (None) and LangChain read its own
    # (*args, **kwargs): the model was told the tool takes "args" and "kwargs", and a plain
    # string (LangChain's input for one argument) raised TypeError instead of being judged
    def no_rm(event: ToolCallEvent) -> Block | None:
        return Block("no rm") if "rm" in str(event.args.get("command")) else None

    hooks = [{"id": "rm", "type": "before_tool_call", "matcher": "*", "handler": no_rm}]
    oh = otelhooks.configure(otlp=False, set_global=False, hooks=hooks)
    config: Any = {"callbacks": [OtelHooksCallbackHandler(oh.tracer)]}
    inner = Shell(ran=[])
    shell = hook_tool(inner)
    schema = shell.tool_call_schema.model_json_schema()  # type: ignore[union-attr]
    assert schema == inner.tool_call_schema.model_json_schema()  # type: ignore[union-attr]
    assert shell.invoke("rm -rf /", config=config) == "no rm"
    assert shell.invoke({"command": "ls"}, config=config) == "ran ls"
    assert inner.ran == ["ls"]
    assert oh.shutdown().ok


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "tool_node"])
def test_an_unwrapped_tool_whose_call_the_handler_failed_to_open_is_refused(mode: str) -> None:
    # before: the handler's failure was logged and swallowed, and the tool no hook_tool
    # wraps ran past a deny-everything guard (a wrapped one was refused)
    oh, handler, ran, wipe = _setup()
    raw = wipe.inner  # type: ignore[attr-defined]
    config: Any = {"callbacks": [handler], "metadata": {"thread_id": Unprintable()}}
    args = {"targets": {"a": "/"}}
    if mode == "tool_node":
        node = ToolNode([raw], handle_tool_errors=True)
        graph = StateGraph(MessagesState).add_node("tools", node).add_edge(START, "tools")
        call = {"name": "wipe", "args": args, "id": "c1", "type": "tool_call"}
        out = graph.compile().invoke({"messages": [AIMessage("", tool_calls=[call])]}, config)
        assert "refused rather than run without its guards" in out["messages"][-1].content
    else:
        run = (
            raw.invoke
            if mode == "invoke"
            else lambda a, config: asyncio.run(raw.ainvoke(a, config))
        )
        with pytest.raises(otelhooks.ToolDenied, match="refused rather than run without"):
            run(args, config=config)
    assert ran == []
    assert oh.shutdown().ok


def test_an_unwrapped_call_under_another_calls_run_id_is_refused() -> None:
    # a caller's fixed config["run_id"] on two calls at once: the later call was never
    # judged (its start found the id taken) and, with no wrapper to refuse it, ran
    hooks = [
        {
            "id": "passwd",
            "type": "before_tool_call",
            "handler": lambda e: Block("no") if e.args["path"] == "/etc/passwd" else None,
        }
    ]
    oh = otelhooks.configure(otlp=False, set_global=False, hooks=hooks)
    running, release = threading.Event(), threading.Event()
    ran: list[str] = []

    @tool
    def read(path: str) -> str:
        """Read a file."""
        ran.append(path)
        if path == "/tmp/ok":
            running.set()
            release.wait(30)  # still open when the other call starts under its run id
        return "contents"

    config: Any = {"callbacks": [OtelHooksCallbackHandler(oh.tracer)], "run_id": uuid.UUID(int=9)}
    first = threading.Thread(
        target=read.invoke, args=({"path": "/tmp/ok"},), kwargs={"config": config}
    )
    first.start()
    try:
        assert running.wait(30)
        with pytest.raises(otelhooks.ToolDenied, match="refused rather than run without"):
            read.invoke({"path": "/etc/passwd"}, config=config)
    finally:
        release.set()
        first.join(30)
    assert ran == ["/tmp/ok"]
    assert oh.shutdown().ok
