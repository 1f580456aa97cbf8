"""Loading hooks from config files, each reference system's own format (:func:`load_config`)."""

from otelhooks._config._agent_os import (
    AGENT_EVENTS_POINTS,
    AgentEventsConfig,
    DllHookConfig,
    ScriptHookConfig,
)
from otelhooks._config._load import (
    FORMATS,
    ConfigErrors,
    ConfigSource,
    LoadedConfig,
    config_files,
    detect_format,
    inspect_config,
    load_config,
)
from otelhooks._config._native import import_handler

__all__ = [
    "AGENT_EVENTS_POINTS",
    "FORMATS",
    "AgentEventsConfig",
    "ConfigErrors",
    "ConfigSource",
    "DllHookConfig",
    "LoadedConfig",
    "ScriptHookConfig",
    "config_files",
    "detect_format",
    "import_handler",
    "inspect_config",
    "load_config",
]
