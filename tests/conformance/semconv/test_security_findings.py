"""The experimental guardrail findings (``guardrail_pr427.json``): off by default; with
``OTELHOOKS_EXPERIMENTAL_SECURITY_FINDINGS=true`` a denied and a rewritten tool call each carry
a ``gen_ai.security.finding`` span event naming the hook, in the real SDK's exported spans.

Source: open-telemetry/semantic-conventions-genai pull request 427 (open, not merged: no commit
to pin; its description and review threads as stored, see the fixture's ``source``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otelhooks import Block
from otelhooks.testing import TestPipeline, pipeline

FIXTURE = json.loads((Path(__file__).parent / "guardrail_pr427.json").read_text())


def _run() -> list[Any]:
    with pipeline() as pipe:
        return _run_in(pipe)


def _run_in(pipe: TestPipeline) -> list[Any]:
    pipe.register(
        {
            "id": "no-rm",
            "type": "beforeToolCall",
            "matcher": "rm",
            "handler": lambda e: Block("no"),
        },
        {"id": "safe-path", "type": "beforeToolCall", "matcher": "cat", "handler": _rewrite},
    )
    with pipe.tracer.operation("bot") as op, op.step() as step:
        step.run_tool("fs", "rm", {"path": "/"}, lambda path: None)
        step.run_tool("fs", "cat", {"path": "/etc/shadow"}, lambda path: "x")
    pipe.flush()
    return [s for s in pipe.spans() if s.name.startswith("execute_tool ")]


def _rewrite(event: Any) -> dict[str, Any]:
    return {"args": {"path": "/tmp/safe"}}


def _findings(span: Any) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == FIXTURE["event"]]


def test_no_findings_without_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTELHOOKS_EXPERIMENTAL_SECURITY_FINDINGS", raising=False)
    assert [_findings(s) for s in _run()] == [[], []]


def test_a_deny_and_a_rewrite_are_findings_with_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTELHOOKS_EXPERIMENTAL_SECURITY_FINDINGS", "true")
    by_name = {s.name: _findings(s) for s in _run()}
    (denied,) = by_name["execute_tool rm"]
    (rewritten,) = by_name["execute_tool cat"]
    assert set(denied) == set(FIXTURE["attributes_used"])
    assert denied["gen_ai.security.policy.rule.id"] == "no-rm"
    assert denied["gen_ai.security.verdict.type"] == "block"
    assert rewritten["gen_ai.security.policy.rule.id"] == "safe-path"
    assert rewritten["gen_ai.security.action.type"] == "modify"
