"""A call the Claude Agent SDK's CLI refuses itself (``PermissionDenied``), under ``hooks_for``.

Measured (``test_delivered_events.py``, run ``denied``): in auto mode the CLI sends a call its
safety check is to judge to Anthropic's side, which an application's own
``ANTHROPIC_BASE_URL`` (here the scripted API) does not pass; the CLI refuses the call and calls
back for ``PermissionDenied``. ``hooks_for`` did not hook it: no ``on_tool_call_denied`` hook
heard of the refusal, and the call's ``execute_tool`` span stayed open until ``close`` ended it
as an error (``SessionEnded``). Now the refusal reaches the hooks and ends the span ``denied``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otelhooks
from tests.agent_sdk.test_delivered_events import DENIED, PIPE
from tests.agent_sdk.test_late_guards import _run
from tests.claude_code_cli._messages_api import MessagesApi, serve_messages_api

pytestmark = pytest.mark.timeout(120)


def test_a_call_the_cli_refuses_reaches_the_denied_hooks_and_ends_denied(tmp_path: Path) -> None:
    from otelhooks.integrations.claude_agent_sdk import hooks_for

    heard: list[Any] = []
    denied = {"id": "denied-log", "type": "PermissionDenied", "handler": heard.append}
    memory = InMemorySpanExporter()
    oh = otelhooks.configure(
        hooks=[denied],
        otlp=False,
        set_global=False,
        structured_logging=False,
        span_exporters=[memory],
    )
    project = tmp_path / "project"
    project.mkdir()
    api = MessagesApi(DENIED)
    try:
        with (
            serve_messages_api(api) as url,
            hooks_for(oh, state=tmp_path / "s.sqlite3") as hooks,
        ):
            _run(project, tmp_path / "home", url, hooks, permission_mode="auto")
    finally:
        oh.shutdown()
    assert [(e.toolName, e.toolCallId) for e in heard] == [("Bash", "t_pipe")]
    assert heard[0].reason == "Classifier unavailable"  # the CLI's own reason
    tools = [s for s in memory.get_finished_spans() if s.name == "execute_tool Bash"]
    assert [(s.attributes or {}).get("otelhooks.tool.outcome") for s in tools] == ["denied"]
    assert PIPE in heard[0].model_dump_json()  # the refused arguments reach the hook
