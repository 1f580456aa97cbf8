"""An application that interrupts its Claude Agent SDK client mid-call: the turn and the call end.

``ClaudeSDKClient.interrupt()`` while a ``Bash`` call runs: the CLI the SDK bundles (2.1.337)
calls back for ``Interrupt`` (``source`` ``user``, ``reason`` ``stop``; the SDK's ``HookEvent``
does not name it, the SDK passes every name to its CLI), and sends no ``Stop``, nor a
``PostToolUse`` for the call. Before, ``hooks_for`` hooked no such event: the turn and the call
stayed open until ``close``, the call then ending as an error.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otelhooks
from otelhooks import semconv as sc
from tests.agent_sdk.test_hooks_for import _sdk
from tests.claude_code_cli._messages_api import (
    OFFLINE_ENV,
    MessagesApi,
    ToolStep,
    serve_messages_api,
)

pytestmark = pytest.mark.timeout(120)


def test_an_interrupted_turn_and_its_call_end_when_the_client_interrupts(tmp_path: Path) -> None:
    sdk = _sdk()
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    heard: list[Any] = []
    started = threading.Event()  # the call runs: the client may interrupt it
    observers = [
        {"id": "started", "type": "PreToolUse", "handler": lambda event: started.set()},
        {"id": "stopped", "type": "Interrupt", "matcher": "user", "handler": heard.append},
    ]
    memory = InMemorySpanExporter()
    oh = otelhooks.configure(hooks=observers, otlp=False, set_global=False, span_exporters=[memory])
    api = MessagesApi([ToolStep("toolu_slow", "Bash", {"command": "sleep 20; echo slept"})])

    async def main(url: str) -> int:
        """The time the session went on to after the interrupt."""
        env = {"ANTHROPIC_BASE_URL": url, **OFFLINE_ENV, "HOME": str(home)}
        with hooks_for(oh, state=tmp_path / "s.sqlite3") as hooks:
            options = sdk.ClaudeAgentOptions(
                cwd=str(project), env=env, hooks=hooks, permission_mode="bypassPermissions"
            )
            async with sdk.ClaudeSDKClient(options=options) as client:
                await client.query("go")
                assert await asyncio.to_thread(started.wait, 60)
                await client.interrupt()
                async for _ in client.receive_response():
                    pass
                await asyncio.sleep(2)  # the session goes on: its end is told apart
                return time.time_ns()

    try:
        with serve_messages_api(api) as url:
            ended_at = asyncio.run(asyncio.wait_for(main(url), 100))
    finally:
        oh.shutdown()
    spans = {s.name: s for s in memory.get_finished_spans()}
    turn, call = spans["invoke_agent claude-agent-sdk"], spans["execute_tool Bash"]
    assert (turn.attributes or {})[sc.COMPLETE_REASON] == "interrupted"
    assert (call.attributes or {})[sc.TOOL_OUTCOME] == "interrupted"
    for span in (turn, call):
        assert span.end_time is not None
        assert span.end_time < ended_at  # at the interrupt, not at close
    [stopped] = heard
    assert (stopped.toolCallId, stopped.rejectionReason) == ("toolu_slow", "stop")
