"""``GET /v1/approvals`` in serve's own inbox: the list and the version the page takes as seen
are one read, whatever is asked as the list is read. The route (``ApprovalRoutes``) is driven
over ASGI with a real inbox; the call is asked by a listener of the inbox's (a public hook of
its: it runs as the default the listing applies is recorded, the moment another thread's hook
could ask), which places the ask between the route's reads deterministically."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from otelhooks._actions._approval_inbox import Approval, ApprovalInbox
from otelhooks.web._approval_routes import ApprovalRoutes
from otelhooks.web._auth import WebAuth

TOKEN = "listing-admin-t0ken-0123456789"
ASK: dict[str, Any] = {"hook_id": "ask", "event": "before_tool_call", "tool": "Bash"}


def list_through_the_route(inbox: ApprovalInbox) -> dict[str, Any]:
    """``GET /v1/approvals`` of ``inbox`` as the page asks it (an admin's bearer token here)."""
    routes = ApprovalRoutes(inbox, WebAuth(TOKEN), capture_content=True)

    async def get() -> dict[str, Any]:
        transport = httpx.ASGITransport(app=routes)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            answer = await client.get("/v1/approvals", headers=headers)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    return asyncio.run(get())


def test_a_call_asked_as_the_list_is_read_is_listed_or_not_yet_counted() -> None:
    # Before, the route read the list, then the answered ones, then the version: a call asked
    # in between (here as the default the listing applied was recorded) was counted in the
    # version and missing from the list; the page took that version as seen and never drew
    # the call, which waited for its default (allow) unseen.
    inbox = ApprovalInbox()
    due = inbox.request(**ASK, timeout_s=0.001, default="deny")
    time.sleep(0.01)  # its deadline passes: the listing applies its default
    asked: list[Approval] = []

    def ask_next(item: Approval) -> None:
        if item.id == due.id and not asked:
            asked.append(inbox.request(**ASK, timeout_s=60, default="allow", args={"c": "rm"}))

    inbox.add_listener(ask_next)
    listed = list_through_the_route(inbox)
    assert asked, "no call was asked as the list was read: nothing is tested"
    assert [a["id"] for a in listed["answered"]] == [due.id]
    shown = [a["id"] for a in listed["pending"]]
    # a page that has seen this version is woken again only when the version moves
    assert asked[0].id in shown or listed["version"] < inbox.version, (shown, listed["version"])
