"""What ``serve`` opens from its store: the event logs of its configs and, on a shared store,
the webhook deliverer whose ``delivery: queue`` outbox every instance pumps."""

from __future__ import annotations

from collections.abc import Sequence

from otelhooks import _semconv as sc
from otelhooks._actions._outbox import DurableQueue, Report
from otelhooks._actions._webhook_delivery import WebhookDeliverer
from otelhooks._config import AgentEventsConfig
from otelhooks._errors import ConfigError
from otelhooks._eventlog._model import EventLog
from otelhooks._processor import HookSpanProcessor
from otelhooks._store._base import DEFAULT_STATEMENT_TIMEOUT_S, Store
from otelhooks._store._errors import StoreError
from otelhooks._store._open import open_store

__all__ = ["DelivererShutdown", "open_state", "share_outbox"]


class DelivererShutdown:
    """Closes a webhook deliverer the server gave its engine (the engine does not own it)."""

    def __init__(self, deliverer: WebhookDeliverer) -> None:
        self.deliverer = deliverer

    def close(self) -> None:
        self.deliverer.shutdown()


def share_outbox(processor: HookSpanProcessor, store: Store) -> DelivererShutdown:
    """Give the engine a deliverer whose ``delivery: queue`` outbox is the store's, and start
    its pump now: it also delivers what instances that died left behind."""

    def outbox(report: Report) -> DurableQueue:
        queue = store.outbox(report)
        if queue is None:
            raise ValueError(f"store {store.name} keeps no outbox")
        return queue

    deliverer = WebhookDeliverer(metrics=processor.engine.metrics, outbox_factory=outbox)
    processor.engine.deliverer = deliverer
    deliverer.outbox().start()
    return DelivererShutdown(deliverer)


def open_state(
    url: str | None,
    configs: Sequence[AgentEventsConfig],
    processor: HookSpanProcessor,
    *,
    answer_within_s: float = DEFAULT_STATEMENT_TIMEOUT_S * 2,
) -> tuple[Store, list[EventLog], list[DelivererShutdown]]:
    """The store ``url`` names (``OTELHOOKS_STORE`` when ``None``), one log per config, and
    what the server must close besides them (the store itself last).

    A hook event is answered within ``answer_within_s`` (``--hook-timeout``), its session
    change waiting for the store first: so a statement waits at most half of it (5 s at
    most), and a locked or stalled store still leaves a guard the time to decide.

    Raises:
        ConfigError: the store cannot be opened or a log created (the message names it).
    """
    try:
        timeout_s = min(DEFAULT_STATEMENT_TIMEOUT_S, answer_within_s / 2)
        state = open_store(url, statement_timeout_s=timeout_s)
    except StoreError as exc:
        raise ConfigError(str(exc), field="store") from None
    errors = processor.engine.metrics.store_errors
    state.count_errors_with(lambda error: errors.add(1, {sc.ATTR_STORE_ERROR: error}))
    try:
        logs = [state.event_log(c) for c in configs]
        state.approval_inbox()  # made now, so that a store it cannot read fails the start
        closing = [share_outbox(processor, state)] if state.shared else []
    except StoreError as exc:
        state.close()
        raise ConfigError(str(exc), field="store") from None
    return state, logs, closing
