"""Work ``otelhooks serve`` no longer does per request (issue #33 point 5), against a real server
on 127.0.0.1: the hook route's spans are built only when something receives them, and a
client's ``Host`` is parsed once, a rebinding page's still refused on every request. The work
is counted with ``sys.setprofile`` on the server's threads (calls of the SDK's
``Tracer.start_span`` and of ``ipaddress.ip_address``), so the figures do not depend on the
machine's load."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelhooks import serve

pytestmark = pytest.mark.timeout(60)

TOKEN = "s3cret-admin"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROUTE = "/v1/hooks/claude-code"


@contextmanager
def counting_calls(*names: tuple[str, str]) -> Iterator[dict[tuple[str, str], int]]:
    """Count the calls of the Python functions ``(file name ending, function name)`` made on
    threads started inside the block (and this one)."""
    counts = dict.fromkeys(names, 0)
    lock = threading.Lock()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        for ending, name in names:
            if code.co_name == name and code.co_filename.endswith(ending):
                with lock:
                    counts[ending, name] += 1

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        yield counts
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def _turn(session: str) -> list[dict[str, Any]]:
    common = {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp"}
    tool = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}
    return [
        {**common, "hook_event_name": "UserPromptSubmit", "prompt": "list"},
        {**common, **tool, "hook_event_name": "PreToolUse"},
        {**common, **tool, "hook_event_name": "PostToolUse", "tool_response": "ok"},
        {**common, "hook_event_name": "Stop"},
    ]


START_SPAN = ("opentelemetry/sdk/trace/__init__.py", "start_span")


def _no_otlp(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


def test_the_hook_route_builds_no_span_when_nothing_receives_spans(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # serve --no-web without an exporter or OTLP: each event's span was built through the SDK
    # (the sampler, the attribute cleaning, the processor) and reached no exporter
    _no_otlp(monkeypatch)
    with counting_calls(START_SPAN) as counts, serve(start=False, token=TOKEN, web=False) as server:
        for event in _turn("s-unread"):
            assert httpx.post(server.url + ROUTE, json=event, headers=AUTH).status_code == 200
    assert counts[START_SPAN] == 0


def test_the_hook_route_still_exports_its_spans_to_an_exporter_or_the_web_view(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_otlp(monkeypatch)
    exported = InMemorySpanExporter()
    with serve(start=False, token=TOKEN, web=False, span_exporters=[exported]) as server:
        for event in _turn("s-exported"):
            assert httpx.post(server.url + ROUTE, json=event, headers=AUTH).status_code == 200
    names = sorted(s.name for s in exported.get_finished_spans())
    assert names == ["execute_tool Bash", "invoke_agent claude-code"]
    # the web view's index reads them
    with counting_calls(START_SPAN) as counts, serve(start=False, token=TOKEN) as server:
        for event in _turn("s-viewed"):
            assert httpx.post(server.url + ROUTE, json=event, headers=AUTH).status_code == 200
    assert counts[START_SPAN] >= 2


IP_ADDRESS = ("ipaddress.py", "ip_address")


def test_a_clients_host_is_parsed_once_and_a_rebinding_host_is_refused_every_time() -> None:
    with counting_calls(IP_ADDRESS) as counts, serve(start=False, token=TOKEN, web=False) as server:
        host = f"127.0.0.1:{server.port}"
        started = counts[IP_ADDRESS]  # its own address's, as it started
        with httpx.Client(base_url=server.url, headers=AUTH, timeout=10) as client:
            version = [
                client.get("/v1/events?mode=version", headers={"host": host}).status_code
                for _ in range(20)
            ]
            parsed = counts[IP_ADDRESS] - started
            # more answered hosts than are remembered, then a rebinding page's, each time
            others = [
                client.get("/v1/events?mode=version", headers={"host": f"127.0.0.{n}"})
                for n in range(2, 202)
            ]
            rebound = [
                client.get("/v1/events?mode=version", headers={"host": "rebind.test"})
                for _ in range(3)
            ]
            again = client.get("/v1/events?mode=version", headers={"host": host})
    assert version == [200] * 20
    assert parsed == 1  # was 20: one parse of the same Host a request
    assert {r.status_code for r in others} == {200}
    assert [r.status_code for r in rebound] == [403] * 3
    assert "rebind.test" in rebound[-1].json()["message"]
    assert again.status_code == 200
