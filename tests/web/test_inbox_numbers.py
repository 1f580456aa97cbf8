"""A card's arguments are shown as they will run, whatever numbers they hold: a browser reads
JSON numbers as doubles and refuses ``NaN``/``Infinity``, which Python reads and writes. Real
serve, Debian's Chromium, content capture on."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer
from otelhooks.testing import pipeline
from tests.web.conftest import AGENT, AUTH, click_answer, log_in, serving_inbox

pytestmark = pytest.mark.timeout(90)

BIG = 9007199254740993  # 2**53 + 1: the nearest double is 2**53


@pytest.fixture
def showing_inbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[EventLogServer]:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    with serving_inbox(monkeypatch) as started:
        yield started


def _ask(server: EventLogServer, args: str, *, editable: bool = False) -> httpx.Response:
    # the body as an agent's script writes it: Python's json module writes NaN and reads it back
    body = (
        '{"hook_id":"ask","tool":"Bash","timeout_s":60,"default":"allow",'
        f'"editable":{"true" if editable else "false"},"args":{args}}}'
    )
    headers = {**AGENT, "content-type": "application/json"}
    return httpx.post(f"{server.url}/v1/approvals", content=body.encode(), headers=headers)


def test_a_card_json_cannot_show_is_refused_and_the_page_still_answers(
    browser: Any, showing_inbox: EventLogServer
) -> None:
    # an agent asks first for cards no browser can read; then the real call is held
    refused = [_ask(showing_inbox, a) for a in ('{"n":NaN}', '{"n":-Infinity}', '{"n":1e999}')]
    real = _ask(showing_inbox, '{"command":"rm -rf ~"}')
    assert real.status_code == 201, real.text
    real_id = real.json()["id"]
    page = log_in(browser, showing_inbox.url)
    try:
        page.goto(f"{showing_inbox.url}/approvals")
        click_answer(page.locator(f"article[data-approval='{real_id}'] button.deny"))
        page.locator(f"tr.answered[data-approval='{real_id}']").wait_for(timeout=5000)
    finally:
        page.context.close()
    answer = httpx.get(f"{showing_inbox.url}/v1/approvals/{real_id}", headers=AUTH).json()
    assert (answer["state"], answer["answered_by"]) == ("denied", "browser")
    # refused loudly (the asker's hook blocks its call), never a card that hides the others
    assert [r.status_code for r in refused] == [400, 400, 400], [r.text for r in refused]
    assert "cannot be shown" in refused[0].json()["message"]
    # an edit no browser could show is refused as well, and the card stays answerable
    other = _ask(showing_inbox, '{"command":"ls"}', editable=True).json()["id"]
    edit = b'{"decision":"allow","args":{"command":"ls","n":NaN}}'
    got = httpx.post(f"{showing_inbox.url}/v1/approvals/{other}", content=edit, headers=AUTH)
    assert got.status_code == 400, got.text
    assert httpx.get(f"{showing_inbox.url}/v1/approvals", headers=AUTH).json()["pending"]


def test_a_large_integer_is_shown_and_run_as_it_is(
    browser: Any, showing_inbox: EventLogServer
) -> None:
    args = f'{{"account":{BIG},"amount":5,"memo":"a\\ud800b"}}'
    editable = _ask(showing_inbox, args, editable=True).json()["id"]
    shown = _ask(showing_inbox, args).json()["id"]
    page = log_in(browser, showing_inbox.url)
    try:
        page.goto(f"{showing_inbox.url}/approvals")
        box = page.locator(f"article[data-approval='{editable}'] textarea.args")
        text = box.input_value(timeout=5000)
        pre = page.locator(f"article[data-approval='{shown}'] pre.args").inner_text()
        for seen in (text, pre):
            assert f'"account": {BIG},' in seen, seen
            assert '"memo": "a\\ud800b"' in seen, seen  # a lone surrogate is shown, not drawn
        # the person changes the amount: the account runs as shown, not as a double reads it
        box.fill(text.replace('"amount": 5', '"amount": 6'))
        click_answer(page.locator(f"article[data-approval='{editable}'] button.approve"))
        page.locator(f"tr.answered[data-approval='{editable}']").wait_for(timeout=5000)
    finally:
        page.context.close()
    answer = httpx.get(f"{showing_inbox.url}/v1/approvals/{editable}", headers=AUTH).json()
    assert answer["state"] == "allowed"
    assert answer["answer_args"] == {"account": BIG, "amount": 6, "memo": "a\ud800b"}


def test_a_call_in_serve_s_process_with_such_arguments_is_blocked(
    showing_inbox: EventLogServer,
) -> None:
    hook = {
        "id": "ask-nan",
        "type": "before_tool_call",
        "matcher": "rm",
        "approval": {"timeout": 2, "default": "allow"},
    }
    ran: list[dict[str, Any]] = []
    with pipeline(hooks=[hook]) as pipe:
        with pipe.oh.operation("careful-bot") as op, op.step() as step:
            args = {"path": "/data", "retries": math.nan}
            step.run_tool("fs", "rm", args, lambda **kw: ran.append(kw) or "ok")
        span = pipe.spans("execute_tool rm")[0]
    # blocked at once, never a card the page could not show (nor its default after 2 s)
    assert ran == []
    assert span.attributes is not None
    assert "cannot be shown" in str(span.attributes["otelhooks.hook.decision_reason"])
    listing = httpx.get(f"{showing_inbox.url}/v1/approvals", headers=AUTH).json()
    assert not [a for a in listing["pending"] + listing["answered"] if a["hook_id"] == "ask-nan"]
