"""The store interface: what ``otelhooks serve`` keeps its state in, and the errors it raises.

Two implementations: :class:`~otelhooks._store._sqlite.SqliteStore` (the embedded default, no
flag, no server: each ``agent_events`` log is its ring or SQLite file, as before) and
:class:`~otelhooks._store._postgres.PostgresStore` (``--store postgresql://...`` or
``OTELHOOKS_STORE``), where every instance of a fleet shares the same logs;
:func:`~otelhooks._store._open.open_store` opens the one a URL names.

Errors (:mod:`otelhooks._store._errors`) name the store without its password.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from otelhooks._actions._approval_inbox import ApprovalInbox
    from otelhooks._actions._outbox import DurableQueue, Report
    from otelhooks._config import AgentEventsConfig
    from otelhooks._eventlog._model import EventLog
    from otelhooks.integrations.coding_agents._sessions import DropCounter, ServerSessions
    from otelhooks.web._store import TraceIndex

__all__ = ["DEFAULT_STATEMENT_TIMEOUT_S", "Store"]

DEFAULT_STATEMENT_TIMEOUT_S = 5.0


class Store(abc.ABC):
    """Shared state of ``otelhooks serve``.

    Attributes:
        name: the store as error messages name it (no password).
        shared: other ``serve`` instances on the same store see the same state.
    """

    name: str
    shared: bool = False

    @abc.abstractmethod
    def migrate(self) -> int:
        """Create or upgrade the schema; returns the schema version now in place.

        Raises:
            StoreError: the store is unreachable or holds a newer schema than this release.
        """

    @abc.abstractmethod
    def event_log(self, config: AgentEventsConfig) -> EventLog:
        """The event log of one ``agent_events`` config.

        Raises:
            StoreError: the log cannot be opened.
        """

    def outbox(self, report: Report) -> DurableQueue | None:
        """The webhook outbox shared by the store's instances (``None``: each deliverer keeps
        its own SQLite file, as without a store)."""
        return None

    def claude_code_sessions(self, on_drop: DropCounter | None = None) -> ServerSessions | None:
        """Claude Code session state shared by the store's instances (``None``: each server
        keeps its own, in memory or beside a durable log, as without a store)."""
        return None

    def trace_index(self, *, capture_content: bool, **bounds: int) -> TraceIndex | None:
        """What the web view lists, shared by the store's instances (``None``: each server
        keeps its own index in memory). ``bounds`` are :class:`~otelhooks.web.TraceIndex`'s."""
        return None

    def approval_inbox(self) -> ApprovalInbox | None:
        """The approval inbox shared by the store's instances (``None``: this process's own
        inbox, as without a store)."""
        return None

    def count_errors_with(self, count: Callable[[str], None]) -> None:  # noqa: B027
        """Call ``count(error_reason(exc))`` for each error the store's database gives (none by
        default: an embedded store's errors are its event log's, counted there)."""

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release connections (after the logs opened from the store are closed)."""
