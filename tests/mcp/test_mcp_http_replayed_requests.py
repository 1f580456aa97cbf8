"""A request of the server (``sampling/createMessage``) that a resumed Streamable HTTP ``GET``
stream carries again (the SDK's event store replays every event after the client's
``Last-Event-ID``). Before, the gateway passed it on again although the client had answered
it: the client answered twice, its model sampled twice. Now a server request the client
answered, sent again with the same id, method and params, is not passed on (logged).

Real processes: the SDK server with an event store (``resumable_server.py``), the gateway, and
a raw HTTP client that answers the request on its ``GET`` stream, loses that stream and resumes
it from the stream's first event, as a client that kept an earlier event id does."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.mcp._harness import events, http_gateway, open_session

pytestmark = pytest.mark.timeout(90)

SERVER = Path(__file__).with_name("resumable_server.py")
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"}


def _ask(url: str, headers: dict[str, str], question: str, results: list[Any]) -> None:
    """Call the test server's ``ask`` tool (its sampling request goes to the GET stream)."""
    call = {
        "jsonrpc": "2.0",
        "id": len(results) + 7,
        "method": "tools/call",
        "params": {"name": "ask", "arguments": {"question": question}},
    }
    with httpx.Client(timeout=30) as client:
        response = client.post(url, json=call, headers=headers)
        results.extend(json.loads(m) for _, m in events(response.iter_lines()) if m.strip())


def _answer_asks(client: httpx.Client, url: str, headers: dict[str, str]) -> list[Any]:
    """Two ``ask`` calls, each sampling request read on one ``GET`` stream and answered;
    returns the ``(event id, request)`` of each."""
    asked: list[Any] = []
    with client.stream("GET", url, headers=headers) as stream:
        assert stream.status_code == 200
        lines = stream.iter_lines()
        for question in ("rain?", "snow?"):
            results: list[Any] = []
            asking = threading.Thread(target=_ask, args=(url, headers, question, results))
            asking.start()
            for event_id, data in events(lines):
                message = json.loads(data) if data.strip() else None
                if message is not None and message.get("method") == "sampling/createMessage":
                    answer = {"jsonrpc": "2.0", "id": message["id"], "result": SAMPLED}
                    assert client.post(url, json=answer, headers=headers).status_code == 202
                    asked.append((event_id, message))
                    break
            asking.join(30)
            assert [r["result"]["content"][0]["text"] for r in results] == ["yes"]
    return asked


def _resumed(client: httpx.Client, url: str, headers: dict[str, str]) -> list[Any]:
    """The messages of a resumed ``GET`` stream: its replay, until it ends or is quiet."""
    seen: list[Any] = []
    quiet = httpx.Timeout(30, read=3)
    try:
        with client.stream("GET", url, headers=headers, timeout=quiet) as stream:
            assert stream.status_code == 200
            seen.extend(json.loads(d) for _, d in events(stream.iter_lines()) if d.strip())
    except httpx.ReadTimeout:  # the replay is over; the stream stays open for new messages
        pass
    return seen


def test_a_server_request_the_client_answered_is_not_relayed_again_on_a_resumed_stream(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with http_gateway(tmp_path, [], app=SERVER) as url, httpx.Client(timeout=30) as client:
        headers = open_session(client, url, capabilities={"sampling": {}})
        (rain_event, rain), (_, snow) = _answer_asks(client, url, headers)
        assert rain["params"]["messages"][0]["content"]["text"] == "rain?"
        # the client's GET stream broke; it resumes after an earlier event it kept: the
        # server's event store sends the "snow?" request again, which the client answered
        replayed = _resumed(client, url, {**headers, "last-event-id": rain_event})
    # before: the "snow?" request again, which the client answers (its model samples) twice
    assert [m for m in replayed if m.get("method") == "sampling/createMessage"] == [], snow
    # the server did send it again: the gateway said it kept it from the client
    out, err = capfd.readouterr()
    assert "which the client answered, was not passed on again" in out + err
