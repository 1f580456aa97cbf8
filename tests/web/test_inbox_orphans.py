"""An approval whose asker stopped waiting (interrupted, cancelled, gave up) leaves the inbox:
no person approves a call nobody waits for, and a rerun's card is not one of two look-alikes.
Real serve, real asker processes."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer, serve
from otelhooks._actions._approval_inbox import CLIENT_GONE, WITHDRAWN
from otelhooks.testing import pipeline
from tests.web.conftest import AGENT, AUTH, TOKEN, serving_inbox

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EventLogServer]:
    with serving_inbox(monkeypatch) as started:
        yield started


def _hook(tool: str, url: str | None) -> dict[str, Any]:
    approval: dict[str, Any] = {"timeout": 60, "default": "allow"}
    if url:
        approval["url"] = url
    return {"id": "ask", "type": "before_tool_call", "matcher": tool, "approval": approval}


def _card(admin: httpx.Client, tool: str, timeout_s: float = 20) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for item in admin.get("/v1/approvals").json()["pending"]:
            if item["tool"] == tool:
                return str(item["id"])
        time.sleep(0.05)
    raise AssertionError(f"no card for {tool}")


def _withdrawn(admin: httpx.Client, approval: str, timeout_s: float = 10) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = admin.get(f"/v1/approvals/{approval}").json()
        if got["state"] != "pending":
            return dict(got)
        time.sleep(0.05)
    raise AssertionError("the card is still waiting though nobody waits for its answer")


ASKER = """\
import os, sys
from otelhooks.testing import pipeline
hook = {"id": "ask", "type": "before_tool_call", "matcher": "rm",
        "approval": {"timeout": 60, "default": "allow", "url": sys.argv[1]}}
with pipeline(hooks=[hook]) as pipe:
    with pipe.oh.operation("bot") as op, op.step() as step:
        print("asking", flush=True)
        step.run_tool("fs", "rm", {"path": "/data"}, lambda **kw: "ran")
