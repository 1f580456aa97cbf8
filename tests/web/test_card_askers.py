"""A card is withdrawn when the last of its askers is gone, not the first: one card per call,
so a retried call (a load balancer's second try, a second instance reached) waits on the card
its first try opened. Real serve, real asker processes killed with SIGKILL."""

from __future__ import annotations

import contextlib
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

from otelhooks import EventLogServer
from otelhooks._actions._approval import ApprovalAction
from otelhooks._actions._approval_inbox import lapsed_reason
from otelhooks._actions._asker import Asker
from otelhooks._errors import HookError
from otelhooks._events import ToolCallEvent
from otelhooks._live import Answered
from tests.web.conftest import (
    AGENT,
    AUTH,
    Posted,
    first_pending,
    log_in,
    pre_tool_use,
    serving_inbox,
    session_cards,
)

pytestmark = pytest.mark.timeout(60)

HOLD_BASH = """\
hooks:
  - id: ask-before-shell
    type: PreToolUse
    matcher: Bash
    approval: {timeout: 30, default: deny, reason: a person approves shell commands}
"""


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EventLogServer]:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(HOLD_BASH)
    with serving_inbox(monkeypatch, hooks) as started:
        yield started


def test_the_first_try_giving_up_leaves_the_card_to_the_retry_waiting_on_it(
    server: EventLogServer,
) -> None:
    # a load balancer gives up on its first try and retries: the retry waits on the first
    # try's card. Before, the first try's connection closing withdrew the card, and the retry,
    # still waiting for the person, was denied "by asker" with nobody having said no
    first = Posted(server.url, pre_tool_use("toolu_two"), read_s=1.5)
    with httpx.Client(base_url=server.url, headers=AUTH) as admin:
        card = first_pending(admin, "toolu_two")
        retry = Posted(server.url, pre_tool_use("toolu_two"))
        time.sleep(0.5)  # the retry waits on the card
        first.join()
        assert isinstance(first.error, httpx.ReadTimeout)
        time.sleep(1)  # the first try's connection closed
        still = session_cards(admin, "toolu_two")
        allowed = admin.post(f"/v1/approvals/{card['id']}", json={"decision": "allow", "by": "bob"})
        assert allowed.status_code == 200, allowed.text
        assert retry.decision() == "allow"
    assert [a["id"] for a in still["pending"]] == [card["id"]]


# an asker that speaks the protocol by hand: asks, then looks (``wait=0``: serve had no room for
# its long-poll) or long-polls without ``asker=1`` (an older otelhooks), until killed
RAW_ASKER = """\
import sys, time, httpx
url, token, how = sys.argv[1:4]
with httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}) as client:
    card = client.post("/v1/approvals", json={"hook_id": "raw", "tool": sys.argv[4],
                       "timeout_s": 60, "default": "allow"}).json()
    print(card["id"], flush=True)
    while True:
        if how == "looks":
            client.get(f"/v1/approvals/{card['id']}")
            time.sleep(0.5)
        else:
            client.get(f"/v1/approvals/{card['id']}", params={"wait": "5"}, timeout=15)
"""


