"""In async code a scope's start event reaches its hooks once (``__aenter__`` awaits the
dispatch; the span's start must not dispatch it as well). Before #29's fix, ``async with`` on a
step, a model call, a compaction, a sub-agent call or an approval fired its observers twice."""

from __future__ import annotations

import asyncio

import pytest

from otelhooks.testing import Recorder, pipeline

EVENTS = (
    "before_step",
    "llm_input",
    "before_compact",
    "before_call_agent",
    "before_human_intervention",
)


@pytest.mark.parametrize("event", EVENTS)
def test_an_async_scope_fires_its_start_event_once(event: str) -> None:
    seen = Recorder()

    async def run() -> None:
        async with pipe.oh.operation("a") as op, op.step() as step:
            async with step.llm("m", messages=[]):
                pass
            async with step.compact(message_count=3, token_count=10) as compaction:
                compaction.done(messages_after=1, tokens_after=2)
            async with step.call_agent("sub"):
                pass
            async with step.approval([{"identifier": "fs", "apiName": "rm"}]) as approval:
                approval.approve()

    with pipeline(hooks=[{"id": "seen", "type": event, "handler": seen}]) as pipe:
        asyncio.run(run())
        pipe.oh.engine.flush(10)
    assert seen.names() == [event]
