"""``CodingAgentBridge.hooks_now`` names every hook the bridge runs before it answers an event.

The route answers an event on its event loop when ``hooks_now`` names no hook but the
recorders, so a hook the bridge ran on the answering thread without ``hooks_now`` naming it
would run there with no deadline. Every Claude Code event whose hooks decide goes through a
real bridge with a recording hook on every canonical event, as the route's deciding thread runs
it (``waited_within``: sync Python hooks on the calling thread); each hook that ran on the
calling thread (observers queued for the worker run on another) must be one ``hooks_now``
named.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from otelhooks._dispatch._calls import waited_within
from otelhooks.events import EVENTS as CANONICAL
from otelhooks.integrations.coding_agents import BridgeState, CodingAgentBridge
from otelhooks.integrations.coding_agents._combine import ANSWERING_EVENTS

_RAN: list[tuple[str, int]] = []


def _record(event: Any) -> None:
    _RAN.append((event.event, threading.get_ident()))


def _payload(name: str) -> dict[str, Any]:
    return {
        "session_id": "s-now",
        "hook_event_name": name,
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": f"toolu-{name}",
        "tool_response": "ok",
        "prompt": "list the files",
        "delta": "some text",
        "agent_type": "helper",
        "trigger": "manual",
        "source": "startup",
    }


def test_every_hook_run_before_an_answer_is_one_hooks_now_names(tmp_path: Path) -> None:
    hooks = [{"id": f"rec-{name}", "type": name, "handler": _record} for name in CANONICAL]
    bridge = CodingAgentBridge(hooks=hooks, state=BridgeState(tmp_path / "state.sqlite3"))
    here = threading.get_ident()
    try:
        seen_inline: set[str] = set()
        for name in sorted(ANSWERING_EVENTS):
            payload = _payload(name)
            if name in ("PostToolUse", "PostToolUseFailure", "PermissionDenied"):
                bridge.handle(_payload("PreToolUse") | {"tool_use_id": payload["tool_use_id"]})
            named = bridge.hooks_now(payload)
            assert named is not None, name
            _RAN.clear()
            with waited_within(8.0):  # as the route's deciding thread runs it
                bridge.handle(payload)
            inline = {event for event, thread in _RAN if thread == here}
            assert inline <= {h.event for h in named}, name
            seen_inline |= inline
        # the check is not empty: the deciding events did run hooks on this thread
        assert {"before_tool_call", "after_tool_call", "tool_result_persist"} <= seen_inline
        assert {"before_agent_start", "on_complete", "session_start"} <= seen_inline
    finally:
        bridge.close()


def test_a_tool_no_guard_names_runs_no_hook(tmp_path: Path) -> None:
    hooks = [{"id": "guard", "type": "PreToolUse", "matcher": "Bash", "handler": _record}]
    bridge = CodingAgentBridge(hooks=hooks, state=BridgeState(tmp_path / "state.sqlite3"))
    try:
        read = _payload("PreToolUse") | {"tool_name": "Read"}
        assert bridge.hooks_now(read) == []
        assert [h.id for h in bridge.hooks_now(_payload("PreToolUse")) or []] == ["guard"]
        assert bridge.hooks_now(_payload("Notification")) == []  # observed only: queued
    finally:
        bridge.close()
