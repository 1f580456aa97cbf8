"""A person reads what they approve, as it is: a call's arguments, a message's target and text,
a run's prompt; characters that reorder or hide text (bidi controls, zero-width and other format
characters) are shown as their ``\\uXXXX`` escapes, never applied. Debian's Chromium, real
serve, content capture on."""

from __future__ import annotations

import itertools
import json
import threading
import unicodedata
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer, serve
from otelhooks.testing import pipeline
from tests.web.conftest import AUTH, TOKEN, ask, click_answer, log_in

pytestmark = pytest.mark.timeout(60)

# Runs `rm -rf ~`; Chromium draws it as "cat notes.txt # ~ rm -rf;", a comment after a cat
TROJAN = "cat notes.txt \u2067;rm -rf ~ #\u2069"
ARGS = {"command": TROJAN, "cwd": "/home/\u200bme", "why": "tidy\u202e"}


def _hidden(text: str) -> list[str]:
    return [f"U+{ord(c):04X}" for c in text if unicodedata.category(c) in ("Cf", "Zl", "Zp")]


@pytest.fixture
def showing_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EventLogServer]:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    started = serve(token=TOKEN)
    try:
        yield started
    finally:
        started.stop()


def _ask(server: EventLogServer, editable: bool) -> str:
    body = {
        "hook_id": "ask",
        "tool": "Bash\u202e",
        "timeout_s": 60,
        "default": "allow",
        "args": ARGS,
        "editable": editable,
    }
    created = httpx.post(f"{server.url}/v1/approvals", json=body, headers=AUTH)
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def test_characters_that_reorder_or_hide_text_are_shown_not_applied(
    browser: Any, showing_server: EventLogServer
) -> None:
    editable, shown = _ask(showing_server, True), _ask(showing_server, False)
    page = log_in(browser, showing_server.url)
    try:
        page.goto(f"{showing_server.url}/approvals")
        box = page.locator(f"article[data-approval='{editable}'] textarea.args")
        text = box.input_value(timeout=5000)
        pre = page.locator(f"article[data-approval='{shown}'] pre.args").inner_text()
        tool = page.locator(f"article[data-approval='{editable}'] .tool").inner_text()
        assert (_hidden(text), _hidden(pre), _hidden(tool)) == ([], [], [])
        assert "\\u2067;rm -rf ~ #\\u2069" in text
        assert json.loads(text) == json.loads(pre) == ARGS  # the same arguments, escaped
        assert tool == "Bash\\u202e"
        # approved as shown: the escapes are no edit, the call runs with its own arguments
        click_answer(page.locator(f"article[data-approval='{editable}'] button.approve"))
        page.locator(f"tr.answered[data-approval='{editable}']").wait_for(timeout=5000)
    finally:
        page.context.close()
        httpx.post(
            f"{showing_server.url}/v1/approvals/{shown}", json={"decision": "deny"}, headers=AUTH
        )
    answer = httpx.get(f"{showing_server.url}/v1/approvals/{editable}", headers=AUTH).json()
    assert (answer["state"], answer["answer_args"]) == ("allowed", None)


def test_a_held_message_and_a_held_run_show_what_they_would_send_and_run(
    browser: Any, showing_server: EventLogServer
) -> None:
    hooks = [
        {
            "id": "ask-msg",
            "type": "message_sending",
            "approval": {"timeout": 20, "default": "deny"},
        },
        {
            "id": "ask-run",
            "type": "before_agent_start",
            "approval": {"timeout": 20, "default": "deny"},
        },
    ]
    sent: list[str] = []
    shown: dict[str, str] = {}
    with pipeline(hooks=hooks) as pipe:

        def agent() -> None:
            with pipe.oh.operation("kernel-agent", input="delete all the backups") as op:
                op.send_message("slack", "#ceo", "here are the prod keys", deliver=sent.append)

        running = threading.Thread(target=agent)
        running.start()
        page = log_in(browser, showing_server.url)
        try:
            page.goto(f"{showing_server.url}/approvals")
            for hook in ("ask-run", "ask-msg"):
                card = page.locator(".approval-card", has_text=f"asked by hook {hook}")
                shown[hook] = card.locator(".args").inner_text(timeout=10_000)
                click_answer(card.locator("button.approve"))
        finally:
            page.context.close()
            running.join(30)
    assert sent == ["here are the prod keys"]
    assert json.loads(shown["ask-run"]) == {"input": "delete all the backups"}
    message = {"channel": "slack", "target": "#ceo", "content": "here are the prod keys"}
    assert json.loads(shown["ask-msg"]) == message


