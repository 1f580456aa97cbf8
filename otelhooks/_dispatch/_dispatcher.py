"""Running hooks: interceptors inline (sync, or awaited in async runtimes), observers off the path.

:class:`Dispatcher` matches hooks to an event and runs them by the rules of :mod:`._chain`.
Interceptors decide before the action, so the runtime waits for them, but never longer than
each hook's ``timeout`` (:mod:`._calls`). Observers never make the runtime wait: they are queued
for the observer worker (:mod:`._observers`); notification webhooks are handed to their
deliverer, which queues them itself.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import copy_context
from inspect import isawaitable
from time import perf_counter
from typing import TYPE_CHECKING

import structlog

from otelhooks import _semconv as sc
from otelhooks._actions._notes import note
from otelhooks._dispatch._calls import MAX_ABANDONED, HookCalls
from otelhooks._dispatch._chain import InterceptChain
from otelhooks._dispatch._failures import failure_text, hooks_failure
from otelhooks._dispatch._late import late_answer
from otelhooks._dispatch._observers import ObserverRunner
from otelhooks._dispatch._registry import HookRegistry, Intercepts
from otelhooks._errors import (
    CriticalHookDeliveryError,
    DeadlinePassed,
    HookCapacityError,
    HookError,
    HookTimeoutError,
)
from otelhooks._events import HookEvent
from otelhooks._hook_step import HookStep
from otelhooks._hooks import Block, Hook, HookFacts, enqueues
from otelhooks._live import LiveEvent, Verdict
from otelhooks._metrics import AgentMetrics
from otelhooks._redact import scrub

if TYPE_CHECKING:
    from otelhooks._actions._webhook_delivery import WebhookDeliverer

__all__ = [
    "MAX_ABANDONED",
    "Dispatcher",
    "HookCapacityError",
    "HookPoolExhaustedError",
]

HookPoolExhaustedError = HookCapacityError  # the name of earlier releases
_ATTRS_LIMIT = 1024


_log = structlog.get_logger("otelhooks")


def _payload_ids(payload: HookEvent) -> dict[str, str]:
    """``trace_id`` and ``span_id`` of a payload's span, for a log line (as
    :meth:`LiveEvent.log_ids` gives them for a built payload)."""
    if payload.traceId and payload.spanId:
        return {"trace_id": payload.traceId, "span_id": payload.spanId}
    return {}


class Dispatcher:
    """Matches hooks to events and runs them by the rules of :mod:`._chain`.

    Args:
        registry: where hooks are registered.
        metrics: records every invocation as ``otelhooks.hook.invocations{hook, event, outcome}``.
        max_queue_size: bound of the observer queue.
        pool_size: threads that run sync handlers under a deadline.
    """

    def __init__(
        self,
        registry: HookRegistry | None = None,
        *,
        metrics: AgentMetrics | None = None,
        max_queue_size: int = 65_536,
        pool_size: int = 8,
    ) -> None:
        self.registry = registry if registry is not None else HookRegistry()
        self.metrics = metrics or AgentMetrics()
        # Where this pipeline's notification webhooks deliver (configure() sets its own, so two
        # pipelines in one process keep their queues and metrics apart); None: the default.
        self.deliverer: WebhookDeliverer | None = None
        # Called for a deliverer when a notification is queued and none was set (the engine
        # creates its own on first use, so pipelines without webhooks start no event loop).
        self.deliverer_factory: Callable[[], WebhookDeliverer] | None = None
        self._calls = HookCalls(pool_size)
        # Metric attributes per (hook, outcome), built once: never mutated.
        self._attrs: dict[tuple[str, str, str, str], dict[str, str]] = {}
        self._observers = ObserverRunner(
            self._calls,
            self._record,
            self._record_many,
            self.metrics,
            max_queue_size=max_queue_size,
        )

    # -- matching -------------------------------------------------------------------------------

    def match(self, live: LiveEvent) -> list[Hook]:
        return self.registry.match(live.name, live.values, operation_id=live.operation_id)

    # -- intercept: sync and async, the same rules -----------------------------------------------

    def intercept(self, live: LiveEvent) -> Verdict:
        """Run the interceptors of ``live`` now, on this thread, each under its deadline."""
        chain = self._begin_chain(live)
        if chain is None:
            return self._end_chain(live, None)
        self._run_chain(chain, live, inline=False)
        return self._end_chain(live, chain)

    def decide(
        self,
        name: str,
        payload: HookEvent,
        intercepts: Intercepts,
        call_webhooks: bool = False,
        inline: bool = False,
        owned: bool = False,
    ) -> InterceptChain:
        """What the interceptors of ``name`` would decide for ``payload`` (``HooksEngine.dry_run``:
        the caller holds the payload, so no :class:`LiveEvent` is made for it, and has looked up
        its ``intercepts``), with no side effect beyond the hooks themselves: notification
        webhooks are not enqueued and nothing is counted in metrics. ``call_webhooks=False``:
        control webhooks are listed in ``would_call`` instead of called; approval hooks always
        are (no person is asked about a call that is not waiting). ``inline``: call sync
        hooks on this thread and judge their deadlines when they return (see :meth:`_run_chain`).
        ``owned``: ``payload`` was built for this call alone, nothing else holds its values
        (see :meth:`InterceptChain._hold`).

        Returns the chain, which carries the decision in a verdict's fields (its
        :meth:`~InterceptChain.verdict` makes a :class:`Verdict` of them)."""
        # Notifications observe; a dry run decides only (a chain without facts runs no hook).
        chain = InterceptChain(
            name,
            payload,
            intercepts.facts,
            intercepts.matched,
            intercepts.watched,
            True,
            call_webhooks,
            owned,
        )
        self._run_chain(chain, None, inline)
        return chain

    def _run_chain(self, chain: InterceptChain, live: LiveEvent | None, inline: bool) -> None:
        """Run the hooks of ``chain`` on this thread; ``live``: the event, for log lines.

        ``inline``: a sync hook is called on this thread and its deadline judged after it
        returns. The verdict is the one the pooled call gives for every hook that returns (one
        past its deadline is a timeout, and what it did late does not count), without two
        thread hand-offs per hook, which cost more than most handlers (replay runs whole
        recordings). A hook that never returns blocks the caller: only for callers that accept
        that (dry runs). Commands and webhooks enforce their own timeouts either way."""
        calls = self._calls
        listed = chain.listed  # kinds of hook listed, not run (a control webhook, a person)
        counted = not chain.dry_run  # a live run's durations are counted; a dry run's are not
        hooks = chain.hooks
        while hooks:
            for hook in hooks:
                if (chain.soft_rank or hook.kind in listed) and self._skips(chain, hook):
                    continue
                payload = chain.scratch_for(hook) if hook.permissive else chain.payload
                started = perf_counter()
                try:
                    if not inline or hook.is_async:
                        result = calls.call(hook.hook, payload)
                    else:
                        # In a copy of the context, as in the pool: a hook's context variables stay
                        # its own. ``hook.call``: what the observer worker calls for it too (a
                        # Python handler: its function); a command or a control webhook bounds its
                        # own time.
                        result = copy_context().run(hook.call, payload)
                        # A sync callable's coroutine (the payload itself, or None, never is).
                        if result is not None and result is not payload and isawaitable(result):
                            result = calls.run_coroutine(hook.hook, result)
                        elif perf_counter() - started > hook.deadline_s:
                            late_answer(hook.hook, result)
                            raise DeadlinePassed  # late, as the pool would have judged it
                except Exception as exc:
                    stop = self._hook_failed(chain, hook, live, exc, started)
                except BaseException as exc:  # an inline hook's SystemExit...: see hooks_failure
                    failure = hooks_failure(exc)
                    if failure is None:
                        raise
                    stop = self._hook_failed(chain, hook, live, failure, started)
                else:
                    stop, outcome = chain.apply(hook, result)
                    if counted:
                        self._count_returned(chain, hook, live, outcome, started)
                if stop:
                    break
            # rule 8: an approval's edit stopped the loop, to be judged from the first hook
            hooks = chain.again() if chain.edited_by is not None else ()

    async def intercept_async(
        self, live: LiveEvent, *, dry_run: bool = False, call_webhooks: bool = True
    ) -> Verdict:
        """As :meth:`intercept`, without blocking the event loop while hooks run; ``dry_run``
        (``HooksEngine.adry_run``) and ``call_webhooks`` as for :meth:`decide`."""
        chain = self._begin_chain(live, dry_run, call_webhooks)
        if chain is None:
            return self._end_chain(live, None)
        listed = chain.listed
        counted = not chain.dry_run
        hooks = chain.hooks
        while hooks:
            for hook in hooks:
                if (chain.soft_rank or hook.kind in listed) and self._skips(chain, hook):
                    continue
                payload = chain.scratch_for(hook) if hook.permissive else chain.payload
                started = perf_counter()
                try:
                    result = await self._calls.acall(hook.hook, payload)
                except Exception as exc:
                    stop = self._hook_failed(chain, hook, live, exc, started)
                else:
                    stop, outcome = chain.apply(hook, result)
                    if counted:
                        self._count_returned(chain, hook, live, outcome, started)
                if stop:
                    break
            # rule 8: an approval's edit stopped the loop, to be judged from the first hook
            hooks = chain.again() if chain.edited_by is not None else ()
        return self._end_chain(live, chain)

    # The two loops above differ only in how a hook is called; the rules live here and in
    # InterceptChain.

    def _begin_chain(
        self, live: LiveEvent, dry_run: bool = False, call_webhooks: bool = True
    ) -> InterceptChain | None:
        intercepts = self.registry.intercepts(
            live.name, live.values, operation_id=live.operation_id
        )
        notified: list[HookStep] = []
        if not dry_run:  # notifications observe: queued live, left out of a dry run
            _, live.critical = self._enqueue_notifications(live, intercepts.hooks, notified)
        if not intercepts.facts:
            live.verdict = Verdict(matched=list(intercepts.matched), steps=notified)
            return None
        chain = InterceptChain(
            live.name,
            live.payload(),
            intercepts.facts,
            intercepts.matched,
            intercepts.watched,
            dry_run,
            call_webhooks,
        )
        chain.steps += notified
        return chain

    @staticmethod
    def _skips(chain: InterceptChain, hook: HookFacts) -> bool:
        """Whether ``hook`` does not run (the loops ask only when a rule here can apply: an
        ask/defer holds the chain open, or ``hook`` asks outside and is only listed)."""
        if chain.skips(hook):
            return True
        if hook.kind in chain.listed:
            chain.would_call.append(hook.id)  # a control webhook or a person: reported, not asked
            return True
        return False

    @staticmethod
    def _end_chain(live: LiveEvent, chain: InterceptChain | None) -> Verdict:
        if chain is not None:
            live.verdict = chain.verdict()
        elif live.verdict is None:
            live.verdict = Verdict()
        return live.verdict

    def _count_returned(
        self,
        chain: InterceptChain,
        hook: HookFacts,
        live: LiveEvent | None,
        outcome: str,
        started: float,
    ) -> None:
        """A live chain's account of a hook that returned (a dry run counts nothing and its
        caller reports what a permissive hook would have done)."""
        if hook.permissive and chain.permissive != "allow":
            _log.info(
                "permissive hook not enforced",
                hook_id=hook.id,
                lifecycle_event=chain.event,
                would=chain.permissive,
            )
        elif outcome == "error":  # what it returned is no answer ({"decision": "mock"}, a list)
            self._say_failed(chain, hook, live, chain.errors[-1].removeprefix(f"{hook.id}: "))
        self._record(hook.hook, outcome, perf_counter() - started)

    @staticmethod
    def _say_failed(
        chain: InterceptChain, hook: HookFacts, live: LiveEvent | None, problem: str
    ) -> None:
        """The log line of a failed hook: whether it raised or returned what is no answer, its
        ``on_error`` policy decided what happens next, and the person running the agent is told
        (the span and the metrics say it too)."""
        _log.warning(
            "hook failed",
            hook_id=hook.id,
            lifecycle_event=chain.event,
            error=scrub(problem),
            **(live.log_ids() if live is not None else _payload_ids(chain.payload)),
        )

    def _hook_failed(
        self,
        chain: InterceptChain,
        hook: HookFacts,
        live: LiveEvent | None,
        exc: Exception,
        started: float,
    ) -> bool:
        """Record a hook that raised (``started``: when it was called)."""
        late = isinstance(exc, DeadlinePassed)
        if late:
            problem, outcome = f"timed out after {hook.deadline_s:g}s", "timeout"
        elif isinstance(exc, HookTimeoutError):  # the action enforced its own timeout (a command)
            problem, outcome = str(exc), "timeout"
        else:
            problem, outcome = failure_text(exc), "error"
        stop, outcome = chain.fail(hook, problem, outcome)
        chain.steps.append(
            HookStep(
                hook.id,
                hook.kind,
                outcome,
                scrub(problem),
                chain.permissive if hook.permissive else None,
            )
        )
        if outcome == "error":
            self._say_failed(chain, hook, live, str(exc))
        elif late:
            # Said as an error is: a guard too slow to answer let the call go on (on_error:
            # continue) with only a step on the span and a count to tell it. An action that
            # enforces its own timeout (a command, a webhook) says it there.
            self._say_failed(chain, hook, live, problem)
        if not chain.dry_run:
            self._record(hook.hook, outcome, perf_counter() - started)
        return stop

    # -- observe: queued, never awaited by the runtime -------------------------------------------

    def observe(self, live: LiveEvent) -> list[Hook]:
        """Queue ``live`` for its matching observers and return them. Builds the payload only
        if one matches. A ``fallback: none`` hook that could not be queued durably parks its
        :class:`CriticalHookDeliveryError` on ``live.critical`` (after every sibling was
        queued)."""
        matched = self.match(live)
        if matched:
            if not live.snapshot:
                # Fixed now: the runtime may change its inputs after this returns. A snapshot
                # holds its own copies, and the observer worker builds it.
                live.payload()
            rest, live.critical = self._enqueue_notifications(live, matched)
            if rest:
                self._observers.submit(live, rest)
        return matched

    def _enqueue_notifications(
        self, live: LiveEvent, hooks: list[Hook], steps: list[HookStep] | None = None
    ) -> tuple[list[Hook], CriticalHookDeliveryError | None]:
        """Hand hooks that deliver by themselves (notification webhooks) their event; return
        the others, and the critical failure to raise once they have run. Observation never
        gates execution, also on intercept events. ``steps`` collects what became of each.

        This is the one place that tells a notification from a hook the caller or the observer
        worker runs."""
        if not any(h.notifies for h in hooks):
            return hooks, None
        rest: list[Hook] = []
        failures: list[HookError] = []
        payload = live.payload()
        deliverer = self.deliverer
        if deliverer is None:
            if self.deliverer_factory is not None:
                deliverer = self.deliverer_factory()
            else:
                from otelhooks._actions._webhook_delivery import WebhookDeliverer

                deliverer = WebhookDeliverer(metrics=self.metrics)
            self.deliverer = deliverer
        for hook in hooks:
            action = hook.action
            if not enqueues(action):
                rest.append(hook)
                continue
            outcome, problem = "queued", None
            try:
                if not action.enqueue(payload, deliverer):
                    outcome = "dropped"
                    self._record(hook, "dropped", None)
            except Exception as exc:
                outcome, problem = "error", scrub(str(exc))
                self._record(hook, "error", None)
                _log.warning("hook delivery failed", hook_id=hook.id, error=problem)
                failures.append(HookError(str(exc), hook_id=hook.id, event=live.name))
            if steps is not None:
                steps.append(HookStep(hook.id, hook.action.kind, outcome, problem))
        return rest, CriticalHookDeliveryError(failures, event=live.name) if failures else None

    @property
    def observer_room(self) -> int:
        """Observer events that can be queued now before one is dropped (a receiver waits for
        room instead of acknowledging events it would drop)."""
        return self._observers.queue.room

    @property
    def observers_dropped(self) -> int:
        """Observer events dropped so far (queue full or shut down)."""
        return self._observers.queue.dropped

    def observe_now(
        self, live: LiveEvent, *, only: Callable[[Hook], bool] | None = None
    ) -> Verdict:
        """Run the observers of ``live`` on this thread (those ``only`` accepts, when given),
        each under its deadline, and say what each did (``otelhooks hooks test``);
        notification webhooks are queued as usual."""
        matched = self.match(live)
        if only is not None:
            matched = [h for h in matched if only(h)]
        steps: list[HookStep] = []
        rest, critical = self._enqueue_notifications(live, matched, steps)
        payload = live.payload()
        for hook in rest:
            started = perf_counter()
            outcome, problem = "ok", None
            try:
                result = self._calls.call(hook, payload)
                if isinstance(result, Block):
                    # an observer cannot block; the Claude Code bridge can deliver it (Stop...)
                    outcome = "blocked"
                    note(hook.id, result)
            except (DeadlinePassed, HookTimeoutError) as exc:
                outcome = "timeout"
                problem = (
                    f"timed out after {hook.deadline_s:g}s"
                    if isinstance(exc, DeadlinePassed)
                    else scrub(str(exc))
                )
            except Exception as exc:
                outcome, problem = "error", scrub(failure_text(exc))
            self._record(hook, outcome, perf_counter() - started)
            steps.append(HookStep(hook.id, hook.action.kind, outcome, problem))
        live.critical = critical
        return Verdict(payload=payload, matched=[h.id for h in matched], steps=steps)

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every queued observer event has been handled (or the deadline passes)."""
        return self._observers.flush(timeout_s)

    def shutdown(self, timeout_s: float = 30.0) -> None:
        self._observers.shutdown(timeout_s)  # flushes within the deadline first
        self._calls.shutdown()

    def _record(self, hook: Hook, outcome: str, duration_s: float | None) -> None:
        """Count one invocation; its run time too, unless it never ran (``None``: dropped or
        refused at the queue, which would otherwise pile zeros into the duration histogram)."""
        attrs = self._attrs_of(hook, outcome)
        if duration_s is None:
            self.metrics.hook_invocations.add(1, attrs)
        else:
            self.metrics.hook_run.record(duration_s, attrs)

    def _record_many(self, hook: Hook, outcome: str, durations: list[float]) -> None:
        """Count invocations of ``hook`` that ran for ``durations`` (the observer worker's
        batch)."""
        self.metrics.hook_run.record_many(durations, self._attrs_of(hook, outcome))

    def _attrs_of(self, hook: Hook, outcome: str) -> dict[str, str]:
        kind = hook.action.kind
        key = (hook.id, hook.event, kind, outcome)
        attrs = self._attrs.get(key)
        if attrs is None:
            if len(self._attrs) >= _ATTRS_LIMIT:
                self._attrs.clear()
            values = {
                sc.ATTR_HOOK_ID: hook.id,
                sc.ATTR_HOOK_EVENT: hook.event,
                sc.ATTR_HOOK_KIND: kind,
                sc.ATTR_OUTCOME: outcome,
            }
            if hook.mode == "permissive":  # its outcome was recorded, not enforced
                values[sc.ATTR_HOOK_MODE] = hook.mode
            attrs = self._attrs[key] = values
        return attrs
