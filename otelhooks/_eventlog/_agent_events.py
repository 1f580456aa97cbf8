"""The ``agent_events`` hook kind: an :class:`EventLog` plus the observer hooks that fill it.

The seed's points map to canonical events, each observed by one Python-handler :class:`Hook`:

=======================  =====================================================================
``on`` point             canonical events (``kind`` of the record is the point)
=======================  =====================================================================
after_tool_result        ``after_tool_call``; ``on_tool_call_error`` and ``on_tool_call_denied``
                         as failed tool records
after_turn               ``after_step``
after_loop               ``on_complete``
on_terminate             ``on_stop_by_human_intervention``
on_error                 ``on_error``
on_budget_threshold      ``on_budget_threshold``
=======================  =====================================================================

Observers run on the dispatcher's bounded worker, never on the agent's thread; the handler
builds one :class:`EventEntry` and appends it (O(1)). With ``show_notice`` each record also
becomes a :class:`Notice`: a structlog line and a call of the pluggable sink.
"""

from __future__ import annotations

import sqlite3
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from otelhooks._config import AgentEventsConfig
from otelhooks._dispatch import HookRegistry
from otelhooks._encoding import clean_text
from otelhooks._errors import ConfigError
from otelhooks._eventlog._model import EventEntry, EventLog
from otelhooks._eventlog._ring import RingEventLog
from otelhooks._eventlog._sqlite import SqliteEventLog
from otelhooks._events import HookEvent
from otelhooks._fingerprint import args_fingerprint
from otelhooks._hooks import Hook
from otelhooks._processor import HookSpanProcessor

__all__ = [
    "DEFAULT_NOTICE",
    "POINT_EVENTS",
    "AgentEvents",
    "Notice",
    "NoticeSink",
    "entry_from_event",
    "open_event_log",
]

_log = structlog.get_logger("otelhooks")

POINT_EVENTS: dict[str, tuple[str, ...]] = {
    "after_tool_result": ("after_tool_call", "on_tool_call_error", "on_tool_call_denied"),
    "after_turn": ("after_step",),
    "after_loop": ("on_complete",),
    "on_terminate": ("on_stop_by_human_intervention",),
    "on_error": ("on_error",),
    "on_budget_threshold": ("on_budget_threshold",),
}
_POINT_OF = {event: point for point, events in POINT_EVENTS.items() for event in events}

DEFAULT_NOTICE = "{agent}: {kind} {tool} {status} ({detail})"
_NOTICE_FIELDS = frozenset(EventEntry._fields) | {"status"}


@dataclass(frozen=True, slots=True)
class Notice:
    """A short, content-free notice about one record (the seed's chat-UI notice).

    Attributes:
        text: the ``notice`` template filled with the record's fields.
        log: the ``agent_events`` hook that produced it.
        entry: the record (its ``seq`` is assigned by the log and not known here).
    """

    text: str
    log: str
    entry: EventEntry


NoticeSink = Callable[[Notice], None]
"""Where notices go besides the structlog line (a chat UI, a queue). Runs on the observer
worker; exceptions are logged and swallowed."""


def _tool_names(payload: HookEvent) -> tuple[str, str]:
    identifier = str(getattr(payload, "identifier", "") or "")
    api = str(getattr(payload, "apiName", "") or "")
    return (f"{identifier}/{api}" if identifier else api), api


