"""The agent event log: ``agent_events`` hooks, in-memory and durable stores, ``GET /v1/events``,
the OTLP/HTTP receiver that feeds them, and a client. See ``docs/eventlog.md``.

Importing this package starts no thread, opens no file or socket and does not import uvicorn
(the server imports it when it starts); each name's module is imported when the name is first
used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otelhooks._lazy import lazy_names

if TYPE_CHECKING:
    from otelhooks._eventlog._agent_events import (
        DEFAULT_NOTICE,
        POINT_EVENTS,
        AgentEvents,
        Notice,
        NoticeSink,
        entry_from_event,
        open_event_log,
    )
    from otelhooks._eventlog._client import EventLogClient, EventLogError
    from otelhooks._eventlog._http import DEFAULT_MAX_WAITERS, EventLogApp
    from otelhooks._eventlog._load import load_agent_events
    from otelhooks._eventlog._model import EventBatch, EventEntry, EventLog, EventRecord, LogStats
    from otelhooks._eventlog._otlp import OtlpDecodeError, decode_traces
    from otelhooks._eventlog._params import DEFAULT_LIMIT, DEFAULT_WAIT_S, MAX_LIMIT, MAX_WAIT_S
    from otelhooks._eventlog._ring import RingEventLog
    from otelhooks._eventlog._server import ADMIN_TOKEN_ENV, EventLogServer, serve
    from otelhooks._eventlog._sqlite import SqliteEventLog

__all__ = [
    "ADMIN_TOKEN_ENV",
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_WAITERS",
    "DEFAULT_NOTICE",
    "DEFAULT_WAIT_S",
    "MAX_LIMIT",
    "MAX_WAIT_S",
    "POINT_EVENTS",
    "AgentEvents",
    "EventBatch",
    "EventEntry",
    "EventLog",
    "EventLogApp",
    "EventLogClient",
    "EventLogError",
    "EventLogServer",
    "EventRecord",
    "LogStats",
    "Notice",
    "NoticeSink",
    "OtlpDecodeError",
    "RingEventLog",
    "SqliteEventLog",
    "decode_traces",
    "entry_from_event",
    "load_agent_events",
    "open_event_log",
    "serve",
]

# Each name is imported from its module on first use: the bridge's approvals need only
# _signal, and importing every module here would load the server, the stores and the OTLP
# decoder into each hook process.
_WHERE: dict[str, str] = {
    "ADMIN_TOKEN_ENV": "otelhooks._eventlog._server",
    "AgentEvents": "otelhooks._eventlog._agent_events",
    "DEFAULT_LIMIT": "otelhooks._eventlog._params",
    "DEFAULT_MAX_WAITERS": "otelhooks._eventlog._http",
    "DEFAULT_NOTICE": "otelhooks._eventlog._agent_events",
    "DEFAULT_WAIT_S": "otelhooks._eventlog._params",
    "EventBatch": "otelhooks._eventlog._model",
    "EventEntry": "otelhooks._eventlog._model",
    "EventLog": "otelhooks._eventlog._model",
    "EventLogApp": "otelhooks._eventlog._http",
    "EventLogClient": "otelhooks._eventlog._client",
    "EventLogError": "otelhooks._eventlog._client",
    "EventLogServer": "otelhooks._eventlog._server",
    "EventRecord": "otelhooks._eventlog._model",
    "LogStats": "otelhooks._eventlog._model",
    "MAX_LIMIT": "otelhooks._eventlog._params",
    "MAX_WAIT_S": "otelhooks._eventlog._params",
    "Notice": "otelhooks._eventlog._agent_events",
    "NoticeSink": "otelhooks._eventlog._agent_events",
    "OtlpDecodeError": "otelhooks._eventlog._otlp",
    "POINT_EVENTS": "otelhooks._eventlog._agent_events",
    "RingEventLog": "otelhooks._eventlog._ring",
    "SqliteEventLog": "otelhooks._eventlog._sqlite",
    "decode_traces": "otelhooks._eventlog._otlp",
    "entry_from_event": "otelhooks._eventlog._agent_events",
    "load_agent_events": "otelhooks._eventlog._load",
    "open_event_log": "otelhooks._eventlog._agent_events",
    "serve": "otelhooks._eventlog._server",
}


__getattr__ = lazy_names(__name__, _WHERE)
