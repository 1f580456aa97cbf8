"""The web view's routes over real HTTP: what they show, and who may see or change anything."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from otelhooks import EventLogServer
from tests.web._otlp import agent_run, ids, post, span
from tests.web.conftest import AUTH, TOKEN


def test_operations_list_runs_newest_first_with_their_counts(api: httpx.Client) -> None:
    post(api, agent_run("first-bot"))
    post(api, agent_run("second-bot", denied_tool="rm"))
    body = api.get("/v1/ui/operations").json()
    assert [op["agent"] for op in body["operations"]] == ["second-bot", "first-bot"]
    second = body["operations"][0]
    assert (second["tool_calls"], second["denials"], second["tokens_in"]) == (1, 1, 120)
    assert second["decisions"] == ["denied"]
    assert second["service"] == "web-test"


def test_operations_filter_by_agent_tool_decision_and_error(api: httpx.Client) -> None:
    post(api, agent_run("a-bot"))
    post(api, agent_run("b-bot", denied_tool="rm"))
    trace_id, span_id = ids()
    post(
        api,
        [
            span(
                trace_id,
                span_id,
                "invoke_agent c-bot",
                error=True,
                attributes={"gen_ai.agent.name": "c-bot"},
            )
        ],
    )

    def agents(**query: str) -> list[str]:
        ops = api.get("/v1/ui/operations", params=query).json()["operations"]
        return [op["agent"] for op in ops]

    assert agents(agent="a-bot") == ["a-bot"]
    assert agents(tool="rm") == ["b-bot"]
    assert agents(decision="denied") == ["b-bot"]
    assert agents(errors="1") == ["c-bot"]


def test_operations_page_with_before(api: httpx.Client) -> None:
    for n in range(5):
        post(api, agent_run(f"bot-{n}"))
    first = api.get("/v1/ui/operations", params={"limit": 2}).json()
    second = api.get(
        "/v1/ui/operations", params={"limit": 2, "before": first["next_before"]}
    ).json()
    assert [op["agent"] for op in first["operations"] + second["operations"]] == [
        "bot-4",
        "bot-3",
        "bot-2",
        "bot-1",
    ]


def test_trace_route_marks_the_hook_decision_with_who_and_why(api: httpx.Client) -> None:
    spans = agent_run("guarded-bot", denied_tool="rm")
    post(api, spans)
    body = api.get(f"/v1/ui/traces/{spans[0]['traceId']}").json()
    tool = next(s for s in body["spans"] if s["n"] == "execute_tool rm")
    assert tool["d"] == {"kind": "denied", "by": "no-rm", "why": "rm is not allowed"}
    assert len(body["spans"]) == 4


def test_content_attributes_are_not_kept_without_content_capture(api: httpx.Client) -> None:
    trace_id, span_id = ids()
    post(
        api,
        [
            span(
                trace_id,
                span_id,
                "execute_tool sh",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.call.arguments": '{"password": "hunter2"}',
                },
            )
        ],
    )
    body = api.get(f"/v1/ui/traces/{trace_id}").json()
    assert "gen_ai.tool.call.arguments" not in body["spans"][0]["a"]
    assert "hunter2" not in api.get(f"/v1/ui/traces/{trace_id}").text


def test_changes_long_poll_returns_when_a_span_arrives(
    api: httpx.Client, server: EventLogServer
) -> None:
    now = api.get("/v1/ui/changes", params={"since": -1, "approvals": -1}).json()
    started = time.monotonic()
    with httpx.Client(base_url=server.url, headers=AUTH, timeout=10) as other:
        import threading

        timer = threading.Timer(0.3, lambda: post(other, agent_run("late-bot")))
        timer.start()
        moved = api.get(
            "/v1/ui/changes",
            params={
                "since": now["version"],
                "approvals": now["approvals"],
                "timeout": 5,
            },
        ).json()
        timer.join()
    assert moved["version"] > now["version"]
    assert time.monotonic() - started < 3


def test_every_route_wants_the_admin_token(server: EventLogServer) -> None:
    for path in (
        "/v1/ui/operations",
        "/v1/ui/session",
        "/v1/approvals",
        f"/v1/ui/traces/{'a' * 32}",
    ):
        assert httpx.get(f"{server.url}{path}").status_code == 401
        wrong = httpx.get(f"{server.url}{path}", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401


def test_a_page_without_a_session_redirects_to_the_login_form(server: EventLogServer) -> None:
    for path in ("/", "/approvals", "/static/app.js"):
        response = httpx.get(f"{server.url}{path}")
        assert response.status_code == 303
        assert response.headers["location"] == "/login"
    assert httpx.get(f"{server.url}/login").status_code == 200


def test_the_token_in_a_url_is_not_accepted(server: EventLogServer) -> None:
    response = httpx.get(f"{server.url}/v1/ui/operations", params={"token": TOKEN})
    assert response.status_code == 401


@contextmanager
def _login(server: EventLogServer) -> Iterator[httpx.Client]:
    # a browser's requests name the page they come from (Sec-Fetch-Site, Origin or Referer):
    # serve answers no cookie request that names none
    page = {"referer": f"{server.url}/"}
    with httpx.Client(base_url=server.url, timeout=10, headers=page) as client:
        response = client.post("/login", data={"token": TOKEN}, headers={"origin": server.url})
        assert response.status_code == 303
        yield client


def test_login_sets_an_httponly_samesite_strict_session_cookie(server: EventLogServer) -> None:
    with httpx.Client(base_url=server.url) as client:
        response = client.post("/login", data={"token": TOKEN}, headers={"origin": server.url})
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert "Path=/" in cookie
    assert TOKEN not in cookie
    assert response.headers["location"] == "/"


def test_a_wrong_token_gets_no_session(server: EventLogServer) -> None:
    with httpx.Client(base_url=server.url) as client:
        response = client.post("/login", data={"token": "guess"}, headers={"origin": server.url})
    assert "set-cookie" not in response.headers
    assert response.headers["location"] == "/login?failed=1"


def test_a_cross_origin_login_is_refused(server: EventLogServer) -> None:
    response = httpx.post(
        f"{server.url}/login", data={"token": TOKEN}, headers={"origin": "http://evil.example"}
    )
    assert response.status_code == 403
    assert "set-cookie" not in response.headers


def test_a_cookie_post_needs_the_csrf_token_and_the_same_origin(server: EventLogServer) -> None:
    with _login(server) as client:
        csrf = client.get("/v1/ui/session").json()["csrf"]
        item = _ask(server)
        url = f"/v1/approvals/{item['id']}"
        body = {"decision": "deny"}
        assert client.post(url, json=body, headers={"origin": server.url}).status_code == 403
        evil = {"origin": "http://evil.example", "x-csrf-token": csrf}
        assert client.post(url, json=body, headers=evil).status_code == 403
        good = {"origin": server.url, "x-csrf-token": csrf}
        answered = client.post(url, json=body, headers=good)
    assert answered.status_code == 200
    assert answered.json()["answered_by"] == "browser"


def test_pages_carry_a_csp_without_inline_scripts(server: EventLogServer) -> None:
    with _login(server) as client:
        for path in ("/", "/approvals", "/login"):
            response = client.get(path)
            csp = response.headers["content-security-policy"]
            assert "script-src 'self'" in csp
            assert "unsafe-inline" not in csp
            assert response.headers["x-frame-options"] == "DENY"


def test_static_html_has_no_inline_script_or_event_handler() -> None:
    import re
    from importlib import resources

    folder = resources.files("otelhooks.web").joinpath("static")
    for item in folder.iterdir():
        if item.name.endswith(".html"):
            text = item.read_text()
            assert not re.search(r"<script(?![^>]*\bsrc=)", text), item.name
            assert not re.search(r"\son[a-z]+\s*=", text), item.name
        if item.name.endswith(".js"):
            text = item.read_text()
            for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
                assert sink not in text, (item.name, sink)


def _ask(server: EventLogServer, **fields: object) -> dict[str, object]:
    body = {
        "hook_id": "ask",
        "tool": "Bash",
        "timeout_s": 30,
        "default": "deny",
        "args": {"command": "ls"},
        "editable": True,
        **fields,
    }
    response = httpx.post(f"{server.url}/v1/approvals", json=body, headers=AUTH)
    assert response.status_code == 201, response.text
    created: dict[str, object] = response.json()
    return created
