"""The agent OS's hook YAML (``kind: agent_events | script_hook | dll_hook``): the models.

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

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["AGENT_EVENTS_POINTS", "AgentEventsConfig"]

AGENT_EVENTS_POINTS = (
    "after_tool_result",
    "after_turn",
    "after_loop",
    "on_terminate",
    "on_error",
    "on_budget_threshold",
)

Point = Literal[
    "after_tool_result",
    "after_turn",
    "after_loop",
    "on_terminate",
    "on_error",
    "on_budget_threshold",
]


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
