"""The ``agent_events`` hook kind: config files, the event-to-record mapping, in-process runs,
notices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from otelhooks import (
    AfterToolCallEvent,
    AgentEvents,
    AgentEventsConfig,
    Block,
    ConfigError,
    EventRecord,
    Notice,
    RingEventLog,
    SqliteEventLog,
    args_fingerprint,
    load_agent_events,
)
from otelhooks import semconv as sc
from otelhooks._eventlog import entry_from_event
from otelhooks.events import ToolCallDeniedEvent, ToolCallErrorEvent, ToolResult
from otelhooks.testing import TestPipeline

SEED_YAML = """\
kind: agent_events
name: agent_events
agent: shop-bot
on: [after_tool_result, after_turn]
ignore: [settings_get]
mutating: [order_create, order_cancel]
capacity: 5000
show_notice: false
"""


def after_tool(api: str, **fields: Any) -> AfterToolCallEvent:
    return AfterToolCallEvent(toolCallId="c1", identifier="shop", apiName=api, **fields)


def records(events: AgentEvents) -> list[EventRecord]:
    return events.log.read(0, 1000).records


# -- the config file ---------------------------------------------------------------------------


def test_the_seed_yaml_loads_as_written(tmp_path: Path) -> None:
    path = tmp_path / "events.yaml"
    path.write_text(SEED_YAML)
    config = load_agent_events(path)
    assert config.agent == "shop-bot"
    assert config.on == ["after_tool_result", "after_turn"]
    assert config.mutating == ["order_create", "order_cancel"]
    assert not config.durable


def test_seed_defaults_agent_is_the_name_and_on_is_after_tool_result(tmp_path: Path) -> None:
    path = tmp_path / "events.yaml"
    path.write_text("kind: agent_events\nname: ops\n")
    config = load_agent_events(path)
    assert (config.agent, config.on, config.capacity) == ("ops", ["after_tool_result"], 5000)


def test_a_relative_durable_path_is_resolved_against_the_file(tmp_path: Path) -> None:
    path = tmp_path / "hooks" / "events.yaml"
    path.parent.mkdir()
    path.write_text("kind: agent_events\ndurable: true\npath: data/events.sqlite3\n")
    assert load_agent_events(path).path == str(tmp_path / "hooks" / "data" / "events.sqlite3")


def test_a_bad_field_names_the_file_and_the_field(tmp_path: Path) -> None:
    path = tmp_path / "events.yaml"
    path.write_text("kind: agent_events\non: [after_everything]\n")
    with pytest.raises(ConfigError) as info:
        load_agent_events(path)
    assert info.value.file == str(path)
    assert info.value.field is not None
    assert info.value.field.startswith("on")


def test_a_file_of_another_kind_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.yaml"
    path.write_text("kind: dll_hook\npath: x.dll\n")
    with pytest.raises(ConfigError, match="kind: agent_events"):
        load_agent_events(path)


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "events.yaml"
    path.write_text("kind: agent_events\non: [after_turn\n")
    with pytest.raises(ConfigError) as info:
        load_agent_events(path)
    assert info.value.line is not None


# -- mapping events to records -----------------------------------------------------------------


def test_a_tool_record_has_the_args_fingerprint_and_never_the_args() -> None:
    config = AgentEventsConfig(name="shop", mutating=["order_create"])
    args = {"sku": "A-1", "qty": 2, "note": "secret content"}
    entry = entry_from_event(
        config, after_tool("order_create", args=args, sessionKey="s", userId="u", traceId="t")
    )
    assert entry is not None
    assert entry.tool == "shop/order_create"
    assert entry.args_fp == args_fingerprint(args)
    assert (entry.kind, entry.mutating, entry.success, entry.detail) == (
        "after_tool_result",
        True,
        True,
        "ok",
    )
    assert (entry.session, entry.user_id, entry.trace_id) == ("s", "u", "t")
    assert "secret" not in repr(entry)


def test_a_carried_fingerprint_wins_over_the_args() -> None:
    entry = entry_from_event(AgentEventsConfig(), after_tool("x", argsFp="abcdef0123456789"))
    assert entry is not None
    assert entry.args_fp == "abcdef0123456789"


@pytest.mark.parametrize(
    ("config", "api", "logged"),
    [
        (AgentEventsConfig(ignore=["settings_get"]), "settings_get", False),
        (AgentEventsConfig(ignore=["shop/settings_get"]), "settings_get", False),
        (AgentEventsConfig(ignore=["settings_get"]), "order_create", True),
        (AgentEventsConfig(watch=["order_create"]), "order_create", True),
        (AgentEventsConfig(watch=["order_create"]), "order_list", False),
        (AgentEventsConfig(watch=["order_create"], ignore=["order_create"]), "order_create", False),
    ],
)
def test_watch_and_ignore_filter_tools_by_either_name(
    config: AgentEventsConfig, api: str, logged: bool
) -> None:
    assert (entry_from_event(config, after_tool(api)) is not None) is logged


def test_failed_and_denied_tool_calls_are_failed_tool_records() -> None:
    config = AgentEventsConfig()
    error = ToolCallErrorEvent(
        toolCallId="c", identifier="", apiName="div", error="division by zero", errorType="Zero"
    )
    denied = ToolCallDeniedEvent(
        toolCallId="c", identifier="", apiName="rm", reason="nope", decidedBy="guard"
    )
    failed = [entry_from_event(config, e) for e in (error, denied)]
    assert [(e.kind, e.success, e.detail) for e in failed if e is not None] == [
        ("after_tool_result", False, "Zero"),
        ("after_tool_result", False, "denied by guard"),
    ]


def test_the_after_tool_call_echo_of_a_denial_is_not_a_second_record() -> None:
    echo = after_tool(
        "rm", success=False, result=ToolResult(success=False, state={"type": "blocked"})
    )
    assert entry_from_event(AgentEventsConfig(), echo) is None


def test_points_not_selected_by_on_are_not_logged() -> None:
    config = AgentEventsConfig(on=["after_turn"])
    assert entry_from_event(config, after_tool("x")) is None


# -- an in-process run -------------------------------------------------------------------------


def test_an_agent_run_fills_the_log_at_the_selected_points(pipe: TestPipeline) -> None:
    config = AgentEventsConfig(
        name="shop",
        agent="shop-bot",
        on=["after_tool_result", "after_turn", "after_loop", "on_terminate", "on_error"],
        ignore=["ping"],
        mutating=["rm"],
    )
    events = AgentEvents(config)
    events.install(pipe.oh.hooks)
    pipe.register({"id": "guard", "type": "beforeToolCall", "matcher": "rm", "handler": deny})
    pipe.register({"id": "fake", "type": "beforeToolCall", "matcher": "fetch", "handler": mock})
    op = pipe.tracer.operation("shop-bot", session_id="s1", user_id="u1")
    with op, op.step() as step:
        step.run_tool("calc", "add", {"a": 1, "b": 2}, lambda a, b: a + b)
        step.run_tool("calc", "ping", {}, lambda: "pong")
        step.run_tool("fs", "rm", {"path": "/"}, lambda path: None)
        step.run_tool("calc", "div", {"a": 1, "b": 0}, lambda a, b: a / b)
        step.run_tool("web", "fetch", {"url": "x"}, lambda url: "real")
    pipe.flush()
    got = records(events)
    assert [(r.kind, r.tool, r.success, r.detail) for r in got] == [
        ("after_tool_result", "calc/add", True, "ok"),
        ("after_tool_result", "fs/rm", False, "denied by guard"),
        ("after_tool_result", "calc/div", False, "ZeroDivisionError"),
        ("after_tool_result", "web/fetch", True, "mocked"),
        ("after_turn", None, True, "step 0, 5 tool calls"),
        ("after_loop", None, True, "done"),
    ]
    assert [r.seq for r in got] == [1, 2, 3, 4, 5, 6]
    assert {(r.agent, r.session, r.user_id) for r in got} == {("shop-bot", "s1", "u1")}
    assert [r.mutating for r in got] == [False, True, False, False, False, False]
    add = pipe.span("execute_tool add")
    assert got[0].args_fp == (add.attributes or {})[sc.TOOL_ARGS_FINGERPRINT]
    assert got[0].trace_id == format(add.context.trace_id, "032x")
    assert got[0].span_id == format(add.context.span_id, "016x")


def deny(event: Any) -> Block:
    return Block("not here")


def mock(event: Any) -> None:
    event.mock({"content": "cached", "success": True})


def test_a_failing_run_logs_on_error_and_after_loop(pipe: TestPipeline) -> None:
    events = AgentEvents(AgentEventsConfig(on=["on_error", "after_loop"]))
    events.install(pipe.oh.hooks)
    with pytest.raises(RuntimeError), pipe.tracer.operation("bot"):
        raise RuntimeError("model down")
    pipe.flush()
    assert [(r.kind, r.success, r.detail) for r in records(events)] == [
        ("on_error", False, "RuntimeError"),
        ("after_loop", False, "error"),
    ]


def test_budget_threshold_and_termination_by_a_person_are_logged(pipe: TestPipeline) -> None:
    events = AgentEvents(AgentEventsConfig(on=["on_budget_threshold", "on_terminate"]))
    events.install(pipe.oh.hooks)
    op = pipe.tracer.operation("bot")
    with op, op.step() as step:
        op.emit("on_budget_threshold", spent=0.8, limit=1.0, threshold=0.8)
        with step.approval([{"identifier": "fs", "apiName": "delete"}]) as approval:
            approval.reject("not today", stop=True)
    pipe.flush()
    assert [(r.kind, r.success, r.detail) for r in records(events)] == [
        ("on_budget_threshold", True, "spent 0.8 of 1 (80%)"),
        ("on_terminate", False, "stopped by human"),
    ]
    assert "not today" not in repr(records(events))  # the person's reason is content


def test_an_agent_run_fills_a_durable_log(pipe: TestPipeline, tmp_path: Path) -> None:
    config = AgentEventsConfig(durable=True, path=str(tmp_path / "e.sqlite3"))
    events = AgentEvents(config)
    assert isinstance(events.log, SqliteEventLog)
    events.install(pipe.oh.hooks)
    try:
        with pipe.tracer.operation("bot") as op, op.step() as step:
            step.run_tool("calc", "add", {"a": 1, "b": 2}, lambda a, b: a + b)
        pipe.flush()
        assert events.log.flush()
        assert [r.tool for r in records(events)] == ["calc/add"]
    finally:
        events.close()


def test_a_durable_log_that_cannot_be_opened_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    config = AgentEventsConfig(name="shop", durable=True, path=str(blocker / "events.sqlite3"))
    with pytest.raises(ConfigError) as info:
        AgentEvents(config)
    assert (info.value.field, info.value.hook_id) == ("path", "shop")


def test_the_ring_gets_the_configured_capacity() -> None:
    events = AgentEvents(AgentEventsConfig(capacity=7))
    assert isinstance(events.log, RingEventLog)
    assert events.log.capacity == 7


# -- notices -------------------------------------------------------------------------------------


def test_show_notice_sends_a_notice_and_logs_a_line() -> None:
    seen: list[Notice] = []
    config = AgentEventsConfig(
        name="shop", show_notice=True, notice="{agent}: {tool} {status}", mutating=["x"]
    )
    events = AgentEvents(config, notice_sink=seen.append)
    with capture_logs() as logs:
        events.observe(after_tool("x"))
    assert [n.text for n in seen] == ["shop: shop/x ok"]
    assert seen[0].log == "shop"
    assert seen[0].entry.mutating
    assert [line["notice"] for line in logs if line["event"] == "agent event"] == [
        "shop: shop/x ok"
    ]


def test_without_show_notice_there_is_no_notice() -> None:
    seen: list[Notice] = []
    events = AgentEvents(AgentEventsConfig(), notice_sink=seen.append)
    events.observe(after_tool("x"))
    assert seen == []
    assert len(records(events)) == 1


def test_a_failing_notice_sink_does_not_lose_the_record() -> None:
    def broken(notice: Notice) -> None:
        raise RuntimeError("ui down")

    events = AgentEvents(AgentEventsConfig(show_notice=True), notice_sink=broken)
    with capture_logs() as logs:
        events.observe(after_tool("x"))
    assert len(records(events)) == 1
    assert any(line["event"] == "notice sink failed" for line in logs)


def test_a_notice_template_with_an_unknown_field_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        AgentEvents(AgentEventsConfig(show_notice=True, notice="{args}"))
    assert info.value.field == "notice"
