"""A header template whose environment value is not a valid HTTP header value (a token read from
a file with its trailing newline, say) is a configuration error, reported without the value.

httpx refuses such a header with an error that quotes it (``Illegal header value b'Bearer
<token>\\n'``); before the fix that text went into the control hook's span attribute
``otelhooks.hook.errors`` (exported) and a log line, and notifications retried it as a network
error until their deadline.
"""

from __future__ import annotations

import json
import secrets
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import structlog

from otelhooks import ToolResult, WebhookDeliverer
from otelhooks.testing import TestPipeline
from tests._webhook_server import Reply, WebhookServer, webhook_server

# Each makes the header value illegal: CR/LF (also a header injection), surrounding whitespace,
# a character outside ASCII. (NUL cannot be in an environment variable at all.)
BAD_ENDINGS = {
    "trailing-newline": "\n",
    "crlf-injection": "\r\nX-Injected: yes",
    "trailing-space": " ",
    "non-ascii": "\u00e9",
}


@pytest.fixture
def server() -> Iterator[WebhookServer]:
    with webhook_server() as s:
        s.routes["/control"] = Reply.json({"decision": "allow"})
        yield s


@pytest.fixture(params=sorted(BAD_ENDINGS))
def secret(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    value = "tok-" + secrets.token_hex(12)
    monkeypatch.setenv("HOOK_TOKEN", value + BAD_ENDINGS[request.param])
    return value


def webhook(server: WebhookServer, path: str, **options: Any) -> dict[str, Any]:
    return {
        "url": server.url + path,
        "headers": {"Authorization": "Bearer ${HOOK_TOKEN}"},
        "allowedEnvVars": ["HOOK_TOKEN"],
        **options,
    }


def run_tool(pipe: TestPipeline) -> ToolResult:
    with pipe.tracer.operation("agent") as op, op.step() as step:
        return step.run_tool("fs", "readFile", {"path": "a.txt"}, lambda path: "text")


def everything_recorded(pipe: TestPipeline, logs: Sequence[Mapping[str, Any]]) -> str:
    spans = [
        [s.name, dict(s.attributes or {}), [dict(e.attributes or {}) for e in s.events]]
        for s in pipe.spans()
    ]
    return json.dumps(spans, default=str) + json.dumps(logs, default=str)


def test_a_control_hook_blocks_on_a_configuration_error_that_does_not_quote_the_secret(
    pipe: TestPipeline, server: WebhookServer, secret: str
) -> None:
    pipe.register(
        {
            "id": "guard",
            "type": "beforeToolCall",
            "webhook": webhook(server, "/control", responseHandling="toolCall", onError="block"),
        }
    )
    with structlog.testing.capture_logs() as logs:
        result = run_tool(pipe)
    assert (result.state or {}).get("classification") == "hook_denied"
    errors = (pipe.span("execute_tool readFile").attributes or {})["otelhooks.hook.errors"]
    assert "configuration" in str(errors)
    assert secret not in everything_recorded(pipe, logs)
    assert server.requests("/control") == []  # nothing was sent with a broken header


def test_a_notification_is_dropped_at_once_as_a_configuration_error_without_the_secret(
    pipe: TestPipeline, server: WebhookServer, secret: str
) -> None:
    deliverer = WebhookDeliverer(
        metrics=pipe.oh.metrics,
        retry_deadline_s=30.0,
        outbox_path=Path(tempfile.mkdtemp()) / "outbox.sqlite3",
    )
    pipe.oh.engine.deliverer = deliverer
    pipe.register({"id": "notify", "type": "afterToolCall", "webhook": webhook(server, "/n")})
    try:
        with structlog.testing.capture_logs() as logs:
            run_tool(pipe)
            assert deliverer.flush(5)  # not retried for 30 s: a configuration error is final
    finally:
        deliverer.shutdown(5)
    dropped = {"otelhooks.drop.source": "webhook", "otelhooks.drop.reason": "configuration"}
    assert pipe.metric_total("otelhooks.dropped", dropped) == 1
    assert secret not in everything_recorded(pipe, logs)
    assert server.requests("/n") == []
