"""With the SQLite default the approvals inbox is the process's: a second serve running in the
same process serves the same cards, and says so as it starts (docs/web.md, "One inbox per
process"). Real serves on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from structlog.testing import capture_logs

from otelhooks import serve
from tests.web.conftest import AUTH, TOKEN, ask, clearing_inbox

pytestmark = pytest.mark.timeout(60)

SAID = "another serve in this process already serves its approvals inbox"


def _said(logs: list[dict[str, Any]]) -> bool:
    return any(SAID in str(entry.get("event")) for entry in logs)


def test_a_second_serve_running_in_the_process_says_it_serves_the_same_cards() -> None:
    with capture_logs() as first_logs, clearing_inbox(serve(token=TOKEN)) as first:
        assert not _said(first_logs), "a serve an earlier test left running serves the inbox"
        with capture_logs() as second_logs, clearing_inbox(serve(token=TOKEN)) as second:
            assert _said(second_logs)
            asked = ask(first)
            listed = httpx.get(f"{second.url}/v1/approvals", params={"args": 0}, headers=AUTH)
            assert [item["id"] for item in listed.json()["pending"]] == [asked["id"]]


def test_a_serve_started_after_another_stopped_says_nothing() -> None:
    with capture_logs() as logs, clearing_inbox(serve(token=TOKEN)):
        assert not _said(logs), "a serve an earlier test left running serves the inbox"
    with capture_logs() as logs, clearing_inbox(serve(token=TOKEN)):
        assert not _said(logs)
