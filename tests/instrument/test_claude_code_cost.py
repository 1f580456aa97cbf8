"""Claude Code's own ``cost_usd`` (its ``api_request`` log events, received by ``otelhooks
serve``) is each call's ``costUsd`` and adds up to the session's running total."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from otelhooks import serve
from tests._webhook_server import webhook_server
from tests.integrations.test_claude_code_serve import AUTH, SESSION, TOKEN, _api_request_log


def test_each_api_request_costs_what_claude_code_says_and_the_session_adds_up(
    tmp_path: Path,
) -> None:
    with webhook_server() as sink:
        path = tmp_path / "llm.yaml"
        path.write_text(
            "hooks:\n  - id: llm-audit\n    type: llm_output\n"
            f'    webhook: {{url: "{sink.url}/llm"}}\n'
        )
        server = serve([path], token=TOKEN)
        try:
            headers = {**AUTH, "Content-Type": "application/x-protobuf"}
            for _ in range(2):
                body = _api_request_log().SerializeToString()
                response = httpx.post(server.url + "/v1/logs", content=body, headers=headers)
                assert response.status_code == 200
            got = [r.json() for r in sink.wait_for("/llm", 2, timeout_s=60)]
        finally:
            server.stop()
    events = [g.get("payload", g) for g in got]
    assert len(events) == 2
    assert [e["costUsd"] for e in events] == [pytest.approx(0.00036)] * 2
    assert {e["sessionKey"] for e in events} == {SESSION}
    # deliveries may arrive in either order: the totals as each call was received
    totals = sorted((e["spend"]["session"] for e in events), key=lambda t: t["costUsd"])
    assert [t["costUsd"] for t in totals] == [pytest.approx(0.00036), pytest.approx(0.00072)]
    # input as the GenAI conventions count it for Anthropic: 30 uncached + 1,000 read from the
    # cache + 200 written to it, per call (Claude Code's input_tokens alone would undercount)
    assert [t["inputTokens"] for t in totals] == [1230, 2460]


def test_a_session_budget_denies_claude_codes_next_tool_call_once_its_cost_passed_it(
    tmp_path: Path,
) -> None:
    from tests.integrations.test_claude_code_serve import ROUTE, _bash

    path = tmp_path / "settings.json"
    path.write_text(
        '{"hooks": {"PreToolUse": [{"hooks": [{"type": "budget", "session_usd": 0.0003}]}]}}'
    )
    server = serve([path], token=TOKEN)
    try:
        allowed = httpx.post(
            server.url + ROUTE, json=_bash("PreToolUse", "toolu_b1", "ls"), headers=AUTH
        )
        headers = {**AUTH, "Content-Type": "application/x-protobuf"}
        body = _api_request_log().SerializeToString()  # Claude Code says: $0.00036
        assert httpx.post(server.url + "/v1/logs", content=body, headers=headers).is_success
        denied = httpx.post(
            server.url + ROUTE, json=_bash("PreToolUse", "toolu_b2", "ls"), headers=AUTH
        )
    finally:
        server.stop()
    assert allowed.json() == {}
    answer = denied.json()["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert (
        "budget: session cost $0.0004, past its limit of $0.0003"
        in (answer["permissionDecisionReason"])
    )


BUDGET = '{"hooks": {"PreToolUse": [{"hooks": [{"type": "budget", "session_usd": 0.0003}]}]}}'


def _decision(url: str, use_id: str) -> str:
    from tests.integrations.test_claude_code_serve import ROUTE, _bash

    answer = httpx.post(url + ROUTE, json=_bash("PreToolUse", use_id, "ls"), headers=AUTH)
    assert answer.status_code == 200
    return str((answer.json().get("hookSpecificOutput") or {}).get("permissionDecision", "allow"))


def _costs(url: str) -> None:
    headers = {**AUTH, "Content-Type": "application/x-protobuf"}
    body = _api_request_log().SerializeToString()  # Claude Code says: $0.00036
    assert httpx.post(url + "/v1/logs", content=body, headers=headers).is_success


def test_a_session_past_its_budget_is_still_denied_after_serve_restarts(tmp_path: Path) -> None:
    # the sessions live beside a durable event log (they survive a restart): so does the spend
    settings = tmp_path / "settings.json"
    settings.write_text(BUDGET)
    events = tmp_path / "events.yaml"
    events.write_text(
        f"kind: agent_events\nname: cc\ndurable: true\npath: {tmp_path / 'events.sqlite3'}\n"
    )
    first = serve([settings, events], token=TOKEN)
    try:
        _costs(first.url)
        before = _decision(first.url, "toolu_r1")
    finally:
        first.stop()
    second = serve([settings, events], token=TOKEN)
    try:
        after = _decision(second.url, "toolu_r2")
    finally:
        second.stop()
    assert before == "deny"
    assert after == "deny"  # was allow: the restarted serve started the session from $0


def test_a_real_serve_killed_9_and_started_again_still_denies_a_session_past_its_budget(
    tmp_path: Path,
) -> None:
    from tests.reliability._serve_proc import INGEST, ServeProc

    guard = tmp_path / "guard.yaml"
    guard.write_text(
        "hooks:\n  - id: cap\n    type: beforeToolCall\n    budget: {session_usd: 0.0003}\n"
    )
    events = tmp_path / "events.yaml"
    events.write_text(
        f"kind: agent_events\nname: cc\ndurable: true\npath: {tmp_path / 'events.sqlite3'}\n"
    )
    args = ("--hooks", str(guard), "--hooks", str(events), "--no-web")
    auth = {"Authorization": f"Bearer {INGEST}"}
    first = ServeProc(tmp_path, *args)
    try:
        body = _api_request_log().SerializeToString()
        headers = {**auth, "Content-Type": "application/x-protobuf"}
        assert httpx.post(first.url + "/v1/logs", content=body, headers=headers).is_success
    finally:
        first.kill9()  # no shutdown of any kind: what was acknowledged must be on disk
    second = ServeProc(tmp_path, *args)
    try:
        from tests.integrations.test_claude_code_serve import ROUTE, _bash

        answer = httpx.post(
            second.url + ROUTE, json=_bash("PreToolUse", "toolu_k1", "ls"), headers=auth
        )
    finally:
        second.stop()
    assert answer.status_code == 200, second.output()
    assert answer.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