def _detail(payload: HookEvent) -> tuple[bool, str]:
    """(success, detail) of an event: outcomes, error types, reasons; never content."""
    name = payload.event
    if name == "after_tool_call":
        success = bool(getattr(payload, "success", True))
        detail = "mocked" if getattr(payload, "mocked", False) else "ok" if success else "failed"
        would = getattr(payload, "permissive", None) or []
        if would:  # "no-rm: deny: reason" -> "no-rm would deny" (a reason may quote content)
            said = ", ".join(
                f"{hook} would {what.split(':')[0]}"
                for hook, _, what in (str(w).partition(": ") for w in would[:5])
            )
            detail = f"{detail} (permissive: {said})"
        return success, detail
    if name == "on_tool_call_error":
        return False, str(getattr(payload, "errorType", None) or "error")
    if name == "on_tool_call_denied":
        by = getattr(payload, "decidedBy", None)
        return False, f"denied by {by}" if by else "denied"
    if name == "after_step":
        calls = getattr(payload, "toolCalls", 0) or 0  # LobeHub's count
        return True, f"step {getattr(payload, 'stepIndex', 0)}, {calls} tool calls"
    if name == "on_complete":
        return bool(getattr(payload, "success", True)), str(getattr(payload, "reason", "done"))
    if name == "on_stop_by_human_intervention":
        return False, "stopped by human"
    if name == "on_error":
        return False, str(getattr(payload, "errorType", None) or "error")
    if name == "on_budget_threshold":
        spent, limit = getattr(payload, "spent", 0.0), getattr(payload, "limit", 0.0)
        return True, f"spent {spent:g} of {limit:g} ({getattr(payload, 'threshold', 0.0):.0%})"
    return True, name


def _is_denial_echo(payload: HookEvent) -> bool:
    # A denied call fires on_tool_call_denied and then after_tool_call with a "blocked" result;
    # the denial is the record, the echo is skipped.
    state = getattr(getattr(payload, "result", None), "state", None)
    return isinstance(state, dict) and state.get("type") == "blocked"


def entry_from_event(config: AgentEventsConfig, payload: HookEvent) -> EventEntry | None:
    """The record for ``payload`` under ``config`` (``None``: filtered out or not a log point).

    Tool records honour ``watch`` / ``ignore`` and ``mutating`` by ``identifier/apiName`` or
    ``apiName``. ``args_fp`` is the payload's ``argsFp`` when a received span carried one,
    else the fingerprint of ``args``.
    """
    point = _POINT_OF.get(payload.event)
    if point is None or point not in config.on:
        return None
    tool = args_fp = None
    mutating = False
    if point == "after_tool_result":
        if _is_denial_echo(payload):
            return None
        tool, api = _tool_names(payload)
        names = {tool, api}
        if not names.isdisjoint(config.ignore):
            return None
        if config.watch and names.isdisjoint(config.watch):
            return None
        mutating = not names.isdisjoint(config.mutating)
        carried = getattr(payload, "argsFp", None)
        args_fp = carried if carried is not None else args_fingerprint(getattr(payload, "args", {}))
    success, detail = _detail(payload)
    # Text from the agent may hold lone surrogates, which SQLite and UTF-8 JSON cannot store:
    # the one event encoding's rule (U+FFFD) applies here too.
    return EventEntry(
        payload.timestamp,
        config.agent or config.name,
        _text(payload.sessionKey),
        _text(payload.userId),
        _text(tool),
        point,
        mutating,
        success,
        args_fp,
        clean_text(detail),
        payload.traceId,
        payload.spanId,
    )


def _text(value: str | None) -> str | None:
    return clean_text(value) if value is not None else None


def _check_template(template: str) -> None:
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ConfigError(f"invalid notice template: {exc}", field="notice") from None
    for _, name, _, _ in parsed:
        if name is not None and name not in _NOTICE_FIELDS:
            raise ConfigError(
                f"unknown notice field {{{name}}}; fields: {', '.join(sorted(_NOTICE_FIELDS))}",
                field="notice",
            )


def _render(template: str, entry: EventEntry) -> str:
    values: dict[str, Any] = {k: ("" if v is None else v) for k, v in entry._asdict().items()}
    values["status"] = "ok" if entry.success else "failed"
    return " ".join(template.format_map(values).split())


