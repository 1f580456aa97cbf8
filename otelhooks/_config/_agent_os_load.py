"""Loading the agent OS's ``kind:`` YAML documents (models in :mod:`._agent_os`).

``agent_events`` documents are returned as validated :class:`AgentEventsConfig` objects (the
event log is built from them elsewhere; a relative ``path`` is resolved against the file's
folder). ``script_hook`` becomes one script hook per point in ``on``, ``dll_hook`` one plugin hook
per point, ``budget`` one budget guard; their id is ``name`` (default: the file name), or
``name:point`` when ``on`` lists several points.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from otelhooks._config._agent_os import (
    AgentEventsConfig,
    BudgetHookConfig,
    DllHookConfig,
    ScriptHookConfig,
)
from otelhooks._config._build import absolute_script, build_hook
from otelhooks._config._parse import Document
from otelhooks._errors import ConfigError
from otelhooks._hooks import Hook

__all__ = ["AGENT_OS_KINDS", "load_agent_os"]

AGENT_OS_KINDS: Final[dict[str, type[BaseModel]]] = {
    "agent_events": AgentEventsConfig,
    "script_hook": ScriptHookConfig,
    "dll_hook": DllHookConfig,
    "budget": BudgetHookConfig,
}
_FIELD_MAP: Final = {"type": "on", "plugin": "hook"}


def _validate(doc: Document, errors: list[ConfigError]) -> BaseModel | None:
    data: Any = doc.data
    kind = data.get("kind")
    model = AGENT_OS_KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        errors.append(
            doc.error(
                f"kind must be one of {', '.join(AGENT_OS_KINDS)}, not {kind!r}",
                ("kind",),
                field="kind",
            )
        )
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for problem in exc.errors():
            loc = tuple(problem["loc"])
            field = ".".join(str(p) for p in loc) or None
            message = str(problem["msg"]).removeprefix("Value error, ")
            errors.append(doc.error(message, loc, hook_id=_name(doc, data), field=field))
        return None


def _name(doc: Document, data: Any) -> str:
    name = data.get("name") if isinstance(data, dict) else None
    if isinstance(name, str) and name:
        return name
    stem = doc.path.stem
    return stem if doc.index == 0 else f"{stem}#{doc.index}"


def _script_ref(config: ScriptHookConfig, point: str) -> str:
    path, sep, function = config.script.rpartition(":")
    if sep and path.endswith(".py") and function.isidentifier():
        return config.script
    return f"{config.script}:{config.function or point}"


def _plugin_folder(doc: Document, config: DllHookConfig, errors: list[ConfigError]) -> bool:
    if config.path is None:
        return True
    folder = (doc.path.parent / config.path).resolve()
    if not folder.is_dir():
        errors.append(
            doc.error(
                "path must be a folder of plugin distributions (otelhooks plugins are Python "
                "packages publishing entry points in the 'otelhooks.hooks' group)",
                ("path",),
                hook_id=_name(doc, doc.data),
                field="path",
            )
        )
        return False
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
    return True


def load_agent_os(
    doc: Document, errors: list[ConfigError]
) -> tuple[list[Hook], list[AgentEventsConfig]]:
    """The hooks and ``agent_events`` configs of one ``kind:`` document."""
    config = _validate(doc, errors)
    if config is None:
        return [], []
    if isinstance(config, AgentEventsConfig):
        if config.path and not Path(config.path).is_absolute():
            config = config.model_copy(update={"path": str(doc.path.parent / config.path)})
        return [], [config]
    if isinstance(config, BudgetHookConfig):
        return _budget_hook(doc, config, errors), []
    assert isinstance(config, ScriptHookConfig | DllHookConfig)
    if isinstance(config, DllHookConfig) and not _plugin_folder(doc, config, errors):
        return [], []
    name = config.name or _name(doc, doc.data)
    hooks: list[Hook] = []
    for index, point in enumerate(config.on):
        hook_id = name if len(config.on) == 1 else f"{name}:{point}"
        entry: dict[str, Any] = {
            "id": hook_id,
            "type": point,
            "matcher": config.matcher,
            "timeout": config.timeout,
            "on_error": config.on_error,
            "mode": config.mode,
        }
        if isinstance(config, ScriptHookConfig):
            entry["script"] = absolute_script(_script_ref(config, point), doc.path.parent)
        else:
            entry["plugin"] = config.hook
        hook = build_hook(
            doc,
            entry,
            (),
            hook_id=hook_id,
            field_map=_FIELD_MAP,
            event_loc=("on", index),
            errors=errors,
        )
        if hook is not None:
            hooks.append(hook)
    return hooks, []


def _budget_hook(doc: Document, config: BudgetHookConfig, errors: list[ConfigError]) -> list[Hook]:
    """``kind: budget``: one budget guard (a ``before_tool_call`` hook that also guards model
    calls)."""
    hook_id = config.name or _name(doc, doc.data)
    limits = config.model_dump(exclude={"kind", "name", "mode"}, exclude_none=True)
    entry = {"id": hook_id, "type": "before_tool_call", "mode": config.mode, "budget": limits}
    field_map = {f"budget.{key}": key for key in limits}
    hook = build_hook(doc, entry, (), hook_id=hook_id, field_map=field_map, errors=errors)
    return [hook] if hook is not None else []
