"""``ExportOnce``: the one road to ``serve``'s exporters, on which a span passes once.

``serve`` exports the spans its hook route writes, the CLIs' spans it joins into the session's
trace and the bridge's spans it receives. A span can come back: an OTLP client retries a
request ``serve`` had taken (its answer lost or late), or ``serve``'s own OTLP exporter points
at ``serve`` (``OTEL_EXPORTER_OTLP_ENDPOINT`` of the shell that started it), which without a
rule sends every exported span round again, forever. So each span, by its trace id and span id
as exported, reaches the exporters the first time only; the ids of the last ``remember`` spans
are kept (oldest forgotten: a repeat older than that is exported again), and each repeat is
counted by ``on_repeat`` (``otelhooks.dropped``, reason ``already_exported``).
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import structlog
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

__all__ = ["ExportOnce"]

_log = structlog.get_logger("otelhooks")


class _Exported:
    """The (trace id, span id) of the spans exported last, at most ``remember``."""

    def __init__(self, remember: int) -> None:
        self.remember = remember
        self.ids: OrderedDict[tuple[int, int], None] = OrderedDict()
        self.lock = threading.Lock()

    def first(self, key: tuple[int, int]) -> bool:
        with self.lock:
            if key in self.ids:
                self.ids.move_to_end(key)
                return False
            self.ids[key] = None
            while len(self.ids) > self.remember:
                self.ids.popitem(last=False)
        return True


class ExportOnce(SpanProcessor):
    """Hands each ended span to ``processors`` unless a span of the same trace and span id
    passed before (see the module doc); a processor's failure is logged, the others still run.

    Args:
        processors: the exporting processors (batch processors of ``serve``'s exporters).
        remember: spans whose ids are kept.
        on_repeat: called with ``(1, "already_exported")`` for each span not exported again.

    Example:
        >>> once = ExportOnce(())
        >>> once.to(()).processors
        ()
    """

    def __init__(
        self,
        processors: Sequence[SpanProcessor],
        *,
        remember: int = 65_536,
        on_repeat: Callable[[int, str], None] | None = None,
    ) -> None:
        self.processors = tuple(processors)
        self.on_repeat = on_repeat
        self._exported = _Exported(remember)

    def to(self, processors: Sequence[SpanProcessor]) -> ExportOnce:
        """The same rule, and the same memory, in front of other processors (a span exported on
        one of them is not exported on the other)."""
        other = copy.copy(self)
        other.processors = tuple(processors)
        return other

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        ctx = span.context
        if ctx is None:
            return
        if not self._exported.first((ctx.trace_id, ctx.span_id)):
            if self.on_repeat is not None:
                self.on_repeat(1, "already_exported")
            return
        for processor in self.processors:
            try:
                processor.on_end(span)
            except Exception:
                _log.exception("span processor failed on an exported span", span=span.name)

    def shutdown(self) -> None:
        for processor in self.processors:
            processor.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return all(p.force_flush(timeout_millis) for p in self.processors)
