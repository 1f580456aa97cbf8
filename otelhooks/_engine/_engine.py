"""``HooksEngine``: the one object that matches hooks to events and runs them.

Every road an event takes ends here: the instrumentation (``AgentTracer`` and its scopes), the span
processor for other instrumentations' spans, ``WebhookSpanExporter``, ``otelhooks hooks test``,
the framework adapters, the Claude Code bridge, the MCP gateway and replay. The engine owns the
registry, the dispatcher (its handler pool and observer worker) and the webhook deliverer, wired
when it is built; nothing here is a process-wide default that a later caller replaces.

The caller says what happened; the engine alone decides which hooks run, inline or queued, and
through which deliverer. One call per moment, sync and async in pairs where a hook may be
awaited:

- :meth:`start` / :meth:`astart`: an event happens (an action is about to run, or a point
  event). Its interceptors decide now and the verdict is returned; its observers are queued.
- :meth:`end`: the event's span ended: the events that followed it (``after_tool_call``,
  ``on_complete``...) are queued for their observers. Nothing waits, so there is no async twin.
- :meth:`dispatch` / :meth:`adispatch`: ``start`` and ``end`` for a caller holding a payload
  rather than a :class:`~otelhooks._live.LiveEvent` (the MCP gateway, the Claude Code bridge).

Two questions that are not events: :meth:`dry_run` / :meth:`adry_run` (what these hooks *would*
decide, for replay and tool filtering) and :meth:`fire` (run every matching hook once and report
each, for ``otelhooks hooks test``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from otelhooks._dispatch import NO_EVENTS, Dispatcher, Hooked, HookRegistry, InterceptChain
from otelhooks._engine._values import matcher_values
from otelhooks._events import EVENTS, EventSpec, HookEvent, resolve_event
from otelhooks._hooks import Hook
from otelhooks._live import LiveEvent, Verdict
from otelhooks._metrics import AgentMetrics

if TYPE_CHECKING:
    from otelhooks._actions._webhook_delivery import WebhookDeliverer

__all__ = ["HooksEngine", "dry_run_if_hooked"]


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
        >>> engine.dry_run("before_tool_call", call).reason
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
        self,
        hooks: Iterable[Hook | Mapping[str, Any]],
        *,
        operation_id: str | None = None,
        within: str | None = None,
    ) -> list[Hook]:
        """Register hooks globally or for one operation (see :class:`HookRegistry`)."""
        return self.registry.register(hooks, operation_id=operation_id, within=within)

    def matches(self, event: str, values: tuple[str, ...], operation_id: str | None = None) -> bool:
        """Whether any hook matches ``event`` now (a cached lookup: cheap on the hot path)."""
        return self.registry.any_match(event, values, operation_id=operation_id)

    def hooked(
        self, events: tuple[str, ...], values: tuple[str, ...], operation_id: str | None = None
    ) -> Hooked:
        """Which of ``events`` have a hook matching ``values`` now, each with its hooks in the
        order they run (a shared answer: read it, never change it).

        One question for all the events of an action (a tool call's four), for the hooks
        it writes on its span; with no hook registered it costs nothing.

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
        return id(scope) in self._own_scope_ids

    # -- events in flight (the instrumentation's road) -------------------------------------------

    def start(self, live: LiveEvent) -> Verdict:
        """``live`` happens: its interceptors decide now, its observers are queued.

        A ``fallback: none`` delivery failure is parked on ``live.critical`` for the caller to
        raise once its span is complete (never inside the SDK's callbacks).

        Example:
            >>> from otelhooks._live import LiveEvent
            >>> from otelhooks.events import AfterStepEvent
            >>> engine = HooksEngine([{"id": "w", "type": "afterStep", "handler": print}])
            >>> engine.start(LiveEvent("after_step", lambda: AfterStepEvent(stepIndex=0))).matched
            ['w']
            >>> engine.shutdown()  # the observer runs on the engine's worker: flushed here
            event='after_step' ... stepIndex=0 ...
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
        """``live``'s span ended: queue the events that followed it for their observers (their
        interceptors, if any, ran inline in the instrumentation). The first ``fallback: none``
        failure is parked on ``live.critical``."""
        for follow in live.followups:
            if not EVENTS[follow.name].intercept:
                self._observe(follow)
            if follow.critical is not None and live.critical is None:
                live.critical = follow.critical

    def _observe(self, live: LiveEvent) -> Verdict:
        matched = self._dispatcher.observe(live)
        return Verdict(matched=[h.id for h in matched]) if matched else _NO_HOOKS

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
        return _settled(self.start(live), live)

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
        return _settled(await self.astart(live), live)

    def dry_run(
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
        listed in ``Verdict.would_call`` unless ``call_webhooks``, and approval hooks always
        are (no person is asked about a call nobody waits for). For an event that is not an
        intercept point the verdict is empty (observers cannot change anything).

        ``inline=True`` calls sync Python hooks on this thread instead of the handler pool and
        judges their deadlines when they return: the same verdict, many times faster for bulk
        callers (replay), but a hook that never returns blocks the caller.
        """
        spec, model, values, operation_id = self._resolve(event, payload, values, operation_id)
        if not spec.intercept:
            return Verdict(payload=model)
        intercepts = self.registry.intercepts(spec.name, values, operation_id=operation_id)
        if not intercepts.facts:  # nothing decides: no payload to report
            return Verdict(matched=list(intercepts.matched))
        chain = self._dispatcher.decide(
            spec.name, model, intercepts, call_webhooks=call_webhooks, inline=inline
        )
        return chain.verdict()

    async def adry_run(
        self,
        event: str,
        payload: HookEvent | Mapping[str, Any],
        *,
        values: tuple[str, ...] | None = None,
        operation_id: str | None = None,
        call_webhooks: bool = False,
    ) -> Verdict:
        """As :meth:`dry_run`, awaiting interceptors without blocking the event loop."""
        live = self._live(event, payload, values, operation_id)
        if not EVENTS[live.name].intercept:
            return Verdict(payload=live.payload())
        return await self._dispatcher.intercept_async(
            live, dry_run=True, call_webhooks=call_webhooks
        )

    def fire(
        self,
        event: str,
        payload: HookEvent | Mapping[str, Any],
        *,
        values: tuple[str, ...] | None = None,
        only: Callable[[Hook], bool] | None = None,
    ) -> Verdict:
        """Fire every hook that matches ``event`` once, for real, and say what each did.

        Interceptors form the live chain (commands run, control webhooks are called); observers
        run on this thread instead of the queue, so their outcome is known; notification
        webhooks are queued on the engine's deliverer. ``Verdict.steps`` has one entry per hook
        that ran or was queued. This is ``otelhooks hooks test``.

        ``only`` (observed events): fire just the matching hooks it accepts, so a caller can
        fire an event's hooks in two groups, the second told what the first decided.
        """
        live = self._live(event, payload, values, None)
        if EVENTS[live.name].intercept:
            if only is not None:
                raise ValueError("only= selects observers; an intercept chain runs whole")
            return self._dispatcher.intercept(live)
        return self._dispatcher.observe_now(live, only=only)

    @staticmethod
    def _live(
        event: str,
        payload: HookEvent | Mapping[str, Any],
        values: tuple[str, ...] | None,
        operation_id: str | None,
    ) -> LiveEvent:
        spec, model, values, operation_id = HooksEngine._resolve(
            event, payload, values, operation_id
        )
        return LiveEvent(spec.name, lambda: model, values=values, operation_id=operation_id)

    @staticmethod
    def _resolve(
        event: str,
        payload: HookEvent | Mapping[str, Any],
        values: tuple[str, ...] | None,
        operation_id: str | None,
    ) -> tuple[EventSpec, HookEvent, tuple[str, ...], str | None]:
        """A caller's event as the dispatcher takes it: its spec, the payload validated, and
        the matcher values and operation id the payload gives unless the caller gave them."""
        spec, _ = resolve_event(event)
        model = payload if isinstance(payload, HookEvent) else spec.payload.model_validate(payload)
        if values is None:
            values = matcher_values(model)
        if operation_id is None:
            operation_id = model.operationId
        return spec, model, values, operation_id

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


