"""Reading an agent-OS ``kind: agent_events`` file: ``load_agent_events(path)``.

A small function on purpose: it reads the file through the general loader's bounded parser and
its ``kind:`` document loader, so a file means the same here as in ``otelhooks validate``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from otelhooks._config import AgentEventsConfig
from otelhooks._config._agent_os_load import load_agent_os
from otelhooks._config._load import ConfigErrors
from otelhooks._config._parse import parse_file
from otelhooks._errors import ConfigError

__all__ = ["load_agent_events", "read_yaml"]


def read_yaml(path: Path) -> Any:
    """The data of the first document of a YAML (or JSON) file, with YAML 1.2 booleans and the
    config parser's bounds (size, nesting, alias expansion).

    Raises:
        ConfigError: the file cannot be read or parsed.
    """
    return parse_file(Path(path))[0].data


def load_agent_events(path: str | Path) -> AgentEventsConfig:
    """Read one agent-OS ``kind: agent_events`` YAML (or JSON) file.

    A relative ``path`` (the SQLite file of a durable log) is resolved against the file's
    directory.

    Raises:
        ConfigError: naming the file, the field and the line (several problems:
            :class:`~otelhooks._config.ConfigErrors`).

    Example:
        >>> config = load_agent_events("examples/agent-os/hooks/events.yaml")
        >>> config.name
        'demo_events'
    """
    path = Path(path)
    document = parse_file(path)[0]
    data = document.data
    if not isinstance(data, dict) or data.get("kind") != "agent_events":
        raise ConfigError("expected a mapping with kind: agent_events", file=str(path))
    errors: list[ConfigError] = []
    _, configs = load_agent_os(document, errors)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigErrors(errors)
    return configs[0]
