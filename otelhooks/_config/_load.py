"""One entry point for every config format: :func:`load_config`.

Each path is a file or a folder. A folder means the config files directly in it (``*.json``,
``*.yaml``, ``*.yml``, in name order, hidden files ignored; sub-folders are not read) — except
that a folder holding ``*.hook.json`` files is a workspace hooks folder, where, as in the
workspace engine, only those are read. Each file's format is found by name and content:

============== =====================================================================
format         recognised by
============== =====================================================================
``workspace``  a name ending in ``.hook.json``, or an object whose ``hooks`` is an object
``claude_settings`` Claude Code's ``settings.json``: ``hooks`` maps events to matcher groups,
               each with a ``hooks`` list of handlers (the rest of the file is ignored)
``agent_os``   an object with ``kind`` (``agent_events``, ``script_hook``, ``dll_hook``)
``kernel_app`` an object with ``capabilities`` (the kernel manifest) and its ``hooks``
``hook_list``  a list of hooks, or an object whose ``hooks`` is a list (otelhooks/LobeHub)
============== =====================================================================

Loading happens once, when called (a run loads its config at start; edits affect the next
load). It is all or nothing: every problem of every file is collected, each naming the file,
the hook, the field and the line, and any problem means nothing is returned.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import structlog

from otelhooks._config._agent_os import AgentEventsConfig
from otelhooks._config._agent_os_load import load_agent_os
from otelhooks._config._build import ConfigWarning
from otelhooks._config._claude_settings import is_claude_settings, load_claude_settings
from otelhooks._config._kernel import load_kernel_app
from otelhooks._config._native import load_hook_list
from otelhooks._config._parse import JSON_SUFFIXES, YAML_SUFFIXES, Document, parse_file
from otelhooks._config._workspace import WORKSPACE_SUFFIX, load_workspace, workspace_id_of
from otelhooks._errors import ConfigError
from otelhooks._hooks import Hook

__all__ = [
    "FORMATS",
    "ConfigErrors",
    "ConfigSource",
    "LoadedConfig",
    "config_files",
    "detect_format",
    "inspect_config",
    "load_config",
]

FORMATS: Final = ("workspace", "claude_settings", "agent_os", "kernel_app", "hook_list")
# why an empty folder gives no hooks (``ConfigSource.skipped``)
NO_CONFIG_FILES: Final = "no config files here"
_log = structlog.get_logger("otelhooks")

PathLike = str | os.PathLike[str]


class ConfigErrors(ConfigError):
    """Several config problems at once; ``errors`` holds each (file, hook, field, line).

    Its own ``file``/``hook_id``/``field``/``line`` are those of the first problem.
    """

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        self.errors = tuple(errors)
        first = self.errors[0]
        super().__init__(
            first.problem,
            file=first.file,
            hook_id=first.hook_id,
            field=first.field,
            line=first.line,
        )

    def _render(self) -> str:
        errors = getattr(self, "errors", ())
        if not errors:
            return super()._render()
        return f"{len(errors)} config problems:\n" + "\n".join(f"  {e}" for e in errors)


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """One config file (or an empty folder) and what it gave.

    Attributes:
        path: the file or folder.
        format: one of :data:`FORMATS`; ``None`` when it could not be read or recognised.
        hooks: its hooks (none when it has problems: files load all or nothing).
        agent_events: its ``kind: agent_events`` configs.
        problems: every problem found in it.
        warnings: what loads but may not mean what its author meant (an invalid regex
            matcher that falls back to exact matching); ``validate --strict`` fails on them.
        skipped: why it gave nothing although valid (``disabled``, an empty folder).
        workspace_id: the workspace of a ``<workspace-id>/hooks/*.hook.json`` file.
    """

    path: str
    format: str | None
    hooks: tuple[Hook, ...] = ()
    agent_events: tuple[AgentEventsConfig, ...] = ()
    problems: tuple[ConfigError, ...] = ()
    skipped: str | None = None
    workspace_id: str | None = None
    warnings: tuple[ConfigError, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """Everything a set of config files gives: hooks in file and entry order, the
    ``agent_events`` configs (for the event log), and the sources they came from."""

    hooks: tuple[Hook, ...] = ()
    agent_events: tuple[AgentEventsConfig, ...] = ()
    sources: tuple[ConfigSource, ...] = ()


def config_files(folder: Path) -> list[Path]:
    """The config files a folder stands for (see the module docstring)."""
    suffixes = JSON_SUFFIXES + YAML_SUFFIXES
    files = sorted(
        p
        for p in folder.iterdir()
        if not p.name.startswith(".") and p.name.lower().endswith(suffixes) and p.is_file()
    )
    workspace = [p for p in files if p.name.endswith(WORKSPACE_SUFFIX)]
    return workspace or files


def detect_format(doc: Document) -> str:
    """The format of a parsed document (see the module docstring).

    Raises:
        ConfigError: it is none of them.
    """
    data = doc.data
    if doc.path.name.endswith(WORKSPACE_SUFFIX):
        return "workspace"
    if isinstance(data, list):
        return "hook_list"
    if isinstance(data, dict):
        if "kind" in data:
            return "agent_os"
        if "capabilities" in data:
            return "kernel_app"
        if is_claude_settings(data):
            return "claude_settings"
        if isinstance(data.get("hooks"), dict):
            return "workspace"
        if "hooks" in data:
            return "hook_list"
    raise doc.error(
        "not a hook config: expected a workspace file {name, enabled, hooks: {Event: [...]}}, "
        "a Claude Code settings file {hooks: {Event: [{matcher, hooks: [...]}]}}, "
        "an agent-OS document with 'kind', a kernel app with 'capabilities' and 'hooks', "
        "or a list of hooks"
    )


def _inspect_file(path: Path) -> ConfigSource:
    try:
        documents = parse_file(path)
    except ConfigError as exc:
        return ConfigSource(str(path), None, problems=(exc,))
    errors: list[ConfigError] = []
    hooks: list[Hook] = []
    events: list[AgentEventsConfig] = []
    formats: list[str] = []
    skipped: str | None = None
    for doc in documents:
        try:
            kind = detect_format(doc)
        except ConfigError as exc:
            errors.append(exc)
            continue
        formats.append(kind)
        if kind == "workspace":
            found, skipped = load_workspace(doc, errors)
            hooks.extend(found)
        elif kind == "claude_settings":
            hooks.extend(load_claude_settings(doc, errors))
        elif kind == "agent_os":
            found, configs = load_agent_os(doc, errors)
            hooks.extend(found)
            events.extend(configs)
        elif kind == "kernel_app":
            hooks.extend(load_kernel_app(doc, errors))
        else:
            hooks.extend(load_hook_list(doc, errors))
    kind_name = "+".join(dict.fromkeys(formats)) or None
    workspace = workspace_id_of(documents[0]) if "workspace" in formats else None
    warnings = tuple(e for e in errors if isinstance(e, ConfigWarning))
    errors = [e for e in errors if not isinstance(e, ConfigWarning)]
    if errors:
        return ConfigSource(
            str(path),
            kind_name,
            problems=tuple(errors),
            workspace_id=workspace,
            warnings=warnings,
        )
    return ConfigSource(
        str(path),
        kind_name,
        hooks=tuple(hooks),
        agent_events=tuple(events),
        skipped=skipped,
        workspace_id=workspace,
        warnings=warnings,
    )


def _paths(paths: PathLike | Iterable[PathLike]) -> list[Path]:
    if isinstance(paths, str | os.PathLike):
        return [Path(paths)]
    return [Path(p) for p in paths]


def inspect_config(paths: PathLike | Iterable[PathLike]) -> list[ConfigSource]:
    """Read every file ``paths`` stand for and report on each, problems included (never raises
    for a config problem: ``otelhooks validate`` prints them all)."""
    sources: list[ConfigSource] = []
    read: set[Path] = set()
    for path in _paths(paths):
        if path.is_dir():
            try:
                files = config_files(path)
            except OSError as exc:
                problem = ConfigError(f"cannot list: {exc.strerror or exc}", file=str(path))
                sources.append(ConfigSource(str(path), None, problems=(problem,)))
                continue
            if not files:
                sources.append(ConfigSource(str(path), None, skipped=NO_CONFIG_FILES))
                continue
        else:
            files = [path]
        for file in files:
            key = file.resolve()
            if key not in read:
                read.add(key)
                sources.append(_inspect_file(file))
    return _check_unique_ids(sources)


def _check_unique_ids(sources: list[ConfigSource]) -> list[ConfigSource]:
    owner: dict[str, str] = {}
    checked: list[ConfigSource] = []
    for source in sources:
        duplicates = [
            ConfigError(
                f"duplicate hook id (also in {owner[h.id]})",
                file=source.path,
                hook_id=h.id,
                field="id",
            )
            for h in source.hooks
            if h.id in owner
        ]
        for hook in source.hooks:
            owner.setdefault(hook.id, source.path)
        if duplicates:
            source = ConfigSource(
                source.path,
                source.format,
                problems=(*source.problems, *duplicates),
                workspace_id=source.workspace_id,
                warnings=source.warnings,
            )
        checked.append(source)
    return checked


def load_config(paths: PathLike | Iterable[PathLike]) -> LoadedConfig:
    """Load hook config files of every supported format, all or nothing.

    Args:
        paths: files and folders (see the module docstring for what a folder means).

    Returns:
        The hooks (register them with ``HookSpanProcessor.register``), the ``agent_events``
        configs and the sources.

    Raises:
        ConfigError: the only problem; :class:`ConfigErrors` when there are several.

    Example:
        >>> from otelhooks import configure, load_config
        >>> loaded = load_config(["examples/workspaces/demo-workspace/hooks"])
        >>> oh = configure(traces_out="traces.jsonl")
        >>> hooks = oh.register(loaded.hooks)
        >>> _ = oh.shutdown()
    """
    sources = inspect_config(paths)
    problems = [p for s in sources for p in s.problems]
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise ConfigErrors(problems)
    for source in sources:
        # what ``validate`` says of it, said where the hooks are loaded too: a guard meant to be
        # there and missing lets every call through without a word (an invalid regex matcher
        # says so itself, where it is compiled)
        if source.skipped == NO_CONFIG_FILES:
            _log.warning(
                "a hooks folder holds no config file: no hook comes from it", folder=source.path
            )
    return LoadedConfig(
        hooks=tuple(h for s in sources for h in s.hooks),
        agent_events=tuple(c for s in sources for c in s.agent_events),
        sources=tuple(sources),
    )
