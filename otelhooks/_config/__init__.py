"""Loading hooks from config files (each reference system's own format)."""

from otelhooks._config._agent_os import AGENT_EVENTS_POINTS, AgentEventsConfig
from otelhooks._config._native import import_handler, load_hook_files, load_hooks

__all__ = [
    "AGENT_EVENTS_POINTS",
    "AgentEventsConfig",
    "import_handler",
    "load_hook_files",
    "load_hooks",
]
