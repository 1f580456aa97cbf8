"""The agent OS's hook YAML (``kind: agent_events | script_hook | dll_hook``): the models.

``script_hook`` and ``dll_hook`` (``config/agents/<agent>/hooks/audit.yaml``)::

    kind: script_hook
    name: audit                 # the hook id; defaults to the file name
    on: [after_tool_result]     # lifecycle points, any dialect's names; default [after_tool_result]
    script: scripts/audit.py    # relative to this file; or scripts/audit.py:function
    function: audit             # default: a function named after each point
    matcher: "order_.*"         # optional; timeout (s, default 10) and on_error as for any hook

    kind: dll_hook
    hook: audit                 # the name a package publishes in the otelhooks.hooks group
    path: plugins               # optional folder of plugin distributions, relative to this file

``agent_events`` (``config/agents/<agent>/hooks/events.yaml``)::

    kind: agent_events
    name: agent_events
    agent: <agent>            # defaults to the hook's name
    on: [after_tool_result, after_turn]   # defaults to [after_tool_result]
    watch: []                 # tool filter; empty = all except ignore
    ignore: [settings_get]
    mutating: [order_create, order_cancel]
    capacity: 5000            # ring buffer size
    show_notice: false
    notice: ""                # the notice text template (beyond the seed: optional)
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from otelhooks._env_seconds import LEAST_TIMEOUT_S

__all__ = [
    "AGENT_EVENTS_POINTS",
    "AgentEventsConfig",
    "BudgetHookConfig",
    "DllHookConfig",
    "ScriptHookConfig",
]

Point = Literal[
    "after_tool_result",
    "after_turn",
    "after_loop",
    "on_terminate",
    "on_error",
    "on_budget_threshold",
]

AGENT_EVENTS_POINTS: tuple[str, ...] = get_args(Point)


def _default_points() -> list[Point]:
    return ["after_tool_result"]


class AgentEventsConfig(BaseModel):
    """An ``agent_events`` hook: which points to log, which tools, how many records to keep.

    ``durable`` and ``path`` go beyond the seed (a log that survives restarts): with
    ``durable: true`` records are kept in SQLite at ``path`` up to ``retention`` records.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["agent_events"] = "agent_events"
    name: str = "agent_events"
    agent: str | None = None
    on: list[Point] = Field(default_factory=_default_points)
    watch: list[str] = Field(default_factory=list)
    ignore: list[str] = Field(default_factory=list)
    mutating: list[str] = Field(default_factory=list)
    capacity: int = Field(default=5000, gt=0, le=10_000_000)
    show_notice: bool = False
    notice: str = ""
    durable: bool = False
    path: str | None = None
    retention: int = Field(default=1_000_000, gt=0)

    @model_validator(mode="after")
    def _defaults(self) -> AgentEventsConfig:
        if self.agent is None:
            self.agent = self.name  # the seed: "agent defaults to the hook's name"
        if self.durable and not self.path:
            raise ValueError("durable: true needs a path for the SQLite file")
        return self

    def logs_tool(self, tool: str) -> bool:
        """The seed's filter: ``watch`` (empty = all) minus ``ignore``."""
        if tool in self.ignore:
            return False
        return not self.watch or tool in self.watch


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class _HookKind(BaseModel):
    """Fields shared by ``script_hook`` and ``dll_hook`` (beyond the seed: ``matcher``,
    ``timeout``, ``on_error``, ``mode``, with the otelhooks meanings)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1)
    on: list[str] = Field(default_factory=lambda: ["after_tool_result"], min_length=1)
    matcher: str | None = None
    timeout: float = Field(default=10.0, ge=LEAST_TIMEOUT_S, le=300)
    on_error: Literal["continue", "block"] = "continue"
    mode: Literal["enforce", "permissive", "disabled"] = "enforce"

    @field_validator("on", mode="before")
    @classmethod
    def _one_point(cls, value: Any) -> Any:
        return _as_list(value)


class ScriptHookConfig(_HookKind):
    """A ``script_hook``: a Python function per lifecycle point.

    ``script`` is a file (relative to the YAML file) or ``file.py:function``; without a function,
    ``function`` names it, and without that the function is named after each point in ``on``
    (``def after_tool_result(event): ...``), as a script implements lifecycle points by name.
    """

    kind: Literal["script_hook"] = "script_hook"
    script: str = Field(min_length=1)
    function: str | None = Field(default=None, min_length=1)


class DllHookConfig(_HookKind):
    """A ``dll_hook``: a hook function an installed package publishes (entry-point group
    ``otelhooks.hooks``) under the name ``hook``. ``path``, optional here, is a folder of plugin
    distributions (``*.dist-info`` + modules) put on the import path first; relative to the
    YAML file."""

    kind: Literal["dll_hook"] = "dll_hook"
    hook: str = Field(min_length=1)
    path: str | None = Field(default=None, min_length=1)


class BudgetHookConfig(BaseModel):
    """A ``budget``: the budget guard (``kind: budget`` with its limits, e.g.
    ``operation_usd: 0.50``); it denies model and tool calls once the limit is passed. The
    limits are validated by the budget action (``otelhooks._actions._budget``)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["budget"] = "budget"
    name: str | None = Field(default=None, min_length=1)
    mode: Literal["enforce", "permissive", "disabled"] = "enforce"
    operation_usd: float | None = None
    session_usd: float | None = None
    operation_tokens: int | None = None
    session_tokens: int | None = None
    threshold: float | None = None
