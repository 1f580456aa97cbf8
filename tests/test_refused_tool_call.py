"""A tool call otelhooks itself refuses before any hook runs (``Step.tool_call(refused=...)``,
what the MCP wrappers do with arguments whose types are not the tool's schema's) is a deny
decided by ``otelhooks``: recorded on its span and told to ``on_tool_call_denied`` as a hook's
deny is, with no guard run and the tool not run, in sync and async code alike; the web view
shows it denied by otelhooks, and replay leaves it alone (no policy decides it)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from otelhooks.replay import recorded_events
from otelhooks.testing import Recorder, TestPipeline, pipeline
from otelhooks.web._summary import decision_of

PROBLEM = "arguments.force is string where the tool's inputSchema says boolean"
REASON = f"otelhooks refused the call: {PROBLEM}"


def _run(pipe: TestPipeline, *, use_async: bool) -> tuple[bool, str]:
    args = {"path": "/a", "force": "true"}
    if use_async:

        async def main() -> tuple[bool, str]:
            async with (
                pipe.oh.operation("a") as op,
                op.step() as step,
                step.tool_call("notes", "rm", args, refused=PROBLEM) as call,
            ):
                return call.should_run, call.result.content

        return asyncio.run(main())
    with (
        pipe.oh.operation("a") as op,
        op.step() as step,
        step.tool_call("notes", "rm", args, refused=PROBLEM) as call,
    ):
        return call.should_run, call.result.content


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_refused_call_is_a_deny_by_otelhooks_and_no_guard_runs(use_async: bool) -> None:
    guards: list[Any] = []
    told = Recorder()
    hooks = [
        {"id": "guard", "type": "before_tool_call", "handler": guards.append},
        {"id": "told", "type": "on_tool_call_denied", "handler": told},
    ]
    with pipeline(hooks=hooks) as pipe:
        should_run, content = _run(pipe, use_async=use_async)
        pipe.flush()
        span = pipe.span("execute_tool rm")
    assert (should_run, content) == (False, REASON)
    assert guards == []
    assert [(e.reason, e.decidedBy) for e in told.of("on_tool_call_denied")] == [  # type: ignore[attr-defined]
        (REASON, "otelhooks")
    ]
    attrs = dict(span.attributes or {})
    assert attrs["otelhooks.hook.decision"] == "deny"
    assert attrs["otelhooks.hook.decided_by"] == "otelhooks"
    assert attrs["otelhooks.hook.decision_reason"] == REASON
    assert attrs["otelhooks.tool.outcome"] == "denied"
    assert span.status.status_code.name == "UNSET"  # a deny, not a failure: as a hook's
    # the web view shows who refused and why; replay has nothing to judge
    assert decision_of(attrs) == {"kind": "denied", "by": "otelhooks", "why": REASON}
    recorded = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": span.name, "attributes": attrs}
    assert list(recorded_events([recorded])) == []
