"""The agent event log: ``agent_events`` hooks, in-memory and durable stores, ``GET /v1/events``,
the OTLP/HTTP receiver that feeds them, and a client. See ``docs/eventlog.md``.

Importing this package starts no thread, opens no file or socket and does not import uvicorn
(the server imports it when it starts).
"""

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
