"""One call, one card: a hook input posted again (a client or a load balancer retrying after its
own timeout, the first connection still open) waits on the card of the first ask, or gets the
answer given to it, so a person's Deny cannot be outlived by a second card's default."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer
from tests.web.conftest import (
    AGENT,
    AUTH,
    Posted,
    first_pending,
    pre_tool_use,
    serving_inbox,
    session_cards,
)
from tests.web.conftest import (
    CLAUDE_CODE_ROUTE as ROUTE,
)

pytestmark = pytest.mark.timeout(60)

# a short approval whose default allows: a second card would reach it within the test
HOLD_BASH = """\
hooks:
  - id: ask-before-shell
    type: PreToolUse
    matcher: Bash
    approval: {timeout: 4, default: allow, reason: a person approves shell commands}
"""


def _pre_tool_use(use_id: str, command: str = "rm -rf victim") -> dict[str, Any]:
    return pre_tool_use(use_id, command)


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EventLogServer]:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(HOLD_BASH)
    with serving_inbox(monkeypatch, hooks) as started:
        yield started


def test_a_retried_pre_tool_use_waits_on_the_first_card_and_gets_the_person_s_deny(
    server: EventLogServer,
) -> None:
    # before: the retry opened a second card; the person denied the first, the retry's card
    # reached its default (allow) and the rm -rf ran, "approved by timeout"
    first = Posted(server.url, _pre_tool_use("toolu_retry"))
    with httpx.Client(base_url=server.url, headers=AUTH) as admin:
        card = first_pending(admin, "toolu_retry")
        retry = Posted(server.url, _pre_tool_use("toolu_retry"))
        denied = admin.post(f"/v1/approvals/{card['id']}", json={"decision": "deny", "by": "bob"})
        assert denied.status_code == 200, denied.text
        assert (first.decision(), retry.decision()) == ("deny", "deny")
        late = Posted(server.url, _pre_tool_use("toolu_retry"))  # after the answer
        assert late.decision() == "deny"
        listing = session_cards(admin, "toolu_retry")
    assert listing["pending"] == []
    assert [(a["id"], a["answered_by"]) for a in listing["answered"]] == [(card["id"], "bob")]


def test_another_call_or_other_arguments_get_cards_of_their_own(server: EventLogServer) -> None:
    # a call of its own, and the same call with arguments a person edited (judged again)
    asks = [_pre_tool_use("toolu_a"), _pre_tool_use("toolu_b"), _pre_tool_use("toolu_a", "ls")]
    cards: list[str] = []
    with httpx.Client(base_url=server.url, headers=AUTH) as admin:
        for body in asks:
            posted = Posted(server.url, body)
            card = first_pending(admin, body["tool_use_id"])
            admin.post(f"/v1/approvals/{card['id']}", json={"decision": "deny", "by": "bob"})
            assert posted.decision() == "deny"
            cards.append(card["id"])
    assert len(set(cards)) == 3


def test_a_retry_after_the_first_client_gave_up_gets_a_card_of_its_own(
    server: EventLogServer,
) -> None:
    # the first client's card was withdrawn (nobody answered it): the retry is asked again,
    # not denied with the withdrawal
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            server.url + ROUTE,
            json=_pre_tool_use("toolu_gave_up"),
            headers=AGENT,
            timeout=httpx.Timeout(5, read=1),
        )
    with httpx.Client(base_url=server.url, headers=AUTH) as admin:
        deadline = time.monotonic() + 30
        while not session_cards(admin, "toolu_gave_up")["answered"] and time.monotonic() < deadline:
            time.sleep(0.02)
        (withdrawn,) = session_cards(admin, "toolu_gave_up")["answered"]
        retry = Posted(server.url, _pre_tool_use("toolu_gave_up"))
        card = first_pending(admin, "toolu_gave_up")
        admin.post(f"/v1/approvals/{card['id']}", json={"decision": "allow", "by": "bob"})
        assert retry.decision() == "allow"
    assert withdrawn["answered_by"] == "asker"
    assert card["id"] != withdrawn["id"]


def test_an_answer_answers_its_call_only_until_its_card_s_deadline(
    server: EventLogServer,
) -> None:
    # a runtime reusing a call id (an MCP client its request ids) is asked again once the
    # first card's time is up: a person's allow is not a standing permission
    ask = {
        "hook_id": "ask",
        "tool": "Bash",
        "args": {"command": "rm -rf build"},
        "timeout_s": 1.5,
        "default": "deny",
        "session": "sess-reused",
        "call": "sess-reused\n1",
    }
    with httpx.Client(base_url=server.url, headers=AGENT) as agent:
        first = agent.post("/v1/approvals", json=ask).json()
        with httpx.Client(base_url=server.url, headers=AUTH) as admin:
            admin.post(f"/v1/approvals/{first['id']}", json={"decision": "allow", "by": "bob"})
        again = agent.post("/v1/approvals", json=ask).json()  # a retry, within the card's time
        time.sleep(max(0.0, first["deadline_ms"] / 1000 - time.time()) + 0.2)
        later = agent.post("/v1/approvals", json=ask).json()
        agent.delete(f"/v1/approvals/{later['id']}")
    assert (again["id"], again["state"], again["answered_by"]) == (first["id"], "allowed", "bob")
    assert later["id"] != first["id"]
    assert later["state"] == "pending"
