"""Claude Code's newer hook fields, from its hooks reference (``fixtures/hook_inputs.json``,
``hook_outputs.json``, ``settings_from_docs.json``) and a real client's inputs
(``real_client_inputs.json``): ``prompt_id``, ``effort.level`` and ``duration_ms`` reach the
hooks (in the payload's ``claudeCode`` copy) and the tool's span; ``classifierContext`` and
``PermissionDenied.retry`` reach Claude Code; ``install`` gives FileChanged a watch list.

Source: github.com/thevibeworks/claude-code-docs (a public mirror of Claude Code's hooks reference),
``content/en/docs/claude-code/hooks.md`` at commit e7cbe5e93f2054c85dc983d74a9607071ea8b39a,
and the real Claude Code CLI 2.1.332's inputs.

The bridge runs in process with a real engine and the SDK's in-memory exporter.

Source: thevibeworks/claude-code-docs ``content/en/docs/claude-code/hooks.md`` at commit
e7cbe5e (tests/conformance/references.json), and the real Claude Code CLI 2.1.332.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks.integrations.claude_code import BridgeState, install
from otelhooks.integrations.coding_agents import CodingAgentBridge
from tests.conformance.claude_code._bridge_cli import fixture

DOC_INPUTS = {(i["event"], i["line"]): i["input"] for i in fixture("hook_inputs.json")["inputs"]}
DOC_OUTPUTS = {o["line"]: o["output"] for o in fixture("hook_outputs.json")["outputs"]}
REAL = fixture("real_client_inputs.json")["inputs"]
REAL_PRE = next(i for i in REAL if i["hook_event_name"] == "PreToolUse")


class Seen:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.events.append(event)


@pytest.fixture
def run(tmp_path: Path) -> tuple[CodingAgentBridge, InMemorySpanExporter, Seen]:
    """A bridge whose test closes it (closing is what runs the observers)."""
    exporter, seen = InMemorySpanExporter(), Seen()
    hooks = [
        {"id": "pre", "type": "before_tool_call", "handler": seen},
        {"id": "post", "type": "after_tool_call", "handler": seen},
        {"id": "fail", "type": "on_tool_call_error", "handler": seen},
    ]
    bridge = CodingAgentBridge(
        hooks=hooks, state=BridgeState(tmp_path / "state.sqlite3"), exporters=[exporter]
    )
    return bridge, exporter, seen


def _tool_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    (span,) = [s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool ")]
    return span


def _post(pre: dict[str, Any], line: int, event: str) -> dict[str, Any]:
    doc = DOC_INPUTS[(event, line)]
    post = {**pre, "hook_event_name": event, "duration_ms": doc["duration_ms"]}
    if event == "PostToolUse":
        post["tool_response"] = {"stdout": "ok", "stderr": "", "interrupted": False}
    else:
        post["error"] = doc["error"]
    return post


@pytest.mark.parametrize(("event", "line"), [("PostToolUse", 1905), ("PostToolUseFailure", 2011)])
def test_prompt_effort_and_duration_reach_the_hooks_and_the_span(
    run: tuple[CodingAgentBridge, InMemorySpanExporter, Seen], event: str, line: int
) -> None:
    bridge, exporter, seen = run
    pre = dict(REAL_PRE)
    pre["tool_input"] = {"command": "true", "description": "nothing"}
    bridge.handle(pre)
    bridge.handle(_post(pre, line, event))
    bridge.close()  # the observers have run, the spans are exported
    first, last = seen.events[0], seen.events[-1]
    assert first.claudeCode["prompt_id"] == REAL_PRE["prompt_id"]
    assert first.claudeCode["effort"] == REAL_PRE["effort"]
    assert last.claudeCode["duration_ms"] == DOC_INPUTS[(event, line)]["duration_ms"]
    attrs = _tool_span(exporter).attributes or {}
    assert attrs["claude_code.prompt_id"] == REAL_PRE["prompt_id"]
    assert attrs["claude_code.effort.level"] == REAL_PRE["effort"]["level"]
    assert attrs["claude_code.duration_ms"] == DOC_INPUTS[(event, line)]["duration_ms"]


def _command(answer: dict[str, Any]) -> list[str]:
    code = "import sys; sys.stdin.read(); sys.stdout.write(sys.argv[1])"
    return [sys.executable, "-c", code, json.dumps(answer)]


def test_every_hooks_classifier_context_reaches_claude_code(tmp_path: Path) -> None:
    example = DOC_OUTPUTS[1972]
    hooks = [
        {"id": "a", "type": "PostToolUse", "command": _command(example)},
        {"id": "b", "type": "PostToolUse", "command": _command(example)},
    ]
    bridge = CodingAgentBridge(hooks=hooks, state=BridgeState(tmp_path / "s.sqlite3"))
    try:
        pre = {**REAL_PRE, "tool_input": {"command": "true"}}
        bridge.handle(pre)
        answer = bridge.handle(_post(pre, 1905, "PostToolUse"))
    finally:
        bridge.close()
    note = example["hookSpecificOutput"]["classifierContext"]
    specific = json.loads(answer.stdout)["hookSpecificOutput"]
    assert specific["classifierContext"] == f"{note}\n\n{note}"


def test_permission_denied_retry_reaches_claude_code(tmp_path: Path) -> None:
    example = DOC_OUTPUTS[2151]
    hooks = [{"id": "retry", "type": "PermissionDenied", "command": _command(example)}]
    bridge = CodingAgentBridge(hooks=hooks, state=BridgeState(tmp_path / "s.sqlite3"))
    try:
        (doc,) = [v for (e, _), v in DOC_INPUTS.items() if e == "PermissionDenied"]
        answer = bridge.handle(dict(doc))
    finally:
        bridge.close()
    assert json.loads(answer.stdout)["hookSpecificOutput"]["retry"] is True


def test_install_gives_file_changed_a_watch_list_like_the_docs(tmp_path: Path) -> None:
    documented = fixture("settings_from_docs.json")["hooks"]["FileChanged"]
    # every documented FileChanged group names the files it watches
    assert all(g["matcher"] not in ("", "*") for g in documented)
    settings = tmp_path / ".claude" / "settings.json"
    install(settings)
    (group,) = json.loads(settings.read_text())["hooks"]["FileChanged"]
    assert group["matcher"] not in ("", "*")
    assert all(name and "/" not in name for name in group["matcher"].split("|"))