def dry_run_if_hooked(
    engine: HooksEngine,
    event: str,
    values: tuple[str, ...],
    build: Callable[[], HookEvent],
    *,
    call_webhooks: bool = False,
    inline: bool = False,
) -> InterceptChain | None:
    """:meth:`HooksEngine.dry_run` for a bulk caller that builds a payload only when a hook
    wants it (replay): ``event`` is a canonical intercept event's name and ``values`` its
    matcher values. None when no global hook matches (nothing is built, as live); else the
    chain ``dry_run`` runs for the payload ``build`` makes, with the operation id it carries:
    it carries the verdict's fields (``InterceptChain.verdict()`` makes the verdict), which a
    bulk caller reads there rather than have a :class:`Verdict` made for every event.

    One registry lookup for both questions, where ``matches`` and then ``dry_run`` ask twice.
    ``build`` makes a payload of its own at each call, holding values nothing else holds (a
    replay parses them from the span): the chain hands the hooks those values and keeps its
    copy to compare with (``InterceptChain._hold``), where a caller's payload is given a copy.
    """
    dispatcher = engine._dispatcher
    registry = dispatcher.registry
    intercepts = registry.intercepts(event, values)
    if not intercepts.hooks:
        return None
    payload = build()
    operation_id = payload.operationId
    if operation_id is not None and registry.has_own(operation_id):
        # that operation's own hooks apply too, as in dry_run
        intercepts = registry.intercepts(event, values, operation_id=operation_id)
    return dispatcher.decide(event, payload, intercepts, call_webhooks, inline, owned=True)


# Returned for every event no hook matched (the hot path allocates nothing); callers only read it.
_NO_HOOKS = Verdict()


def _settled(verdict: Verdict, live: LiveEvent) -> Verdict:
    """``verdict`` as a caller may keep and change it (never the shared no-hook one), after
    raising a ``fallback: none`` failure."""
    if live.critical is not None:
        critical, live.critical = live.critical, None
        raise critical
    return Verdict(payload=live.payload()) if verdict is _NO_HOOKS else verdict
