"""Reading an agent-OS ``kind: agent_events`` file: ``load_agent_events(path)``.

A small function on purpose: the general multi-format loader can call it for the documents it
recognises as ``agent_events``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from otelhooks._config import AgentEventsConfig
from otelhooks._errors import ConfigError

__all__ = ["load_agent_events", "read_yaml"]


class _Yaml12Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans: only true/false, so the seed's ``on:`` key stays
    the string ``"on"`` (YAML 1.1 reads it as ``True``)."""


_BOOL = "tag:yaml.org,2002:bool"
_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def read_yaml(path: Path) -> Any:
    """One YAML (or JSON) document with YAML 1.2 booleans."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_Yaml12Loader)


def load_agent_events(path: str | Path) -> AgentEventsConfig:
    """Read one agent-OS ``kind: agent_events`` YAML (or JSON) file.

    A relative ``path`` (the SQLite file of a durable log) is resolved against the file's
    directory.

    Raises:
        ConfigError: naming the file, the field and, for syntax errors, the line.
    """
    path = Path(path)
    try:
        data = read_yaml(path)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", file=str(path)) from None
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise ConfigError(f"invalid YAML: {exc.problem}", file=str(path), line=line) from None
    if not isinstance(data, dict) or data.get("kind") != "agent_events":
        raise ConfigError("expected a mapping with kind: agent_events", file=str(path))
    try:
        config = AgentEventsConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(x) for x in first["loc"]) or None
        raise ConfigError(first["msg"], file=str(path), field=field) from None
    if config.path and not Path(config.path).is_absolute():
        config = config.model_copy(update={"path": str(path.parent / config.path)})
    return config
