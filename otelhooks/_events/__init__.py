"""Lifecycle events: the registry of canonical names and dialect aliases, and payload models."""

from otelhooks._events._payloads import *  # noqa: F403
from otelhooks._events._payloads import __all__ as _payload_names
from otelhooks._events._registry import EVENTS, Dialect, EventSpec, all_event_names, resolve_event

__all__ = [*_payload_names, "EVENTS", "Dialect", "EventSpec", "all_event_names", "resolve_event"]