@pytest.mark.parametrize("how", ["looks", "old"])
def test_an_asker_killed_where_no_connection_tells_has_its_card_withdrawn_by_the_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # killed between two looks, or mid-poll without asker=1: no connection of its closes
    # while serve listens for it. Before, the card waited its 60 s and a person's Approve was
    # recorded "allowed" for a call nobody waited for; now nobody waiting on it for the lease
    # withdraws it (shortened here, by serve's setting)
    monkeypatch.setenv("OTELHOOKS_APPROVAL_LEASE", "2")
    script = tmp_path / "raw_asker.py"
    script.write_text(RAW_ASKER)
    with serving_inbox(monkeypatch) as server:
        token = AGENT["Authorization"].removeprefix("Bearer ")
        child = subprocess.Popen(
            [sys.executable, str(script), server.url, token, how, f"lease-{how}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None
            card = child.stdout.readline().strip()
            with httpx.Client(base_url=server.url, headers=AUTH) as admin:
                time.sleep(3)  # its looks or polls keep the card past one lease
                assert admin.get(f"/v1/approvals/{card}").json()["state"] == "pending"
                child.send_signal(signal.SIGKILL)
                child.wait(10)
                killed = time.monotonic()
                time.sleep(2.5)
                got = admin.get("/v1/approvals").json()
                late = admin.post(f"/v1/approvals/{card}", json={"decision": "allow"})
        finally:
            child.kill()
            child.wait()
    answered = {a["id"]: a for a in got["answered"]}
    assert card in answered, f"still pending {time.monotonic() - killed:.1f} s after the kill"
    reason = lapsed_reason(2)
    assert (answered[card]["answered_by"], answered[card]["answer_reason"]) == ("asker", reason)
    assert late.status_code == 409


def test_the_page_shows_a_card_whose_lease_lapsed_as_no_longer_waiting(
    browser: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a person with the page open, nothing else happening: the card whose asker is gone must
    # leave the pending list (and its Approve with it) without anything else moving the inbox
    monkeypatch.setenv("OTELHOOKS_APPROVAL_LEASE", "2")
    with serving_inbox(monkeypatch) as server:
        page = log_in(browser, server.url)
        try:
            page.goto(f"{server.url}/approvals")
            asked = httpx.post(
                f"{server.url}/v1/approvals",
                json={"hook_id": "lapse", "tool": "deploy", "timeout_s": 60, "default": "allow"},
                headers=AGENT,
            )
            approval = asked.json()["id"]
            card = page.locator(f".approval-card[data-approval='{approval}']")
            card.wait_for(timeout=10_000)
            asked_at = time.monotonic()
            row = page.locator(f"#answered tr[data-approval='{approval}']")
            row.wait_for(timeout=10_000)
            shown = time.monotonic() - asked_at
            by = row.locator("td").nth(4).inner_text()
            approves = card.locator("button.approve").count()
        finally:
            page.context.close()
    assert (approves, by) == (0, "asker")
    assert shown < 2.0 + 3.5, f"shown as waiting {shown:.1f} s"


def test_a_daemon_s_client_gone_leaves_the_card_to_another_asker_of_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the bridge daemon asks for a hook client (through approval.url) whose CLI kills it, while
    # another asker of the same call (a retry) waits on the card: the daemon's thread cannot
    # stop its long-poll, so it tells serve one of the polls open is its own. Before, its
    # DELETE withdrew the card and the other asker was denied "by asker"
    with serving_inbox(monkeypatch) as server:
        action = ApprovalAction(
            "ask", "before_tool_call", {"timeout": 60, "default": "deny", "url": server.url}
        )
        event = {
            "event": "before_tool_call",
            "identifier": "fs",
            "apiName": "rm",
            "args": {"path": "/data"},
            "toolCallId": "call-daemon",
            "sessionKey": "sess-daemon",
        }
        got: dict[str, Any] = {}
        client = Asker()

        def ask(name: str) -> None:
            with client.asking() if name == "daemon" else contextlib.nullcontext():
                try:
                    got[name] = action(ToolCallEvent.model_validate(event))
                except HookError as exc:
                    got[name] = exc

        daemon = threading.Thread(target=ask, args=("daemon",))
        daemon.start()
        with httpx.Client(base_url=server.url, headers=AUTH) as admin:
            card = first_pending(admin, "daemon")
            other = threading.Thread(target=ask, args=("other",))
            other.start()
            time.sleep(1)  # both long-poll the one card
            client.gone()  # the hook client killed: the daemon's DELETE goes
            time.sleep(1.5)
            still = session_cards(admin, "daemon")["pending"]
            allowed = admin.post(f"/v1/approvals/{card['id']}", json={"decision": "allow"})
            other.join(30)
            daemon.join(40)
    assert [x["id"] for x in still] == [card["id"]]
    assert allowed.status_code == 200, allowed.text
    assert isinstance(got["other"], Answered)
    assert got["other"].note.decision == "allow"