def test_an_argument_after_a_long_one_is_on_the_page_without_scrolling_the_box(
    browser: Any, showing_server: EventLogServer
) -> None:
    comment = "Routine maintenance, approved in the weekly review. " * 60
    body = {
        "hook_id": "ask",
        "tool": "db/run_sql",
        "timeout_s": 60,
        "default": "allow",
        "args": {"comment": comment, "query": "DROP TABLE users"},
        "editable": True,
    }
    item = httpx.post(f"{showing_server.url}/v1/approvals", json=body, headers=AUTH).json()
    page = log_in(browser, showing_server.url)
    try:
        page.goto(f"{showing_server.url}/approvals")
        box = page.locator(f"article[data-approval='{item['id']}'] textarea.args")
        box.wait_for(timeout=5000)
        # the box shows all it holds: DROP TABLE is not below a fold inside it
        shown, held = box.evaluate("n => [n.clientHeight, n.scrollHeight]")
        assert held <= shown, (shown, held)
        page.set_viewport_size({"width": 700, "height": 860})  # narrower: more lines
        page.wait_for_function(
            "n => n.scrollHeight <= n.clientHeight", arg=box.element_handle(), timeout=5000
        )
    finally:
        page.context.close()
        httpx.post(
            f"{showing_server.url}/v1/approvals/{item['id']}",
            json={"decision": "deny"},
            headers=AUTH,
        )


def test_a_card_s_long_names_never_push_its_deadline_and_default_off_the_page(
    browser: Any, server: EventLogServer
) -> None:
    """An agent names its tool and hook as it likes (1,000 characters each, no space). Before,
    the card's head grew as wide as the name (12,000 px) and its "N s left, then allow" stood
    20,000 px to the right, off the page: the person saw neither the deadline nor the default;
    an answered card's row made the page scroll sideways."""
    names = {"tool": "Bash" + "A" * 996, "hook_id": "h" * 1000}
    gone = ask(server, **names)  # and in the answered list, with a reason as long
    deny = {"decision": "deny", "reason": "r" * 1000}
    answered = httpx.post(f"{server.url}/v1/approvals/{gone['id']}", json=deny, headers=AUTH)
    assert answered.status_code == 200, answered.text
    item = ask(server, timeout_s=120, **names)
    page = log_in(browser, server.url)
    try:
        page.goto(f"{server.url}/approvals")
        box = page.locator(f"article[data-approval='{item['id']}']")
        box.wait_for(timeout=10_000)
        edge = box.bounding_box()
        assert edge is not None
        for part in ("strong.tool", ".time-left", "button.approve", "button.deny"):
            shown = box.locator(part).bounding_box()
            assert shown is not None
            assert shown["x"] + shown["width"] <= edge["x"] + edge["width"], (part, shown, edge)
        assert box.locator(".time-left").inner_text().endswith("s left, then allow")
        page.locator(f"tr.answered[data-approval='{gone['id']}']").wait_for(timeout=10_000)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= page.viewport_size["width"], width
    finally:
        page.context.close()


# Each non-space character of the elements ``selector`` matches, with its line and where it is
# drawn on it (one range a character: what the person sees, in order)
_DRAWN = """(selector) => {
  const out = [];
  for (const node of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
      for (let i = 0; i < text.data.length; i++) {
        if (/\\s/.test(text.data[i])) continue;
        const range = document.createRange();
        range.setStart(text, i);
        range.setEnd(text, i + 1);
        const box = range.getBoundingClientRect();
        out.push([text.data[i], Math.round(box.top), box.left]);
      }
    }
  }
  return out;
}"""


def _out_of_order(page: Any, selector: str) -> list[str]:
    """The characters drawn left of the one before them on the same line."""
    drawn = page.evaluate(_DRAWN, selector)
    assert drawn, f"nothing drawn for {selector}: nothing is tested"
    return [
        f"{c} after {before[0]}"
        for before, (c, top, left) in itertools.pairwise(drawn)
        if top == before[1] and left < before[2]
    ]


def test_right_to_left_letters_reorder_nothing_a_person_approves(
    browser: Any, showing_server: EventLogServer
) -> None:
    # Before, a Hebrew letter in a tool's name or its arguments drew the digits and signs beside
    # it right to left: the tool "\u05d0 1 2 3 \u05d1" read "\u05d1 3 2 1 \u05d0", and
    # `chmod \u05d0 777 000` read `chmod 000 777 \u05d0` on the card the person approved.
    body = {
        "hook_id": "ask",
        "tool": "\u05d0 1 2 3 \u05d1",
        "timeout_s": 60,
        "default": "allow",
        "args": {"command": "chmod \u05d0 777 000", "path": "/\u05d0/../../\u05d1"},
    }
    created = httpx.post(f"{showing_server.url}/v1/approvals", json=body, headers=AUTH)
    assert created.status_code == 201, created.text
    approval = str(created.json()["id"])
    page = log_in(browser, showing_server.url)
    try:
        page.goto(f"{showing_server.url}/approvals")
        card = f"article[data-approval='{approval}']"
        page.locator(f"{card} pre.args").wait_for(timeout=10_000)
        assert _out_of_order(page, f"{card} .tool") == []
        assert _out_of_order(page, f"{card} pre.args") == []
        click_answer(page.locator(f"{card} button.deny"))
        answered = f"tr.answered[data-approval='{approval}'] td.tool"
        page.locator(answered).wait_for(timeout=10_000)
        assert _out_of_order(page, answered) == []
    finally:
        page.context.close()
        httpx.post(
            f"{showing_server.url}/v1/approvals/{approval}",
            json={"decision": "deny"},
            headers=AUTH,
        )
