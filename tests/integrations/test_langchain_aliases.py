"""A ``hook_tool`` tool whose argument schema spells an argument two ways (a pydantic alias:
``path`` given as ``file_path``): the guards judge it by the name the function receives it
under, and their rewrite of it is what the function gets, in a real LangGraph ``ToolNode``.
Before, a guard on ``path`` saw only ``file_path`` (the model's spelling) and let
``/etc/passwd`` be deleted, and a rewrite of ``path`` or ``force`` lost to the value the
model gave under the alias."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic import AliasChoices, AliasPath, BaseModel, ConfigDict, Field

from otelhooks import Block, ToolCallEvent
from otelhooks.integrations.langchain import OtelHooksCallbackHandler, hook_tool
from otelhooks.testing import TestPipeline
from tests.conftest import hook


class ByEitherName(BaseModel):
    """Either spelling validates (``populate_by_name``): the model may send ``path`` or
    ``file_path``; LangChain tells it ``path``."""

    model_config = ConfigDict(populate_by_name=True)
    path: str = Field(alias="file_path")
    force: bool = Field(False, alias="f")


class ByAliasOnly(BaseModel):
    """Only the aliases validate (pydantic's default)."""

    path: str = Field(alias="file_path")
    force: bool = Field(False, alias="f")


class ByChoices(BaseModel):
    """Two aliases, neither the name (``AliasChoices``)."""

    path: str = Field(validation_alias=AliasChoices("file_path", "target"))
    force: bool = False


class ByAliasForbiddingOthers(BaseModel):
    """Only the aliases, and no other key (``extra="forbid"``): the name may not ride beside."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(alias="file_path")
    force: bool = Field(False, alias="f")


SCHEMAS = {"either": ByEitherName, "alias_only": ByAliasOnly, "choices": ByChoices}
RUNNABLE = {**SCHEMAS, "alias_forbid": ByAliasForbiddingOthers}


def _rm(schema: type[BaseModel], ran: list[tuple[str, bool]]) -> BaseTool:
    def rm(path: str, force: bool = False) -> str:
        ran.append((path, force))
        return f"deleted {path}"

    return StructuredTool.from_function(rm, name="rm", description="Delete.", args_schema=schema)


def _run(tool: BaseTool, args: dict[str, Any], handler: Any, mode: str) -> ToolMessage:
    node = ToolNode([hook_tool(tool)])
    graph = StateGraph(MessagesState).add_node("tools", node).add_edge(START, "tools").compile()
    call = {"name": "rm", "args": args, "id": "c1", "type": "tool_call"}
    state = {"messages": [AIMessage("", tool_calls=[call])]}
    config: Any = {"callbacks": [handler]}
    if mode == "invoke":
        out = graph.invoke(state, config=config)
    else:
        out = asyncio.run(graph.ainvoke(state, config=config))
    message = out["messages"][-1]
    assert isinstance(message, ToolMessage)
    return message


def _no_etc(event: ToolCallEvent) -> Block | None:
    # written against the name the model is told and the function receives
    if str(event.args.get("path", "")).startswith("/etc"):
        return Block("not /etc")
    return None


def _sandbox(event: ToolCallEvent) -> None:
    event.args["path"] = "/sandbox" + str(event.args["path"])
    event.args["force"] = False


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("schema", sorted(RUNNABLE))
def test_a_guard_judges_an_aliased_argument_by_its_name(
    pipe: TestPipeline, mode: str, schema: str
) -> None:
    # alias_forbid: before, LangChain's input could not hold the name beside the alias (the
    # schema forbids it), so the guards saw only ``file_path`` and /etc/passwd was deleted
    pipe.register(hook("no-etc", "before_tool_call", _no_etc))
    ran: list[tuple[str, bool]] = []
    rm = _rm(RUNNABLE[schema], ran)
    handler = OtelHooksCallbackHandler(pipe.tracer)
    spelled = "target" if schema == "choices" else "file_path"

    denied = _run(rm, {spelled: "/etc/passwd"}, handler, mode)
    assert (denied.status, denied.content) == ("error", "not /etc")
    assert ran == []

    allowed = _run(rm, {spelled: "/tmp/a.txt"}, handler, mode)
    assert (allowed.status, allowed.content) == ("success", "deleted /tmp/a.txt")
    assert ran == [("/tmp/a.txt", False)]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("schema", sorted(RUNNABLE))
def test_a_rewrite_of_an_aliased_argument_is_what_the_function_gets(
    pipe: TestPipeline, mode: str, schema: str
) -> None:
    pipe.register(hook("sandbox", "before_tool_call", _sandbox))
    ran: list[tuple[str, bool]] = []
    rm = _rm(RUNNABLE[schema], ran)
    handler = OtelHooksCallbackHandler(pipe.tracer)
    args = {"target": "/etc/passwd", "force": True}
    if schema != "choices":
        args = {"file_path": "/etc/passwd", "f": True}

    answer = _run(rm, args, handler, mode)
    assert (answer.status, answer.content) == ("success", "deleted /sandbox/etc/passwd")
    assert ran == [("/sandbox/etc/passwd", False)]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("with_handler", [True, False], ids=["handler", "no_handler"])
@pytest.mark.parametrize("schema", sorted(RUNNABLE))
def test_an_aliased_argument_reaches_the_function_as_it_does_unwrapped(
    pipe: TestPipeline, mode: str, with_handler: bool, schema: str
) -> None:
    # before: without a handler, ``f=True`` (an alias the schema takes alone) never reached
    # the wrapped function, which ran with ``force=False`` where the unwrapped one forced;
    # a schema forbidding other keys refused the wrapped call (the inner tool was given the
    # argument under both its alias and its name)
    ran: list[tuple[str, bool]] = []
    rm = _rm(RUNNABLE[schema], ran)
    args = {"target": "/tmp/a.txt", "force": True}
    if schema != "choices":
        args = {"file_path": "/tmp/a.txt", "f": True}
    config: Any = {"callbacks": [OtelHooksCallbackHandler(pipe.tracer)] if with_handler else []}
    for wrapped in (rm, hook_tool(rm)):
        if mode == "invoke":
            wrapped.invoke(args, config=config)
        else:
            asyncio.run(wrapped.ainvoke(args, config=config))
    assert ran == [("/tmp/a.txt", True)] * 2


class ByNestedPath(BaseModel):
    """The argument read from inside another (``AliasPath``): ``{"target": {"file": ...}}``."""

    path: str = Field(validation_alias=AliasPath("target", "file"))
    force: bool = False


class ByNestedItem(BaseModel):
    """A plain alias or a list's first item."""

    path: str = Field(validation_alias=AliasChoices("file_path", AliasPath("targets", 0)))
    force: bool = False


class ByNestedPathForbiddingOthers(BaseModel):
    """Nested, and no other key: the name may not ride beside the path."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(validation_alias=AliasPath("target", "file"))
    force: bool = False


class ByNestedFlag(BaseModel):
    """An optional argument read from a list's item."""

    path: str
    force: bool = Field(False, validation_alias=AliasPath("flags", 0))


NESTED = {
    "path": (ByNestedPath, {"target": {"file": "/etc/passwd", "note": "x"}}),
    "item": (ByNestedItem, {"targets": ["/etc/passwd", "/tmp/b"]}),
    "path_forbid": (ByNestedPathForbiddingOthers, {"target": {"file": "/etc/passwd"}}),
}


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("schema", sorted(NESTED))
def test_a_rewrite_of_a_nested_alias_is_what_the_function_gets(
    pipe: TestPipeline, mode: str, schema: str
) -> None:
    # before: the guards saw ``path`` and sandboxed it, and the inner tool was given the
    # caller's ``target`` (which the schema reads before any name) beside it: the function
    # deleted /etc/passwd
    pipe.register(hook("sandbox", "before_tool_call", _sandbox))
    ran: list[tuple[str, bool]] = []
    model, args = NESTED[schema]
    answer = _run(_rm(model, ran), args, OtelHooksCallbackHandler(pipe.tracer), mode)
    assert (answer.status, answer.content) == ("success", "deleted /sandbox/etc/passwd")
    assert ran == [("/sandbox/etc/passwd", False)]


@pytest.mark.parametrize("schema", sorted(NESTED))
def test_a_guard_judges_a_nested_alias_by_its_name(pipe: TestPipeline, schema: str) -> None:
    pipe.register(hook("no-etc", "before_tool_call", _no_etc))
    ran: list[tuple[str, bool]] = []
    model, args = NESTED[schema]
    denied = _run(_rm(model, ran), args, OtelHooksCallbackHandler(pipe.tracer), "invoke")
    assert (denied.status, denied.content) == ("error", "not /etc")
    assert ran == []


def _no_force(event: ToolCallEvent) -> None:
    event.args.pop("force", None)  # the function's default (False) instead


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_removal_a_nested_list_cannot_carry_is_refused(pipe: TestPipeline, mode: str) -> None:
    # before: the hook removed ``force`` and the function got the caller's ``flags[0]``: True
    pipe.register(hook("no-force", "before_tool_call", _no_force))
    ran: list[tuple[str, bool]] = []
    tool = _rm(ByNestedFlag, ran)
    args = {"path": "/tmp/a.txt", "flags": [True]}
    answer = _run(tool, args, OtelHooksCallbackHandler(pipe.tracer), mode)
    assert answer.status == "error"
    assert "nested alias" in str(answer.content)
    assert ran == []


class ForcingByAliasForbiddingOthers(BaseModel):
    """Forces by default, ``force`` taken as ``f`` only, and no other key."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(alias="file_path")
    force: bool = Field(True, alias="f")


def _no_forced_delete(event: ToolCallEvent) -> Block | None:
    return Block("no forced delete") if event.args.get("force") is True else None


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_guard_sees_the_default_a_schema_forbidding_other_keys_fills_in(
    pipe: TestPipeline, mode: str
) -> None:
    # before: LangChain's input could not hold ``force`` beside ``f`` (the schema forbids it),
    # so the guard saw only ``file_path`` and the forced delete ran
    pipe.register(hook("no-forced-delete", "before_tool_call", _no_forced_delete))
    ran: list[tuple[str, bool]] = []
    tool = _rm(ForcingByAliasForbiddingOthers, ran)
    denied = _run(tool, {"file_path": "/tmp/a.txt"}, OtelHooksCallbackHandler(pipe.tracer), mode)
    assert (denied.status, denied.content) == ("error", "no forced delete")
    assert ran == []
    allowed = _run(
        tool, {"file_path": "/tmp/a.txt", "f": False}, OtelHooksCallbackHandler(pipe.tracer), mode
    )
    assert (allowed.status, allowed.content) == ("success", "deleted /tmp/a.txt")
    assert ran == [("/tmp/a.txt", False)]
