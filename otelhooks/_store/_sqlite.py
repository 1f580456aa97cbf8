"""The embedded default: each ``agent_events`` log is its ring or SQLite file, one instance."""

from __future__ import annotations

from otelhooks._config import AgentEventsConfig
from otelhooks._eventlog._agent_events import open_event_log
from otelhooks._eventlog._model import EventLog
from otelhooks._store._base import Store

__all__ = ["SqliteStore"]


class SqliteStore(Store):
    """Today's behaviour: nothing shared, schemas created by each file when it is opened."""

    name = "sqlite"
    shared = False

    def migrate(self) -> int:
        """Nothing to do: every SQLite file creates its own tables when it is opened."""
        return 0

    def event_log(self, config: AgentEventsConfig) -> EventLog:
        return open_event_log(config)
