"""What reached each destination: the delivery report of a run.

Every destination (an OTLP endpoint for spans or metrics, a span file, a webhook URL) has one
:class:`DeliveryTracker` that the exporting code updates as it goes. At shutdown the trackers
become a :class:`DeliveryReport`: one line per destination that says what happened, e.g.
``63 spans exported to http://127.0.0.1:4318/v1/traces`` only when the endpoint accepted them,
otherwise ``0 of 63 spans exported to http://127.0.0.1:4318/v1/traces: connection refused``.

A tracker also carries the *fail-fast* switch. When it is on (short-lived commands from the
start, every process once shutdown begins), a refused connection or a timeout is not retried
and a destination that failed once is not tried again: it is known to be dead, and waiting on it
would only delay the exit.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import structlog

from otelhooks._env_seconds import seconds_setting
from otelhooks._worker import at_fork

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT_S",
    "SHUTDOWN_TIMEOUT_ENV",
    "DeliveryReport",
    "DeliveryTracker",
    "DestinationReport",
    "one_line",
    "permanent_status",
    "public_url",
    "record_rejected",
    "shutdown_timeout",
]

_log = structlog.get_logger("otelhooks")


SHUTDOWN_TIMEOUT_ENV = "OTELHOOKS_SHUTDOWN_TIMEOUT"
DEFAULT_SHUTDOWN_TIMEOUT_S = 10.0


def shutdown_timeout(default: float = DEFAULT_SHUTDOWN_TIMEOUT_S) -> float:
    """Seconds ``shutdown()`` may take: ``$OTELHOOKS_SHUTDOWN_TIMEOUT``, else ``default``.

    Commands pass a short default (2 s; 1 s for the Claude Code bridge); ``configure()`` uses
    10 s. An invalid value (:func:`~otelhooks._env_seconds.seconds_setting`: not a number,
    negative, infinite, past what a wait can take) is logged and ignored.
    """
    return seconds_setting(os.environ.get(SHUTDOWN_TIMEOUT_ENV), SHUTDOWN_TIMEOUT_ENV, default)[0]


def permanent_status(status: int) -> bool:
    """The written rule for HTTP answers: 4xx other than 408 and 429 are not retried."""
    return 400 <= status < 500 and status not in (408, 429)


_HINTS = {
    401: "set OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20<token>",
    403: "check the credentials in OTEL_EXPORTER_OTLP_HEADERS",
    404: "no such path there; OTEL_EXPORTER_OTLP_ENDPOINT takes the base URL, without /v1/...",
    **dict.fromkeys(
        (301, 302, 303, 307, 308),
        "the endpoint redirects (a proxy; http:// to https://?): set "
        "OTEL_EXPORTER_OTLP_ENDPOINT to the collector's own URL",
    ),
}


@dataclass(frozen=True, slots=True)
class DestinationReport:
    """What happened at one destination.

    Attributes:
        kind: ``"spans"``, ``"metric exports"`` or ``"webhooks"``.
        destination: the URL (without query string or credentials) or the absolute file path.
        sent: items handed to this destination.
        delivered: items it accepted.
        failed: items given up on after the destination refused or never answered them.
        dropped: items never sent (queue full, or still queued at the shutdown deadline).
        reason: why not everything was delivered (the last error), or ``None``.
        hint: what to change, when the answer says so (e.g. a 401), or ``None``.

    Example:
        >>> r = DestinationReport("spans", "http://127.0.0.1:4318/v1/traces", 63, 0, 63, 0,
        ...                       "connection refused", None)
        >>> r.line()
        '0 of 63 spans exported to http://127.0.0.1:4318/v1/traces: connection refused'
    """

    kind: str
    destination: str
    sent: int
    delivered: int
    failed: int
    dropped: int
    reason: str | None
    hint: str | None

    @property
    def ok(self) -> bool:
        """Everything sent here was accepted."""
        return self.delivered >= self.sent and not self.failed and not self.dropped

    @property
    def nothing_delivered(self) -> bool:
        """Items were sent here and none was accepted."""
        return self.sent > 0 and self.delivered == 0

    def line(self) -> str:
        """One human line: what was delivered, and why not everything was."""
        verb = {"webhooks": "delivered to", "metric exports": "accepted by"}.get(
            self.kind, "exported to"
        )
        if self.ok:
            return f"{self.delivered} {self.kind} {verb} {self.destination}"
        text = f"{self.delivered} of {self.sent} {self.kind} {verb} {self.destination}"
        parts = []
        # Still in flight or queued when the report was made: not delivered, so dropped.
        dropped = self.dropped + max(0, self.sent - self.delivered - self.failed - self.dropped)
        if self.failed:
            parts.append(f"{self.failed} failed")
        if dropped:
            parts.append(f"{dropped} dropped")
        if parts and self.kind == "webhooks":
            text += f" ({', '.join(parts)})"
        text += f": {self.reason or 'no answer before the shutdown deadline'}"
        if self.hint:
            text += f" ({self.hint})"
        return text


@dataclass(frozen=True, slots=True)
class DeliveryReport:
    """The delivery report of a pipeline: one :class:`DestinationReport` per destination.

    Returned by :meth:`OtelHooks.shutdown` and :meth:`OtelHooks.delivery_report`.

    Example:
        >>> import otelhooks
        >>> oh = otelhooks.configure(traces_out="traces.jsonl", set_global=False)
        >>> with oh.operation("helper"):
        ...     pass
        >>> report = oh.shutdown()
        >>> report.ok, report.destinations[0].line().startswith("1 spans exported to /")
        (True, True)
    """

    destinations: tuple[DestinationReport, ...]

    @property
    def ok(self) -> bool:
        """Every destination accepted everything it was sent."""
        return all(d.ok for d in self.destinations)

    @property
    def dead(self) -> tuple[DestinationReport, ...]:
        """The destinations that accepted nothing of what they were sent (the commands exit 3
        when there is one)."""
        return tuple(d for d in self.destinations if d.nothing_delivered)

    def lines(self) -> list[str]:
        """One line per destination."""
        return [d.line() for d in self.destinations]

    def __iter__(self) -> Iterator[DestinationReport]:
        return iter(self.destinations)

    def __str__(self) -> str:
        return "\n".join(self.lines())


class DeliveryTracker:
    """The running counts of one destination, updated from any thread.

    Args:
        kind: what is counted (``"spans"``, ``"metric exports"``, ``"webhooks"``).
        destination: where it goes (shown in the report).
        fail_fast: give up on a refused connection or a timeout at once (short-lived commands).
        request_timeout_s: longest wait for one answer while fail-fast, in seconds.
    """

    def __init__(
        self,
        kind: str,
        destination: str,
        *,
        fail_fast: bool = False,
        request_timeout_s: float | None = None,
    ) -> None:
        self.kind = kind
        self.destination = destination
        self.fail_fast = fail_fast
        self.request_timeout_s = request_timeout_s
        self._sent_by: Callable[[], int] | None = None
        self._begin()
        # A forked child reports what it sends: the parent's counts are the parent's to report
        # (a child that shut down at exit said its parent's deliveries in flight were dropped).
        at_fork(after_in_child=self._begin)

    def _begin(self) -> None:
        self._lock = threading.Lock()
        self._sent = self._delivered = self._failed = self._dropped = 0
        self._reason: str | None = None
        self._hint: str | None = None
        self._dead = False  # failed while fail-fast: not tried again
        self._permanent = False  # the last answer is one the retry rule does not retry
        self._too_large = False  # the last answer said the request was too large (413)
        self._deadline: float | None = None
        self._rejected = 0  # items of the last accepted request the destination did not keep

    # -- updates ---------------------------------------------------------------------------------

    def count_sent_by(self, counter: Callable[[], int]) -> None:
        """Read the items sent from ``counter`` (a count the sender keeps anyway, such as its
        queue's) rather than count each with :meth:`sent`: a span batch processor would
        otherwise take this tracker's lock for every span that ends."""
        self._sent_by = counter

    def sent(self, count: int = 1) -> None:
        """``count`` more items were handed to this destination."""
        with self._lock:
            self._sent += count

    def delivered(self, count: int = 1) -> None:
        """``count`` items were accepted."""
        with self._lock:
            self._delivered += count
            self._permanent = False

    def accepted(self, count: int) -> int:
        """A request of ``count`` items was accepted: those its answer said were not kept
        (:meth:`rejected`, never retried, as OTLP says) are failed, the rest delivered.
        Returns how many were rejected."""
        with self._lock:
            rejected, self._rejected = min(count, self._rejected), 0
            self._delivered += count - rejected
            self._failed += rejected
            self._permanent = False
            return rejected

    def failed(self, count: int = 1, reason: str | None = None) -> None:
        """``count`` items were given up on."""
        with self._lock:
            self._failed += count
            if reason:
                self._reason = reason

    def dropped(self, count: int = 1, reason: str | None = None) -> None:
        """``count`` items were never sent."""
        with self._lock:
            self._dropped += count
            if reason and self._reason is None:
                self._reason = reason

    def rejected(self, count: int, reason: str) -> None:
        """An accepted request's answer says ``count`` of its items were not kept (OTLP
        ``partialSuccess``): the sender takes them with :meth:`take_rejected`."""
        with self._lock:
            self._rejected += count
            self._reason = reason

    def take_rejected(self) -> int:
        """The items rejected since the last call (the sender counts them as failed)."""
        with self._lock:
            count, self._rejected = self._rejected, 0
            return count

    def error(self, reason: str, *, status: int | None = None, dead: bool = False) -> None:
        """An attempt failed: remember why (the report shows the last reason).

        Args:
            reason: e.g. ``"connection refused"``, ``"401 Unauthorized"``.
            status: the HTTP status, when there was an answer.
            dead: the destination did not answer at all (refused, unreachable, timed out).
        """
        with self._lock:
            self._reason = reason
            self._hint = _HINTS.get(status) if status is not None else None
            # A redirect is not retried: the exporters do not follow one (see _otlp.py).
            self._permanent = status is not None and (
                permanent_status(status) or 300 <= status < 400
            )
            self._too_large = status == 413
            if dead and self.fail_fast:
                self._dead = True

    def start_shutdown(self, deadline: float) -> None:
        """From now on fail fast, and never wait past ``deadline`` (monotonic clock)."""
        with self._lock:
            self.fail_fast = True
            self._deadline = deadline

    # -- reads -----------------------------------------------------------------------------------

    @property
    def dead(self) -> bool:
        """It failed while fail-fast: further attempts are skipped."""
        return self._dead

    @property
    def retryable(self) -> bool:
        """Whether the last failure may be retried: not a permanent 4xx, not fail-fast."""
        return not (self._permanent or self.fail_fast)

    @property
    def too_large(self) -> bool:
        """The last failure was an answer saying the request was too large (413)."""
        return self._too_large

    @property
    def reason(self) -> str | None:
        """The last error, if any."""
        return self._reason

    def timeout(self, requested: float | None) -> float | None:
        """The timeout to use for one request: the requested one, capped while fail-fast.

        A cap of 0 (``OTELHOOKS_SHUTDOWN_TIMEOUT=0``) is the shortest wait, never none: before,
        it was dropped, and a hook process waited the exporter's whole timeout (10 s) on a
        stalled collector."""
        cap = self.request_timeout_s if self.fail_fast else None
        caps = [t for t in (requested, cap) if t is not None]
        if self._deadline is not None:
            caps.append(self._deadline - time.monotonic())
        return max(0.05, min(caps)) if caps else None

    def report(self) -> DestinationReport:
        """The counts so far."""
        sent_by = self._sent_by
        with self._lock:
            return DestinationReport(
                self.kind,
                self.destination,
                self._sent + (sent_by() if sent_by is not None else 0),
                self._delivered,
                self._failed,
                self._dropped,
                self._reason,
                self._hint,
            )


def merge(reports: Iterable[DestinationReport]) -> DeliveryReport:
    """A report of these destinations, in order."""
    return DeliveryReport(tuple(reports))


def record_rejected(tracker: DeliveryTracker, count: int, noun: str, message: str) -> None:
    """Record what a collector's partial success did not keep (nothing when ``count`` is 0)."""
    if count > 0:
        tracker.rejected(count, f"{count} {noun} rejected: {one_line(message)}")


def one_line(text: str) -> str:
    """A collector's message as one report line."""
    return " ".join(text.split())[:200] or "no reason given"


def public_url(url: str) -> str:
    """``url`` without credentials or query string (safe to print)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else url
