"""The MCP gateway embedded through its public API, with a user's span processor that raises
as the span of a server's ``sampling/createMessage`` starts (an audit store that is down), and
a ``tool_result_persist`` hook on the test server's ``ask`` tool: the gateway fails judging the
sampling request that a running ``ask`` call makes.

``python failing_span_gateway.py stdio`` (in front of ``mcp_server_app.py`` over stdio) or
``python failing_span_gateway.py http PORT UPSTREAM_URL``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

from otelhooks import HooksEngine
from otelhooks.mcp import McpGateway, run_http, run_stdio

SERVER_APP = Path(__file__).with_name("mcp_server_app.py")


class AuditSink(SpanProcessor):
    """Refuses the spans of the server's sampling requests, raising."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if span.name.startswith("sampling/createMessage"):
            raise RuntimeError("the audit store is down")


def redact(event: Any) -> None:
    for block in event.result["content"]:
        block["text"] = block["text"].replace("S-42-SECRET", "***")


def main() -> int:
    provider = TracerProvider()
    provider.add_span_processor(AuditSink())
    engine = HooksEngine(
        [{"id": "redact", "type": "tool_result_persist", "matcher": "^ask$", "handler": redact}]
    )
    transport = "tcp" if sys.argv[1] == "http" else "pipe"
    gateway = McpGateway(engine, provider.get_tracer("failing"), transport=transport)
    try:
        if sys.argv[1] == "http":
            return asyncio.run(run_http(gateway, "127.0.0.1", int(sys.argv[2]), sys.argv[3]))
        return asyncio.run(run_stdio(gateway, [sys.executable, str(SERVER_APP)]))
    finally:
        engine.shutdown(2)


if __name__ == "__main__":
    sys.exit(main())
