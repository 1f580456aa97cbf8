"""The ``/approvals`` page in Debian's Chromium: a pending Claude Code ``PermissionRequest``
(asked by the bridge's documented input) shows who, which tool, the hook, the time left and the
default; with content capture off its arguments are not on the page; Approve answers it."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer, serve
from tests.web.conftest import AUTH, TOKEN, approval_holder, click_answer, log_in

pytestmark = pytest.mark.timeout(90)

FIXTURES = Path(__file__).resolve().parents[1] / "conformance" / "claude_code" / "fixtures"
HOOKS = """\
hooks:
  - id: ask-on-permission
    type: PermissionRequest
    matcher: Bash
    approval: {timeout: 60, default: deny, reason: a person approves shell commands}
"""


@pytest.fixture
def asking_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(HOOKS)
    started = serve([hooks], token=TOKEN)
    try:
        yield started
    finally:
        started.stop()


def _ask(server: EventLogServer, out: dict[str, Any]) -> None:
    inputs = json.loads((FIXTURES / "hook_inputs.json").read_text())["inputs"]
    (doc,) = [i for i in inputs if i["section"] == "PermissionRequest input"]
    answer = httpx.post(
        f"{server.url}/v1/hooks/claude-code",
        json={**doc["input"], "session_id": "s-page"},
        headers=AUTH,
        timeout=80,
    )
    out["answer"] = answer.json()


def test_a_pending_permission_request_shows_time_left_and_is_approved_by_a_click(
    browser: Any, asking_server: EventLogServer
) -> None:
    out: dict[str, Any] = {}
    asking = threading.Thread(target=_ask, args=(asking_server, out))
    asking.start()
    page = log_in(browser, asking_server.url)
    try:
        page.goto(f"{asking_server.url}/approvals")
        card = page.locator(".approval-card", has_text="ask-on-permission").first
        card.wait_for(timeout=30_000)
        assert card.locator(".tool").inner_text() == "Bash"
        left = card.locator(".time-left")
        page.wait_for_function(
            "el => /s left, then deny/.test(el.textContent)", arg=left.element_handle()
        )
        seconds = int(re.match(r"(\d+) s left", left.inner_text()).group(1))  # type: ignore[union-attr]
        assert 0 < seconds <= 60
        # content capture is off: the command Claude Code asks about is not on the page
        assert card.locator(".args").count() == 0
        assert "rm -rf node_modules" not in page.content()
        click_answer(card.locator("button.approve"))
        page.locator("#answered tr.allowed").first.wait_for()
    finally:
        page.context.close()
    asking.join(60)
    assert out["answer"]["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


PERMISSION_SPAN = "agent_lifecycle before_human_intervention"


def test_an_approval_answered_from_the_page_is_one_asked_mark_in_its_trace(
    browser: Any, asking_server: EventLogServer
) -> None:
    out: dict[str, Any] = {}
    asking = threading.Thread(target=_ask, args=(asking_server, out))
    asking.start()
    page = log_in(browser, asking_server.url)
    try:
        page.goto(f"{asking_server.url}/approvals")
        card = page.locator(".approval-card", has_text="ask-on-permission").first
        card.wait_for(timeout=30_000)
        approval = card.get_attribute("data-approval")
        click_answer(card.locator("button.approve"))
        page.locator(f'#answered tr.allowed[data-approval="{approval}"]').wait_for()
        asking.join(60)
        item = httpx.get(f"{asking_server.url}/v1/approvals/{approval}", headers=AUTH).json()
        assert approval_holder(asking_server, item["trace_id"], approval) == PERMISSION_SPAN
        # serve's stand-in and the PermissionRequest span's own event are one approval
        page.goto(f"{asking_server.url}/#trace={item['trace_id']}")
        page.locator(".wf-row").first.wait_for()
        asked = page.locator(".wf-row .dec.asked")
        asked.first.wait_for()
        assert asked.count() == 1
        asked.first.locator("xpath=..").click()
        detail = page.locator("#detail")
        page.wait_for_function(
            "el => /approve by browser/.test(el.textContent)", arg=detail.element_handle()
        )
        text = detail.inner_text()
        assert "asked" in text
        assert "ask-on-permission" in text
        assert '"otelhooks.approval.decision":"allow"' in text.replace(" ", "")
    finally:
        page.context.close()
