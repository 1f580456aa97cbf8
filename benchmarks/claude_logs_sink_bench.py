"""What serve's ``/v1/logs`` sink costs per Claude Code ``api_request`` record.

``python benchmarks/claude_logs_sink_bench.py N [t]``: N records (distinct calls of one session)
through ``ClaudeTelemetry.on_logs`` on in-memory sessions, the first one as a warm-up; with ``t``
it prints the CPU time per record. Under callgrind, run it with N and with 0 and subtract.
"""

from __future__ import annotations

import sys
import time

from otelhooks._engine import HooksEngine
from otelhooks._eventlog._otlp_signals import ReceivedLog
from otelhooks.integrations.coding_agents._sessions import ServerSessions
from otelhooks.integrations.coding_agents._telemetry import ClaudeTelemetry

# the attributes Claude Code 2.1 puts on an api_request (its monitoring docs), values made up
ATTRIBUTES = {
    "session.id": "sess-1",
    "event.name": "api_request",
    "event.timestamp": "2026-12-05T20:00:00.000Z",
    "event.sequence": 0,
    "model": "claude-sonnet-4-5",
    "input_tokens": 30,
    "output_tokens": 12,
    "cache_read_tokens": 1000,
    "cache_creation_tokens": 200,
    "cost_usd": 0.00036,
    "duration_ms": 2100,
    "prompt.id": "p-1",
    "request_id": "req_1",
    "user.account_uuid": "u",
    "organization.id": "o",
    "terminal.type": "xterm",
    "app.version": "2.1.0",
}


def main() -> None:
    n = int(sys.argv[1])
    records = [
        ReceivedLog(
            "claude_code.api_request",
            {**ATTRIBUTES, "event.sequence": i},
            None,
            1_700_000_000_000_000_000 + i,
            0,
            0,
        )
        for i in range(n)
    ]
    telemetry = ClaudeTelemetry(ServerSessions(), engine=HooksEngine())
    telemetry.on_logs(records[:1])  # the tables and statements warmed
    started = time.process_time()
    telemetry.on_logs(records[1:])
    if len(sys.argv) > 2:
        print(f"{(time.process_time() - started) / max(1, n - 1) * 1e6:.1f} us a record")


if __name__ == "__main__":
    main()
