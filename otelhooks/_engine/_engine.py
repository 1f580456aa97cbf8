"""``HooksEngine``: the one object that matches hooks to events and runs them.

Every road an event takes ends here: the instrumentation (``AgentTracer`` and its scopes), the span
processor for other instrumentations' spans, ``WebhookSpanExporter``, ``otelhooks hooks test``,
the framework adapters, the Claude Code bridge, the MCP gateway and replay. The engine owns the
registry, the dispatcher (its handler pool and observer worker) and the webhook deliverer, wired
when it is built; nothing here is a process-wide default that a later caller replaces.

The operations, sync and async alike:

- :meth:`dispatch` / :meth:`adispatch`: an event happens. Intercept events run their chain now
  and return the verdict; other events are queued for their observers.
- :meth:`decide` / :meth:`adecide`: what these hooks *would* decide, with no side effect beyond
  the hooks themselves (no observer queued, nothing counted; control webhooks only on request).
- :meth:`start` / :meth:`astart` / :meth:`end`: the same for the instrumentation's
  :class:`~otelhooks._live.LiveEvent`, whose payload is built only when a hook matches.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from otelhooks._dispatch import NO_EVENTS, Dispatcher, Hooked, HookRegistry
from otelhooks._engine._values import matcher_values
from otelhooks._errors import CriticalHookDeliveryError
from otelhooks._events import EVENTS, HookEvent, resolve_event
from otelhooks._hooks import Hook
from otelhooks._live import LiveEvent, Verdict
from otelhooks._metrics import AgentMetrics

if TYPE_CHECKING:
    from otelhooks._actions._webhook_delivery import WebhookDeliverer

__all__ = ["HooksEngine"]


class HooksEngine:
    """Matches hooks to lifecycle events and runs them: one engine per pipeline.

    Args:
        hooks: hooks to register at once (``Hook`` objects or their mappings).
        registry: share an existing registry instead of a new one.
        metrics: where invocations, durations and drops are counted.
        deliverer: where notification webhooks deliver; a deliverer of the engine's own, created
            when the first one is queued, when omitted.
        max_queue_size: observer events waiting at most; beyond it new ones are dropped and
            counted in ``otelhooks.dropped{source="observer_queue"}``.
        pool_size: threads that run sync interceptors under their deadlines.

    Example:
        >>> from otelhooks import Block, HooksEngine
        >>> from otelhooks.events import ToolCallEvent
        >>> engine = HooksEngine([{
        ...     "id": "no-rm", "type": "beforeToolCall", "matcher": "rm",
        ...     "handler": lambda e: Block("rm is not allowed"),
        ... }])
        >>> call = ToolCallEvent(toolCallId="c1", identifier="", apiName="rm", args={})
        >>> engine.decide("before_tool_call", call).reason
        'rm is not allowed'
    """

    def __init__(
        self,
        hooks: Iterable[Hook | Mapping[str, Any]] = (),
        *,
        registry: HookRegistry | None = None,
        metrics: AgentMetrics | None = None,
        deliverer: WebhookDeliverer | None = None,
        max_queue_size: int = 4_096,
        pool_size: int = 8,
    ) -> None:
        self._dispatcher = Dispatcher(
            registry, metrics=metrics, max_queue_size=max_queue_size, pool_size=pool_size
        )
        self._dispatcher.deliverer = deliverer
        # Notification webhooks registered later (per operation, straight into the registry)
        # find this engine's deliverer through the dispatcher, never a process-wide one.
        self._dispatcher.deliverer_factory = lambda: self.deliverer
        self._owns_deliverer = False
        # Instrumentation scopes whose spans this engine saw start (AgentTracer's): their events
        # were dispatched already, so a span processor must not map them again. Held by identity,
        # so spans received from elsewhere under the same scope name still count as foreign.
        self._own_scopes: tuple[object, ...] = ()
        self._own_scope_ids: frozenset[int] = frozenset()  # theirs, held alive by _own_scopes
        # queue_observed(live): an ended snapshot event, every hook of whose live.hooks runs on
        # the observer worker (the registry answer's ``queued`` events), queued as it is: what
        # ended() comes to for it, without its four calls on the agent's thread (an observed
        # tool call's end). False: dropped, and counted, as ended() drops it.
        self.queue_observed: Callable[[LiveEvent], bool] = self._dispatcher.queue_observed
        if hooks:
            self.registry.register(hooks)

    @classmethod
    def from_files(cls, paths: Sequence[str | os.PathLike[str]], **options: Any) -> HooksEngine:
        """An engine with the hooks of config files (any format :func:`load_config` reads).

        Raises:
            ConfigErrors: a file has problems (all of them, with file and line).
        """
        from otelhooks._config import load_config

        return cls(load_config([os.fspath(p) for p in paths]).hooks, **options)

    # -- wiring ----------------------------------------------------------------------------------

    @property
    def registry(self) -> HookRegistry:
        """The registered hooks (global and per operation)."""
        return self._dispatcher.registry

    @property
    def metrics(self) -> AgentMetrics:
        return self._dispatcher.metrics

    @property
    def observer_room(self) -> int:
        """Observer events that can be queued now before one is dropped (the OTLP receiver waits
        for room instead of acknowledging spans whose events it would drop)."""
        return self._dispatcher.observer_room

    @property
    def observers_dropped(self) -> int:
        """Observer events dropped so far (queue full or shut down)."""
        return self._dispatcher.observers_dropped

    @property
    def deliverer(self) -> WebhookDeliverer:
        """This engine's webhook deliverer (created on first use when none was given)."""
        deliverer = self._dispatcher.deliverer
        if deliverer is None:
            from otelhooks._actions._webhook_delivery import WebhookDeliverer

            deliverer = self._dispatcher.deliverer = WebhookDeliverer(metrics=self.metrics)
            self._owns_deliverer = True
        return deliverer

    @deliverer.setter
    def deliverer(self, deliverer: WebhookDeliverer) -> None:
        """Deliver this engine's notification webhooks through ``deliverer`` (its owner shuts it
        down; the engine only flushes what it created itself)."""
        self._dispatcher.deliverer = deliverer
        self._owns_deliverer = False

    def register(
        self, hooks: Iterable[Hook | Mapping[str, Any]], *, operation_id: str | None = None
    ) -> list[Hook]:
        """Register hooks globally or for one operation (see :class:`HookRegistry`)."""
        return self.registry.register(hooks, operation_id=operation_id)

    def matches(self, event: str, values: tuple[str, ...], operation_id: str | None = None) -> bool:
        """Whether any hook matches ``event`` now (a cached lookup: cheap on the hot path)."""
        return self.registry.any_match(event, values, operation_id=operation_id)

    def hooked(
        self, events: tuple[str, ...], values: tuple[str, ...], operation_id: str | None = None
    ) -> Hooked:
        """Which of ``events`` have a hook matching ``values`` now, each with its hooks in the
        order they run (a shared answer: read it, never change it).

        One question for the whole life of an action (a tool call's four events), asked again
        only when :attr:`HookRegistry.version` moves; with no hook registered it costs nothing.

        Example:
            >>> engine = HooksEngine([{"id": "w", "type": "PostToolUse", "matcher": "rm",
            ...                        "handler": print}])
            >>> sorted(engine.hooked(("before_tool_call", "after_tool_call"), ("rm",)))
            ['after_tool_call']
        """
        registry = self.registry
        if not registry.has_any():
            return NO_EVENTS
        return registry.hooked(events, values, operation_id=operation_id)

    def claim_scope(self, scope: object) -> None:
        """Mark the spans of an instrumentation scope object as dispatched by this engine."""
        if scope is not None and not self.is_own_scope(scope):
            self._own_scopes = (*self._own_scopes, scope)
            self._own_scope_ids = frozenset(map(id, self._own_scopes))

    def is_own_scope(self, scope: object) -> bool:
        """Whether spans of ``scope`` (the object, not its name) were dispatched here."""
        # By identity: a set of ids, not any(... is ...), whose generator cost every span ended
        # through the processor about 1,000 instructions (measured).
        return id(scope) in self._own_scope_ids

    # -- events as payloads ----------------------------------------------------------------------

    def dispatch(
        self,
        event: str,
        payload: HookEvent | Mapping[str, Any],
        *,
        values: tuple[str, ...] | None = None,
        operation_id: str | None = None,
    ) -> Verdict:
        """An event happens: run its interceptors now, or queue it for its observers.

        Args:
            event: any dialect's name of the event (``beforeToolCall``, ``PreToolUse``, ...).
            payload: the event's model (:mod:`otelhooks.events`) or a mapping of its fields.
            values: what matchers compare (derived from the payload when omitted, see
                :func:`matcher_values`).
            operation_id: the operation whose own hooks apply too.

        Returns:
            The verdict; for an observed event, ``matched`` lists the hooks it was queued for.

        Raises:
            CriticalHookDeliveryError: a ``fallback: none`` webhook could not be queued durably.
        """
        live = self._live(event, payload, values, operation_id)
        verdict = self.start(live)
        self.end(live)
        _raise_critical(live)
        return _own(verdict, live)

    async def adispatch(
        self,
        event: str,
        payload: HookEvent | Mapping[str, Any],
        *,
        values: tuple[str, ...] | None = None,
        operation_id: str | None = None,
    ) -> Verdict:
        """As :meth:`dispatch`, awaiting interceptors without blocking the event loop."""
        live = self._live(event, payload, values, operation_id)
        verdict = await self.astart(live)
        self.end(live)
        _raise_critical(live)
        return _own(verdict, live)

    def decide(
        self,
        event: str,
        payload: HookEvent | Mapping[str, Any],
        *,
        values: tuple[str, ...] | None = None,
        operation_id: str | None = None,
        call_webhooks: bool = False,
        inline: bool = False,
    ) -> Verdict:
        """What these hooks would decide for ``event``, without acting on it.

        The intercept chain runs exactly as live (same matchers, order, handlers, commands and
        scripts). Nothing is queued for observers and nothing is counted; control webhooks are
        listed in ``Verdict.would_call`` unless ``call_webhooks``. For an event that is not an
        intercept point the verdict is empty (observers cannot change anything).

        ``inline=True`` calls sync Python hooks on this thread instead of the handler pool and
        judges their deadlines when they return: the same verdict, many times faster for bulk
        callers (replay), but a hook that never returns blocks the caller.
        """
        live = self._live(event, payload, values, operation_id)
        if not EVENTS[live.name].intercept:
            return Verdict(payload=live.payload())
        return self._dispatcher.intercept(
            live, dry_run=True, call_webhooks=call_webhooks, inline=inline
        )

    async def adecide(
        self,
        event: str,
        payload: HookEvent | Mapping[str, Any],
        *,
        values: tuple[str, ...] | None = None,
        operation_id: str | None = None,
        call_webhooks: bool = False,
    ) -> Verdict:
        """As :meth:`decide`, awaiting interceptors without blocking the event loop."""
        live = self._live(event, payload, values, operation_id)
        if not EVENTS[live.name].intercept:
            return Verdict(payload=live.payload())
        return await self._dispatcher.intercept_async(
            live, dry_run=True, call_webhooks=call_webhooks
        )

    def trial(
        self,
        event: str,
        payload: HookEvent | Mapping[str, Any],
        *,
        values: tuple[str, ...] | None = None,
    ) -> Verdict:
        """Fire every hook that matches ``event`` once, for real, and say what each did.

        Interceptors form the live chain (commands run, control webhooks are called); observers
        run on this thread instead of the queue, so their outcome is known; notification
        webhooks are queued on the engine's deliverer. ``Verdict.steps`` has one entry per hook
        that ran or was queued. This is ``otelhooks hooks test``.
        """
        live = self._live(event, payload, values, None)
        if EVENTS[live.name].intercept:
            return self._dispatcher.intercept(live)
        return self._dispatcher.observe_now(live)

    @staticmethod
    def _live(
        event: str,
        payload: HookEvent | Mapping[str, Any],
        values: tuple[str, ...] | None,
        operation_id: str | None,
    ) -> LiveEvent:
        spec, _ = resolve_event(event)
        model = payload if isinstance(payload, HookEvent) else spec.payload.model_validate(payload)
        return LiveEvent(
            spec.name,
            lambda: model,
            values=values if values is not None else matcher_values(model),
            operation_id=operation_id if operation_id is not None else model.operationId,
        )

    # -- events in flight (the instrumentation's road) -------------------------------------------

    def start(self, live: LiveEvent) -> Verdict:
        """``live`` happens: interceptors run now; observers are queued.

        A ``fallback: none`` delivery failure is parked on ``live.critical`` for the caller to
        raise once its span is complete (never inside the SDK's callbacks).
        """
        if not self.registry.any_match(live.name, live.values, operation_id=live.operation_id):
            return _NO_HOOKS  # the common case, kept to one cached lookup
        if EVENTS[live.name].intercept:
            return self._dispatcher.intercept(live)
        return self._observe(live)

    async def astart(self, live: LiveEvent) -> Verdict:
        """As :meth:`start`, awaiting interceptors without blocking the event loop."""
        if not self.registry.any_match(live.name, live.values, operation_id=live.operation_id):
            return _NO_HOOKS
        if EVENTS[live.name].intercept:
            return await self._dispatcher.intercept_async(live)
        return self._observe(live)

    def end(self, live: LiveEvent) -> None:
        """Queue the events that happened when ``live``'s span ended (``after_tool_call``...).
        Interceptors of end events run inline, in the instrumentation, so they are skipped here."""
        for follow in live.followups:
            self.ended(follow)
            if follow.critical is not None and live.critical is None:
                live.critical = follow.critical

    def ended(self, live: LiveEvent) -> None:
        """Queue ``live``, an event that happened as a span ended, for its observers (as
        :meth:`end` does for each of its follow-ups); a ``fallback: none`` failure is parked on
        ``live.critical``.

        Example:
            >>> done = LiveEvent("after_step", lambda: AfterStepEvent(stepIndex=0))
            >>> engine.ended(done)  # queued for the after_step observers, if any
        """
        if not EVENTS[live.name].intercept:
            try:
                self._dispatcher.observe(live)  # no verdict: nobody reads it here
            except CriticalHookDeliveryError as exc:
                live.critical = exc

    def observe(self, live: LiveEvent) -> Verdict:
        """Queue ``live`` for its observers (interceptors are not run: the event already
        happened, as for spans other instrumentations made)."""
        return self._observe(live)

    def _observe(self, live: LiveEvent) -> Verdict:
        try:
            matched = self._dispatcher.observe(live)
        except CriticalHookDeliveryError as exc:
            live.critical = exc
            return Verdict(matched=[])
        return Verdict(matched=[h.id for h in matched]) if matched else _NO_HOOKS

    # -- lifecycle -------------------------------------------------------------------------------

    def flush_observers(self, timeout_s: float = 30.0) -> bool:
        """Run queued observers within ``timeout_s`` (queued webhooks are not waited for)."""
        return self._dispatcher.flush(timeout_s)

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Run queued observers and deliver queued webhooks, within ``timeout_s``."""
        ok = self._dispatcher.flush(timeout_s)
        if self._owns_deliverer and self._dispatcher.deliverer is not None:
            ok = self._dispatcher.deliverer.flush(timeout_s) and ok
        return ok

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Flush within ``timeout_s`` and stop the workers (a deliverer the engine created is
        shut down too; one it was given belongs to its owner)."""
        self._dispatcher.shutdown(timeout_s)
        if self._owns_deliverer and self._dispatcher.deliverer is not None:
            self._dispatcher.deliverer.shutdown(timeout_s)


# Returned for every event no hook matched (the hot path allocates nothing); callers only read it.
_NO_HOOKS = Verdict()


def _raise_critical(live: LiveEvent) -> None:
    if live.critical is not None:
        critical, live.critical = live.critical, None
        raise critical


def _own(verdict: Verdict, live: LiveEvent) -> Verdict:
    """A verdict the caller may keep and change: never the shared no-hook one."""
    return Verdict(payload=live.payload()) if verdict is _NO_HOOKS else verdict
