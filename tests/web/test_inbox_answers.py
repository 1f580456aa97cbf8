"""What an answer to the inbox can and cannot change, over serve's real routes."""

from __future__ import annotations

import time

import httpx

from otelhooks import EventLogServer
from tests.web.conftest import AUTH


def test_an_answer_after_the_deadline_loses_to_the_default(server: EventLogServer) -> None:
    with httpx.Client(base_url=server.url, headers=AUTH) as api:
        body = {"hook_id": "ask", "tool": "Bash", "timeout_s": 0.3, "default": "deny"}
        item = api.post("/v1/approvals", json={**body, "args": {"command": "rm -rf ~"}}).json()
        time.sleep(0.6)  # nobody answered in time, and the asker is between two long-polls
        late = api.post(f"/v1/approvals/{item['id']}", json={"decision": "allow"})
        got = api.get(f"/v1/approvals/{item['id']}").json()
    assert late.status_code == 409, late.json()
    assert (got["state"], got["answered_by"]) == ("denied", "timeout")