def open_event_log(config: AgentEventsConfig) -> EventLog:
    """The store ``config`` asks for: a ring of ``capacity``, or SQLite at ``path``.

    Raises:
        ConfigError: the SQLite file cannot be opened or created.
    """
    if config.durable:
        assert config.path is not None  # the config model requires it
        try:
            return SqliteEventLog(config.path, retention=config.retention, name=config.name)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(
                f"cannot open the durable event log {config.path}: {exc}",
                hook_id=config.name,
                field="path",
            ) from None
    return RingEventLog(config.capacity, name=config.name)


class AgentEvents:
    """One ``agent_events`` hook: its config, its log and its observer hooks.

    Args:
        config: the parsed YAML (see :func:`load_agent_events`).
        log: the store; :func:`open_event_log` of ``config`` when omitted.
        notice_sink: receives a :class:`Notice` per record when ``show_notice`` is on.

    Example:
        >>> from otelhooks import AgentEvents, AgentEventsConfig, configure
        >>> oh = configure(traces_out="traces.jsonl")
        >>> events = AgentEvents(AgentEventsConfig(name="shop", mutating=["order_create"]))
        >>> hooks = events.install(oh.hooks)  # a HookSpanProcessor or a HookRegistry
        >>> with oh.operation("shop", input="order a book") as op, op.step() as step:
        ...     _ = step.run_tool("shop", "order_create", {"title": "Dune"}, lambda title: "ok")
        >>> _ = oh.shutdown()  # the observers have run
        >>> [(r.kind, r.tool, r.mutating, r.success) for r in events.log.read(0, 100).records]
        [('after_tool_result', 'shop/order_create', True, True)]
    """

    def __init__(
        self,
        config: AgentEventsConfig,
        *,
        log: EventLog | None = None,
        notice_sink: NoticeSink | None = None,
    ) -> None:
        if config.show_notice:
            _check_template(config.notice or DEFAULT_NOTICE)
        self.config = config
        self.log = log if log is not None else open_event_log(config)
        self.notice_sink = notice_sink
        self._template = config.notice or DEFAULT_NOTICE
        self._count_drop: Callable[[int, str], None] | None = None
        self.hooks = [
            Hook(id=f"agent_events:{config.name}:{event}", type=event, handler=self.observe)
            for point in config.on
            for event in POINT_EVENTS[point]
        ]

    @property
    def name(self) -> str:
        """The hook's name (the log's name in ``GET /v1/events?log=``)."""
        return self.config.name

    def install(self, target: HookRegistry | HookSpanProcessor) -> list[Hook]:
        """Register the observer hooks (global hooks of ``target``); on a processor, a record
        the log refuses (its queue full) or cannot commit (``write_failed``) is counted in its
        engine's ``otelhooks.dropped`` (``source="event_log"``)."""
        if isinstance(target, HookSpanProcessor):
            count = self._count_drop = target.engine.metrics.drop_counter("event_log")
            # Before, records lost to a failed commit were in the log's stats and a log line.
            self.log.count_lost_with(lambda lost: count(lost, "write_failed"))
            return target.registry.register(self.hooks)
        return target.register(self.hooks)

    def observe(self, payload: HookEvent) -> None:
        """The observer handler: append the record of ``payload`` (and show its notice)."""
        entry = entry_from_event(self.config, payload)
        if entry is None:
            return
        if not self.log.append(entry) and self._count_drop is not None:
            # A log whose writer is stalled (a neighbour holding the SQLite file's lock, a
            # slow disk) refused records: before, they were counted only in its stats.
            self._count_drop(1, "queue_full")
        if self.config.show_notice:
            self._notice(entry)

    def _notice(self, entry: EventEntry) -> None:
        text = _render(self._template, entry)
        _log.info("agent event", notice=text, log=self.name, kind=entry.kind, tool=entry.tool)
        if self.notice_sink is not None:
            try:
                self.notice_sink(Notice(text, self.name, entry))
            except Exception:
                _log.exception("notice sink failed", log=self.name)

    def close(self) -> None:
        """Close the log (a durable log commits what is queued first)."""
        self.log.close()
