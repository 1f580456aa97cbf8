"""Replay: what would a hook policy have done to recorded agent runs?

Recorded spans (OTLP JSON lines, an OTLP protobuf dump, Claude Code bridge traces) become the
intercept events they stood for; each goes through the policy's :class:`~otelhooks.HooksEngine`
``dry_run`` (the chain a live agent runs) and is compared with the decision recorded then.

Example: the demo's recorded run (``otelhooks demo --traces-out``) against a new policy:
    >>> from otelhooks.replay import replay
    >>> report = replay(["examples/replay/traces.jsonl"], ["examples/replay/policy.yaml"])
    >>> report.failed(["deny", "rewrite"])
    {'deny': 1, 'rewrite': 2}
    >>> print(report.table())
    otelhooks replay: 63 spans, 29 events replayed ...
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Iterator, Sequence

from otelhooks._engine import HooksEngine
from otelhooks.replay._events import Decision, RecordedEvent, SpanContext, recorded_events
from otelhooks.replay._otlp import AnnotationWriter, annotation_attributes
from otelhooks.replay._read import (
    RecordingError,
    iter_requests,
    iter_spans,
    read_recording,
)
from otelhooks.replay._report import Problems, ReplayReport, Tally
from otelhooks.replay._run import CHANGES, ReplayOutcome, decision_of, diff_values, replay_events
from otelhooks.replay._stream import Spans

__all__ = [
    "CHANGES",
    "AnnotationWriter",
    "Decision",
    "RecordedEvent",
    "RecordingError",
    "ReplayOutcome",
    "ReplayReport",
    "SpanContext",
    "Tally",
    "annotation_attributes",
    "decision_of",
    "diff_values",
    "iter_requests",
    "iter_spans",
    "loaded_once",
    "read_recording",
    "recorded_events",
    "replay",
    "replay_events",
]


# Events between two collections of the young generations during a replay (see
# _collected_per): the cycles of that many hook runs at most wait for the collector.
_COLLECT_EVERY = 5_000


def replay(
    recordings: Sequence[str | os.PathLike[str]],
    hooks: Sequence[str | os.PathLike[str]] | HooksEngine,
    *,
    live_webhooks: bool = False,
    otlp_out: str | os.PathLike[str] | None = None,
    pooled: bool = False,
) -> ReplayReport:
    """Replay ``recordings`` through a policy and report what would change.

    Args:
        recordings: OTLP JSON lines files, OTLP protobuf dumps or Claude Code bridge traces.
        hooks: the policy's config files (any format :func:`otelhooks.load_config` reads), or
            an engine of your own.
        live_webhooks: call control webhooks (otherwise reported as "would call").
        otlp_out: also write the recorded spans, annotated with the new decisions, as OTLP
            JSON lines to this file.
        pooled: run Python hooks on the engine's handler pool, cut off at their deadlines as
            live (see :func:`replay_events`); slower, for policies whose hooks may hang.

    Lines, frames and events that cannot be read are skipped and listed in the report's
    :attr:`~ReplayReport.unreadable`; the report covers the rest. A span read again (the same
    trace id and span id: a retried export wrote it twice, or two recordings hold it) is
    replayed once and counted in the report's ``duplicates``; telling it keeps nothing beyond
    the one entry per span id the ancestry keeps anyway.

    While it runs, the cyclic garbage collector (process-wide) is paused and run on the young
    generations once per 5,000 replayed events instead; it is given back as it was found.

    Raises:
        OSError: a file cannot be read or written.
        RecordingError: a recording is in no known format.
        ConfigErrors: a policy file has problems.

    Example:
        >>> recording, policy = "examples/replay/traces.jsonl", "examples/replay/policy.yaml"
        >>> report = replay([recording], [policy], otlp_out="replayed.jsonl")
        >>> report.failed(["mock"])
        {'mock': 5}
    """
    policy = [] if isinstance(hooks, HooksEngine) else [os.fspath(p) for p in hooks]
    engine = hooks if isinstance(hooks, HooksEngine) else HooksEngine.from_files(policy)
    try:
        report = ReplayReport(
            [hook.id for hook in engine.registry.hooks() if hook.intercepts],
            sources={"recordings": [os.fspath(p) for p in recordings], "policy": policy},
        )
        # Read once: a span waits for its ancestors (often written after it) and no longer
        # (Spans); nothing holds the recording.
        context = SpanContext()
        spans = Spans(recordings, context, report.unreadable)
        # Reported after what could not be read, as when the recording was read first.
        unreplayable = Problems()
        with _collected_per(_COLLECT_EVERY) as tick:
            writer = AnnotationWriter(otlp_out, policy=policy) if otlp_out is not None else None
            outcomes = replay_events(
                engine,
                recorded_events(spans, context=context, problems=unreplayable),
                live_webhooks=live_webhooks,
                pooled=pooled,
                problems=unreplayable,
            )
            for outcome in outcomes:
                report.add(outcome)
                if writer is not None:
                    writer.add(outcome)
                tick()
        report.spans = spans.read
        report.duplicates = spans.duplicates
        report.unreadable.extend_from(unreplayable)
        if writer is not None:
            writer.write(recordings)
    finally:
        if not isinstance(hooks, HooksEngine):
            engine.shutdown(1.0)
    return report


@contextlib.contextmanager
def _collected_per(events: int) -> Iterator[Callable[[], None]]:
    """The cyclic garbage collector paused, run on the young objects once per ``events``.

    Each line of a recording parses to thousands of objects that live while its spans are
    replayed and hold no cycles; the collector, left to itself, scans them again every few
    hundred allocations and promotes them into full collections (a sixth of a replay's time:
    benchmarks/README.md, "Replay, the collector paused"). Cycles a hook makes are still
    collected, at most ``events`` events later, so memory stays bounded.
    """
    enabled = gc.isenabled()
    seen = 0

    def tick() -> None:
        nonlocal seen
        seen += 1
        if seen % events == 0:
            gc.collect(1)

    gc.disable()
    try:
        yield tick
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def loaded_once() -> Iterator[None]:
    """Load a recording without the cyclic garbage collector, then freeze what was loaded.

    A recording is hundreds of thousands of small dicts and lists that live until the end and
    hold no cycles; every full collection would scan them all again (it more than halved the
    time to read and map 100,000 spans). Call ``gc.unfreeze()`` when they may be collected.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