"""


def test_an_asker_interrupted_withdraws_its_card(server: EventLogServer, tmp_path: Path) -> None:
    # a person presses Ctrl-C on the agent (or a CLI interrupts its hook) while the call waits:
    # before, the card stayed for its 60 s and a person could approve a call nobody waited for
    script = tmp_path / "asker.py"
    script.write_text(ASKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env["OTELHOOKS_INGEST_TOKEN"] = AGENT["Authorization"].removeprefix("Bearer ")
    child = subprocess.Popen(
        [sys.executable, str(script), server.url], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        with httpx.Client(base_url=server.url, headers=AUTH) as admin:
            card = _card(admin, "fs/rm")
            child.send_signal(signal.SIGINT)
            child.wait(20)
            got = _withdrawn(admin, card)
            late = admin.post(f"/v1/approvals/{card}", json={"decision": "allow"})
    finally:
        child.kill()
        child.wait()
    assert (got["state"], got["answered_by"], got["answer_reason"]) == (
        "denied",
        "asker",
        WITHDRAWN,
    )
    assert late.status_code == 409
    assert late.json()["message"] == "answered already: deny by asker"


def test_an_asker_killed_outright_has_its_card_withdrawn(
    server: EventLogServer, tmp_path: Path
) -> None:
    # kill -9 of the process holding the call (a bridge daemon, a one-process bridge): it
    # cannot send its DELETE. Before, its card waited the whole 60 s and a person's Approve
    # was recorded "allowed" for a call nobody waited for; its long-poll's socket closing
    # now withdraws it
    script = tmp_path / "asker.py"
    script.write_text(ASKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env["OTELHOOKS_INGEST_TOKEN"] = AGENT["Authorization"].removeprefix("Bearer ")
    child = subprocess.Popen(
        [sys.executable, str(script), server.url], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        with httpx.Client(base_url=server.url, headers=AUTH) as admin:
            card = _card(admin, "fs/rm")
            time.sleep(0.5)  # its long-poll is waiting
            child.send_signal(signal.SIGKILL)
            child.wait(20)
            got = _withdrawn(admin, card)
            late = admin.post(f"/v1/approvals/{card}", json={"decision": "allow"})
    finally:
        child.kill()
        child.wait()
    assert (got["state"], got["answered_by"], got["answer_reason"]) == (
        "denied",
        "asker",
        WITHDRAWN,
    )
    assert late.status_code == 409


@pytest.mark.parametrize("afar", [False, True], ids=["in-process", "url"])
def test_an_asker_cancelled_withdraws_its_card(server: EventLogServer, afar: bool) -> None:
    # an agent framework that stops waiting for a tool (its own timeout) cancels the hook
    ran: list[Any] = []

    async def agent(pipe: Any) -> None:
        async with pipe.oh.operation("bot") as op, op.step() as step:
            await step.arun_tool("fs", "rm", {"path": "/data"}, lambda **kw: ran.append(kw))

    async def impatient(pipe: Any) -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(agent(pipe), 1.5)

    hook = _hook("rm", server.url if afar else None)
    with (
        pipeline(hooks=[hook]) as pipe,
        httpx.Client(base_url=server.url, headers=AUTH) as admin,
    ):
        worker = threading.Thread(target=asyncio.run, args=(impatient(pipe),))
        worker.start()
        card = _card(admin, "fs/rm")
        worker.join(10)
        got = _withdrawn(admin, card)
    assert (got["state"], got["answered_by"]) == ("denied", "asker")
    assert ran == []


def test_a_card_answered_is_not_withdrawn(server: EventLogServer) -> None:
    with httpx.Client(base_url=server.url) as client:
        body = {"tool": "Bash", "timeout_s": 60, "default": "deny", "args": {}}
        card = client.post("/v1/approvals", json=body, headers=AGENT).json()["id"]
        client.post(f"/v1/approvals/{card}", json={"decision": "allow"}, headers=AUTH)
        gone = client.delete(f"/v1/approvals/{card}", headers=AGENT)
        got = client.get(f"/v1/approvals/{card}", headers=AGENT).json()
    assert gone.status_code == 409
    assert got["state"] == "allowed"


HOLD_BASH = """\
hooks:
  - id: ask-before-shell
    type: PreToolUse
    matcher: Bash
    approval: {timeout: 60, default: deny, reason: a person approves shell commands}
"""


def _pre_tool_use(session: str) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": session,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf victim"},
        "tool_use_id": f"toolu_{session}",
    }


def _card_of(admin: httpx.Client, session: str) -> str:
    listing = admin.get("/v1/approvals").json()
    (card,) = [a for a in listing["pending"] + listing["answered"] if a["session"] == session]
    return str(card["id"])


def test_a_claude_code_hook_that_gives_up_withdraws_its_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude Code's HTTP hook has its own timeout (or the person presses Esc): it closes the
    # connection and goes on without the answer. Before, serve's route kept waiting, the card
    # stayed for its 60 s, and a person's Approve was recorded "allowed" for a call nobody
    # waited for any more
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(HOLD_BASH)
    monkeypatch.setenv("OTELHOOKS_INGEST_TOKEN", AGENT["Authorization"].removeprefix("Bearer "))
    started = serve([hooks], token=TOKEN)
    try:
        with httpx.Client(base_url=started.url, headers=AUTH) as admin:
            with pytest.raises(httpx.ReadTimeout):  # the hook's own timeout: 1 s
                httpx.post(
                    f"{started.url}/v1/hooks/claude-code",
                    json=_pre_tool_use("gave-up"),
                    headers=AGENT,
                    timeout=httpx.Timeout(5, read=1),
                )
            got = _withdrawn(admin, _card_of(admin, "gave-up"))
            late = admin.post(f"/v1/approvals/{got['id']}", json={"decision": "allow"})
    finally:
        with httpx.Client(base_url=started.url, headers=AUTH) as admin:
            for item in admin.get("/v1/approvals").json()["pending"]:
                admin.post(f"/v1/approvals/{item['id']}", json={"decision": "deny"})
        started.stop()
    assert (got["state"], got["answered_by"], got["answer_reason"]) == (
        "denied",
        "asker",
        CLIENT_GONE,
    )
    assert late.status_code == 409
