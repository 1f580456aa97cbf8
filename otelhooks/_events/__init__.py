"""Lifecycle events: the registry of canonical names and dialect aliases, and payload models."""

from otelhooks._events import _agent_payloads, _base, _session_payloads, _tool_payloads
from otelhooks._events._agent_payloads import *  # noqa: F403
from otelhooks._events._base import *  # noqa: F403
from otelhooks._events._registry import EVENTS, Dialect, EventSpec, all_event_names, resolve_event
from otelhooks._events._session_payloads import *  # noqa: F403
from otelhooks._events._spend import CostTotals, RunningSpend
from otelhooks._events._tool_payloads import *  # noqa: F403
from otelhooks._events._tool_result import ToolResult

__all__ = [
    *_base.__all__,
    *_agent_payloads.__all__,
    *_tool_payloads.__all__,
    *_session_payloads.__all__,
    "CostTotals",
    "RunningSpend",
    "ToolResult",
    "EVENTS",
    "Dialect",
    "EventSpec",
    "all_event_names",
    "resolve_event",
]
