"""``EventLogClient``: a sync client of ``GET /v1/events`` that follows the documented loop.

The loop: drain from the cursor while ``has_more``; then long-poll (``mode=wait``) from the
last ``seq``; repeat. The cursor moves to each record as it is handed out. A new ``epoch``
means the log's numbering restarted (an in-memory log after a server restart): the cursor goes
back to 0 and the new log is read from its start. ``dropped_window`` values are added up in
:attr:`EventLogClient.dropped`.

Retry rule of :meth:`EventLogClient.follow`: network errors, 429 and 5xx (503 included: the
server's long-poll bound) are retried after an exponential backoff with jitter (0.1 s doubling
to ``max_backoff_s``); any other 4xx raises :class:`EventLogError`. The one-shot methods
(:meth:`~EventLogClient.drain`, :meth:`~EventLogClient.wait`) never retry.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from otelhooks._errors import OtelHooksError
from otelhooks._eventlog._model import EventBatch, EventRecord
from otelhooks._eventlog._params import DEFAULT_LIMIT, DEFAULT_WAIT_S
from otelhooks._loopback import trust_env_for
from otelhooks._tls import tls_context

if TYPE_CHECKING:
    import httpx

__all__ = ["EventLogClient", "EventLogError"]


class EventLogError(OtelHooksError):
    """A request to the event log API failed.

    Attributes:
        message: what went wrong.
        status_code: the HTTP status, or ``None`` for a network error.
        parameter: for a 400, the query parameter the server rejected.
        retryable: a network error, 429 or 5xx: trying again later may succeed.
    """

    def __init__(
        self, message: str, *, status_code: int | None = None, parameter: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.parameter = parameter

    @property
    def retryable(self) -> bool:
        """A network error, 429 or 5xx."""
        return self.status_code is None or self.status_code == 429 or self.status_code >= 500


def _batch(obj: dict[str, Any]) -> EventBatch:
    return EventBatch(
        records=[EventRecord.from_json(r) for r in obj.get("events", ())],
        since=int(obj["since"]),
        next_since=int(obj["next_since"]),
        head=int(obj["head"]),
        oldest=int(obj["oldest"]),
        has_more=bool(obj["has_more"]),
        dropped_window=int(obj["dropped_window"]),
        epoch=str(obj["epoch"]),
        timed_out=bool(obj.get("timed_out", False)),
    )


class EventLogClient:
    """Reads one event log over HTTP, keeping the cursor.

    Args:
        url: the server, e.g. ``http://127.0.0.1:4319``.
        token: the admin token; ``OTELHOOKS_ADMIN_TOKEN`` when omitted.
        log: the log name (needed only when the server serves several).
        since, epoch: a saved cursor and the epoch it belongs to, to resume.
        limit: records per request (the server allows at most 1000).
        wait_timeout: seconds each long-poll may wait (at most 60).
        http: an ``httpx.Client`` to use instead of a new one (not closed by :meth:`close`).

    Example:
        >>> from itertools import islice
        >>> from otelhooks import EventEntry, EventLogClient, EventLogServer, RingEventLog
        >>> log = RingEventLog()
        >>> _ = log.append(EventEntry(0, "shop", None, None, "order_create", "after_tool_result",
        ...                           True, True, "", "ok", None, None))
        >>> with EventLogServer([log], token="s3cret") as server, EventLogClient(
        ...     server.url, token="s3cret"
        ... ) as client:
        ...     for record in islice(client.follow(), 1):  # follow() runs until stopped
        ...         print(record.seq, record.kind, record.tool, record.success)
        1 after_tool_result order_create True
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        log: str | None = None,
        since: int = 0,
        epoch: str | None = None,
        limit: int = DEFAULT_LIMIT,
        wait_timeout: float = DEFAULT_WAIT_S,
        http: httpx.Client | None = None,
    ) -> None:
        import httpx

        self.log = log
        self.limit = limit
        self.wait_timeout = wait_timeout
        self.cursor = since
        self.epoch = epoch
        self.dropped = 0
        token = token or os.environ.get("OTELHOOKS_ADMIN_TOKEN", "")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._own_http = http is None
        self._http = http or httpx.Client(
            timeout=httpx.Timeout(10.0, read=wait_timeout + 10.0),
            trust_env=trust_env_for(url),
            verify=tls_context(trust_env=trust_env_for(url)),
        )
        self._url = url.rstrip("/") + "/v1/events"

    # -- one request ---------------------------------------------------------------------------

    def fetch(
        self,
        mode: str = "drain",
        *,
        since: int | None = None,
        limit: int | None = None,
        timeout: float | None = None,
    ) -> EventBatch:
        """One ``GET /v1/events`` as given; the cursor does not move.

        Raises:
            EventLogError: a network error or a non-200 answer.
        """
        import httpx

        params: dict[str, Any] = {
            "mode": mode,
            "since": self.cursor if since is None else since,
            "limit": limit or self.limit,
        }
        if mode == "wait":
            params["timeout"] = self.wait_timeout if timeout is None else timeout
        if self.log is not None:
            params["log"] = self.log
        try:
            response = self._http.get(self._url, params=params, headers=self._headers)
            body = response.json()
        except httpx.HTTPError as exc:
            raise EventLogError(f"request to {self._url} failed: {exc}") from exc
        except ValueError as exc:
            raise EventLogError("the answer is not JSON", status_code=response.status_code) from exc
        if response.status_code != 200:
            raise EventLogError(
                str(body.get("message", body)) if isinstance(body, dict) else str(body),
                status_code=response.status_code,
                parameter=body.get("parameter") if isinstance(body, dict) else None,
            )
        try:
            return _batch(body)
        except (KeyError, TypeError, ValueError) as exc:
            raise EventLogError(f"malformed answer: {exc}", status_code=200) from exc

    def version(self) -> EventBatch:
        """Head, oldest and epoch of the log (``mode=version``), without records."""
        return self.fetch("version")

    # -- the loop --------------------------------------------------------------------------------

    def _accept(self, batch: EventBatch) -> bool:
        """Check the epoch; False when the numbering restarted (the cursor went back to 0)."""
        if self.epoch is not None and batch.epoch != self.epoch:
            self.epoch, self.cursor = batch.epoch, 0
            return False
        self.epoch = batch.epoch
        self.dropped += batch.dropped_window
        return True

    def _pages(self, first_mode: str) -> Iterator[list[EventRecord]]:
        mode = first_mode
        while True:
            batch = self.fetch(mode)
            if not self._accept(batch):
                mode = "drain"
                continue
            yield batch.records
            if not batch.has_more:
                return
            mode = "drain"

    def drain(self) -> list[EventRecord]:
        """Every record after the cursor, page by page; the cursor ends at the last one."""
        out: list[EventRecord] = []
        for page in self._pages("drain"):
            out.extend(page)
            if page:
                self.cursor = page[-1].seq
        return out

    def wait(self, timeout: float | None = None) -> list[EventRecord]:
        """One long-poll from the cursor (then a drain if there is more): the records that
        arrived, or ``[]`` at the timeout."""
        saved = self.wait_timeout
        if timeout is not None:
            self.wait_timeout = timeout
        try:
            out: list[EventRecord] = []
            for page in self._pages("wait"):
                out.extend(page)
                if page:
                    self.cursor = page[-1].seq
            return out
        finally:
            self.wait_timeout = saved

    def follow(
        self, *, stop: threading.Event | None = None, max_backoff_s: float = 5.0
    ) -> Iterator[EventRecord]:
        """Every record from the cursor on, forever (until ``stop`` is set): the documented
        loop, with the retry rule of the module docstring. The cursor moves to each record
        as it is yielded."""
        stop = stop or threading.Event()
        backoff = 0.0
        behind = True
        while not stop.is_set():
            try:
                batch = self.fetch("drain" if behind else "wait")
            except EventLogError as exc:
                if not exc.retryable:
                    raise
                backoff = min(max(backoff * 2, 0.1), max_backoff_s)
                stop.wait(backoff * random.uniform(0.5, 1.0))
                continue
            backoff = 0.0
            if not self._accept(batch):
                behind = True
                continue
            for record in batch.records:
                self.cursor = record.seq
                yield record
            behind = batch.has_more

    def close(self) -> None:
        """Close the HTTP client (unless it was passed in)."""
        if self._own_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
