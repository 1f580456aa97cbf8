"""The recorded spans again, as OTLP JSON lines, annotated with what the policy decides now.

Every recorded request is written again as one line (a protobuf dump becomes JSON lines); every
span keeps its ids, times, attributes and events, so the file opens next to the original
in any OTLP JSON reader (Jaeger's upload, ``otelhooks.read_otlp_json_lines``). A replayed span
gets, for its first event (``before_tool_call``, ``message_sending``, ``before_agent_start``),
``otelhooks.replay.decision``, ``.decided_by``, ``.reason``, ``.recorded_decision``,
``.changed``, ``.content_recorded`` (and ``.diff``, ``.errors``, ``.would_call`` when there are
any), and one span event ``otelhooks.replay`` per replayed event (a tool span has two: the call
and its persisted result) with the same attributes and ``otelhooks.replay.event``.
"""

from __future__ import annotations

import base64
import gc
import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from otelhooks import _semconv as sc
from otelhooks.replay._read import iter_requests
from otelhooks.replay._run import ReplayOutcome

__all__ = ["AnnotationWriter", "annotation_attributes"]


def annotation_attributes(outcome: ReplayOutcome) -> dict[str, Any]:
    """The ``otelhooks.replay.*`` attributes for one replayed event.

    Example:
        >>> from otelhooks import HooksEngine
        >>> from otelhooks.replay import read_recording, recorded_events, replay_events
        >>> engine = HooksEngine.from_files(["examples/replay/policy.yaml"])
        >>> events = recorded_events(read_recording("examples/replay/traces.jsonl"))
        >>> denied = next(o for o in replay_events(engine, events) if o.now.action == "deny")
        >>> annotation_attributes(denied)["otelhooks.replay.decision"]
        'deny'
    """
    now = outcome.now
    event = outcome.recorded
    attrs: dict[str, Any] = {
        sc.REPLAY_LIFECYCLE_EVENT: event.event,
        sc.REPLAY_DECISION: now.action,
        sc.REPLAY_DECIDED_BY: list(now.by),
        sc.REPLAY_RECORDED_DECISION: event.recorded.action,
        sc.REPLAY_CHANGED: outcome.changed,
        sc.REPLAY_CONTENT_RECORDED: event.content_recorded,
    }
    if now.reason:
        attrs[sc.REPLAY_REASON] = now.reason
    if outcome.diff:
        attrs[sc.REPLAY_DIFF] = json.dumps(outcome.diff, default=str, ensure_ascii=False)
    if outcome.errors:
        attrs[sc.REPLAY_ERRORS] = list(outcome.errors)
    if outcome.would_call:
        attrs[sc.REPLAY_WOULD_CALL] = list(outcome.would_call)
    return attrs


class AnnotationWriter:
    """Collects outcomes, then writes every span of the recordings with its annotations.

    Args:
        path: the OTLP JSON lines file to write (replaced).
        policy: the policy files, recorded as the resource attribute ``otelhooks.replay.policy``.

    Example:
        >>> writer = AnnotationWriter("replayed.jsonl", policy=["policy.yaml"])
        >>> # writer.add(outcome) for each outcome, then writer.write(["traces.jsonl"])
    """

    def __init__(self, path: str | os.PathLike[str], *, policy: Iterable[str] = ()) -> None:
        self.path = os.fspath(path)
        self.policy = list(policy)
        self._notes: dict[tuple[str, str], list[_Note]] = {}
        # Most events of a recording annotate alike (same decision, same hooks): each distinct
        # annotation is encoded once and shared.
        self._encoded: dict[tuple[Any, ...], _Note] = {}

    def add(self, outcome: ReplayOutcome) -> None:
        """Remember the annotation of one replayed event."""
        event = outcome.recorded
        attrs = annotation_attributes(outcome)
        key = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in attrs.items())
        note = self._encoded.get(key)
        if note is None:
            changed = attrs.pop(sc.REPLAY_CHANGED)
            rest = _key_values(attrs)
            changed_kv = {"key": sc.REPLAY_CHANGED, "value": {"boolValue": changed}}
            note = self._encoded[key] = _Note(changed, rest, [*rest, changed_kv])
        self._notes.setdefault((event.trace_id, event.span_id), []).append(note)

    def write(self, recordings: Iterable[str | os.PathLike[str]]) -> int:
        """Write the spans of ``recordings`` annotated, one line per recorded request; return
        how many spans were written."""
        count = 0
        policy = _any_value(self.policy) if self.policy else None
        # Decoded JSON holds no cycles: collections would only rescan everything replay keeps.
        enabled = gc.isenabled()
        gc.disable()
        try:
            count = self._write(recordings, policy)
        finally:
            if enabled:
                gc.enable()
        return count

    def _write(
        self, recordings: Iterable[str | os.PathLike[str]], policy: dict[str, Any] | None
    ) -> int:
        count = 0
        with open(self.path, "w", encoding="utf-8") as file:
            for recording in recordings:
                for _, request in iter_requests(recording, problems=[]):  # reported already
                    for resource_spans in request.get("resourceSpans", ()):
                        if policy is not None:
                            resource = resource_spans.setdefault("resource", {})
                            resource.setdefault("attributes", []).append(
                                {"key": sc.REPLAY_POLICY, "value": policy}
                            )
                        for scope_spans in resource_spans.get("scopeSpans", ()):
                            for span in scope_spans.get("spans", ()):
                                self._annotate(span)
                                count += 1
                    file.write(json.dumps(request, separators=(",", ":"), ensure_ascii=False))
                    file.write("\n")
        return count

    def _annotate(self, span: dict[str, Any]) -> None:
        # Only the new attributes are encoded: the recorded ones stay exactly as they were.
        notes = self._notes.get((str(span.get("traceId", "")), str(span.get("spanId", ""))))
        if not notes:
            return
        changed = any(n.changed for n in notes)
        attributes = span.setdefault("attributes", [])
        attributes.extend(notes[0].attributes)
        attributes.append({"key": sc.REPLAY_CHANGED, "value": {"boolValue": changed}})
        end = span.get("endTimeUnixNano") or span.get("startTimeUnixNano") or "0"
        span.setdefault("events", []).extend(
            {"timeUnixNano": end, "name": sc.REPLAY_EVENT, "attributes": n.event_attributes}
            for n in notes
        )


@dataclass(frozen=True, slots=True)
class _Note:
    """One event's annotation, encoded: without ``changed`` for the span (which says whether
    any of its events changed), with it for the span event."""

    changed: bool
    attributes: list[dict[str, Any]]
    event_attributes: list[dict[str, Any]]


def _key_values(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _any_value(value)} for key, value in attrs.items()]


def _any_value(value: Any) -> dict[str, Any]:
    # The inverse of otelhooks._export._otlp_json._any_value (OTLP/JSON: int64 as a string).
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return {"doubleValue": str(value).replace("inf", "Infinity").replace("nan", "NaN")}
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode()}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": _key_values(value)}}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": str(value)}
