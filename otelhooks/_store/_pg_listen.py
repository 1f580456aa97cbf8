"""Wake-ups across instances: one ``LISTEN`` connection per store, on a few channels.

A writer's transaction runs ``pg_notify('otelhooks_events', <log name>)``; PostgreSQL delivers
it at commit to every listening instance, whose thread calls the callbacks subscribed to that
log (the log's :class:`~otelhooks._eventlog._signal.AppendSignal`, which wakes the long-polls).
Approvals (``otelhooks_approvals``) and the web view's index (``otelhooks_web``) have channels
of their own, so that no log name can be mistaken for them.
After a lost connection (a restart, a failover) the thread reconnects with a short pause and
calls every callback once: a notification sent while it was away is lost, the re-read is not.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Final

import structlog

__all__ = ["APPROVALS_CHANNEL", "CHANNEL", "WEB_CHANNEL", "Listener"]

CHANNEL: Final = "otelhooks_events"
APPROVALS_CHANNEL: Final = "otelhooks_approvals"
WEB_CHANNEL: Final = "otelhooks_web"
_CHANNELS: Final = (CHANNEL, APPROVALS_CHANNEL, WEB_CHANNEL)
_POLL_S: Final = 0.1  # how soon close() is noticed: every store close and serve stop waits on it
_RECONNECT_S: Final = 0.5

_log = structlog.get_logger("otelhooks")


class Listener:
    """A daemon thread holding one ``LISTEN`` connection, dispatching by payload.

    Args:
        url: the store's URL.
        connect_kwargs: the store's connection options (timeouts).
        store: the store's name, for log lines.
    """

    def __init__(self, url: str, connect_kwargs: Mapping[str, object], *, store: str) -> None:
        self._url = url
        self._kwargs = dict(connect_kwargs)
        self._store = store
        self._lock = threading.Lock()
        self._callbacks: dict[tuple[str, str], list[Callable[[], None]]] = {}
        self._followers: dict[str, list[Callable[[str | None], None]]] = {}
        self._stop = threading.Event()
        self.connected = threading.Event()
        self._thread = threading.Thread(target=self._run, name="otelhooks-listen", daemon=True)
        self._thread.start()

    def subscribe(
        self, payload: str, callback: Callable[[], None], *, channel: str = CHANNEL
    ) -> None:
        """Call ``callback`` on every notification of ``channel`` whose payload is ``payload``."""
        with self._lock:
            self._callbacks.setdefault((channel, payload), []).append(callback)

    def follow(self, channel: str, callback: Callable[[str | None], None]) -> None:
        """Call ``callback`` with the payload of every notification of ``channel`` (and with
        ``None`` after a reconnection: what was sent meanwhile is lost)."""
        with self._lock:
            self._followers.setdefault(channel, []).append(callback)

    def _fire(self, channel: str | None, payload: str | None = None) -> None:
        following: list[tuple[Callable[[str | None], None], str | None]]
        with self._lock:
            if channel is None:
                chosen = [cb for cbs in self._callbacks.values() for cb in cbs]
                following = [(cb, None) for cbs in self._followers.values() for cb in cbs]
            else:
                chosen = list(self._callbacks.get((channel, payload or ""), ()))
                following = [(cb, payload) for cb in self._followers.get(channel, ())]
        for callback in chosen:
            try:
                callback()
            except Exception:
                _log.exception("store listener callback failed", store=self._store)
        for follower, sent in following:
            try:
                follower(sent)
            except Exception:
                _log.exception("store listener callback failed", store=self._store)

    def _run(self) -> None:
        import psycopg

        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True, **self._kwargs) as conn:  # type: ignore[arg-type]
                    for channel in _CHANNELS:
                        conn.execute(f"LISTEN {channel}")
                    self.connected.set()
                    self._fire(None)  # whatever was committed while we were not listening
                    while not self._stop.is_set():
                        for notify in conn.notifies(timeout=_POLL_S):
                            self._fire(notify.channel, notify.payload)
            except psycopg.Error as exc:
                if not self._stop.is_set():
                    _log.warning("store listener reconnecting", store=self._store, error=str(exc))
            self.connected.clear()
            self._stop.wait(_RECONNECT_S)

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop listening (within about a tenth of a second)."""
        self._stop.set()
        self._thread.join(timeout_s)
