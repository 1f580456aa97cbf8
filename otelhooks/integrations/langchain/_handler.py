"""``OtelHooksCallbackHandler``: LangChain / LangGraph callbacks as otelhooks spans and events.

The mapping (one place):

==================================  =============================================================
LangChain callback                  otelhooks
==================================  =============================================================
a root run (graph, chain, model)    operation ``invoke_agent {name}`` (the graph's name, or
                                    ``agent_name``); ``on_chain_error`` of it fires ``on_error``
                                    (a LangGraph interrupt ends it ``interrupted``)
chat model / LLM start and end      a new ``step {n}`` and its ``chat {model}`` span, usage from
                                    ``usage_metadata`` (or ``llm_output.token_usage``)
tool start, end, error              ``execute_tool {tool}`` in the current step (matcher value
                                    ``{identifier}/{tool}``, or the tool name); errors fire
                                    ``on_tool_call_error``
==================================  =============================================================

Nested chains (graph nodes, sub-chains) are not spans of their own; their model and tool calls
belong to the root run's operation. A ``before_agent_start`` block refuses the root run: its
start raises :class:`RunBlockedError` (the handler's ``raise_error``), so the graph, chain or
model never runs; every other failure of the handler is logged and swallowed. The
``before_tool_call`` hooks run at tool start; a tool wrapped with
:func:`~otelhooks.integrations.langchain.hook_tool` obeys a deny, a mock or a rewrite. A
callback cannot hand any other tool a mock or new arguments, so a call of it the hooks deny,
mock or rewrite is refused: the start raises :class:`~otelhooks.ToolDenied` (the handler's
``raise_error``), and LangChain raises it before the tool runs; a result of it the
``tool_result_persist`` hooks block or rewrite is withheld the same way, from the tool's end.

LangChain calls a synchronous handler from a worker thread in async runs, so interceptors never
run on the event loop thread.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import structlog
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult

from otelhooks._encoding import dumps
from otelhooks._errors import RunBlockedError, ToolDenied
from otelhooks._instrument import AgentTracer, LlmCall, Operation, Step
from otelhooks.integrations._scopes import DetachedScope
from otelhooks.integrations.langchain._model_calls import (
    model_name,
    provider_name,
    record_generation,
)
from otelhooks.integrations.langchain._resume import PausedCalls, ResumeWave, is_resume
from otelhooks.integrations.langchain._server_tools import (
    NamedOnce,
    UnguardedToolWarning,
    bound_provider_tools,
    record_server_tools,
    server_tool_calls,
)
from otelhooks.integrations.langchain._tool_run import (
    CALLER_INJECTED,
    GUARDED_BY,
    INNER_RUN_KEY,
    ToolNotHookedError,
    ToolRun,
)

__all__ = [
    "HOOKED_METADATA_KEY",
    "PROVIDER",
    "OtelHooksCallbackHandler",
    "RunBlockedError",
    "ToolRun",
    "succeeded",
]

# LangChain is not a model provider: the provider comes from each model call's ``ls_provider``
# (LangChain's tracing metadata), in the GenAI conventions' spelling where they name it.
PROVIDER: str | None = None
HOOKED_METADATA_KEY = "otelhooks_hooked"
_INTERRUPTS = frozenset({"GraphInterrupt", "NodeInterrupt"})

_REWRITE_REFUSED = (
    "a before_agent_start hook rewrote the input, which a LangChain run cannot take from a "
    "callback: the run was refused rather than run with the input as it was"
)

_log = structlog.get_logger("otelhooks")


@dataclass
class _Run:
    """A root run's operation, its current step and what is still open in the step."""

    owner: UUID
    operation: DetachedScope[Operation]
    step: DetachedScope[Step] | None = None
    open_in_step: int = 0
    members: set[UUID] = field(default_factory=set)
    wave: ResumeWave | None = None  # a resumed graph's: the tasks it resumes
    # hooked calls without a tool call id started so far, by task and tool: the n-th such
    # call of a tool in a task is the n-th again when a resume reruns the task, so its key
    # (by tool, so that calls of two tools a node runs at once cannot swap places)
    unnamed: dict[tuple[str, str], int] = field(default_factory=dict)

    def unnamed_key(self, metadata: dict[str, Any], name: str) -> str:
        """The key of a hooked call without a tool call id (a node calls the tool itself): its
        tool and place among such calls of it in its task (NULs: no model's call id spells
        it)."""
        place = (str(metadata.get("langgraph_checkpoint_ns", "")), name)
        n = self.unnamed[place] = self.unnamed.get(place, -1) + 1
        return f"\0{name}\0{n}"


def _text(output: Any) -> str:
    content = getattr(output, "content", output)
    return content if isinstance(content, str) else str(content)


class OtelHooksCallbackHandler(BaseCallbackHandler):
    """Turns LangChain / LangGraph runs into otelhooks operations, steps, chats and tools.

    Args:
        tracer: the :class:`~otelhooks.AgentTracer` (``otelhooks.configure().tracer``).
        agent_name: the operation's agent name (default: the root run's name, e.g. ``LangGraph``).
        session_id, user_id: recorded on every operation (``gen_ai.conversation.id``); the
            session defaults to the run's ``thread_id`` metadata when there is one.
        identifier: the ``identifier`` half of tool matcher values (``identifier/apiName``);
            empty by default, so matchers see the tool name.

    A hooked tool that asks a person (LangGraph's ``interrupt()``) pauses; resumed, it runs
    only with the arguments it had when it asked. Any handler, in any process, checks that
    when the graph was compiled with a ``store``, else the handler that saw the pause;
    a resume nothing recorded is refused. Give the handler in the run's config, where it sees
    the resume (docs/adapters.md, "LangChain / LangGraph").

    Example: (a whole run is in :mod:`otelhooks.integrations.langchain`'s example)
        >>> import otelhooks
        >>> oh = otelhooks.configure(otlp=False, set_global=False)
        >>> handler = OtelHooksCallbackHandler(oh.tracer, agent_name="researcher")
        >>> config = {"callbacks": [handler]}  # graph.invoke(state, config=config)
        >>> oh.shutdown().ok
        True
    """

    raise_error = True  # only RunBlockedError, ToolNotHookedError, ToolDenied leave it (_Guard)
    run_inline = False

    def __init__(
        self,
        tracer: AgentTracer,
        *,
        agent_name: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        identifier: str = "",
    ) -> None:
        self.tracer = tracer
        self.agent_name = agent_name
        self.session_id = session_id
        self.user_id = user_id
        self.identifier = identifier
        self._lock = threading.RLock()
        self._root_of: dict[UUID, UUID] = {}
        self._runs: dict[UUID, _Run] = {}
        self._llms: dict[UUID, DetachedScope[LlmCall]] = {}
        self._tools: dict[UUID, ToolRun] = {}
        self._sharers: dict[UUID, int] = {}  # later calls under an open tool run's id
        self._paused = PausedCalls()
        self.provider_tools_named = NamedOnce()  # shared with an OtelHooksMiddleware

    # -- bookkeeping ------------------------------------------------------------------------------

    def tool_run(self, run_id: UUID) -> ToolRun | None:
        """The open tool run ``run_id`` (what the tool wrapper consults)."""
        with self._lock:
            return self._tools.get(run_id)

    def _root(self, run_id: UUID, parent: UUID | None) -> UUID:
        root = run_id if parent is None else self._root_of.get(parent, parent)
        self._root_of[run_id] = root
        return root

    def _ensure_run(
        self, run_id: UUID, parent: UUID | None, name: str, kwargs: Any, input: str = ""
    ) -> _Run:
        root = self._root(run_id, parent)
        run = self._runs.get(root)
        if run is None:
            metadata = kwargs.get("metadata") or {}
            thread = metadata.get("thread_id")
            op = self.tracer.operation(
                self.agent_name or name,
                provider=PROVIDER,
                session_id=self.session_id or (str(thread) if thread is not None else None),
                user_id=self.user_id,
                input=input,
            )
            run = _Run(owner=run_id, operation=DetachedScope(op, None))
            run.operation.enter()
            refused = op.block_reason if op.blocked else None
            if not op.blocked and op.input != input:
                # a callback cannot hand the run another input: run as it was, the rewrite (a
                # redaction, say) would be lost without a word
                refused = _REWRITE_REFUSED
                op.complete("interrupted")
            if op.blocked or refused is not None:
                self._root_of.pop(run_id, None)
                run.operation.exit()
                raise RunBlockedError(refused)
            self._runs[root] = run
        run.members.add(run_id)
        return run

    def _new_step(self, run: _Run) -> Step:
        if run.step is not None and run.open_in_step == 0:
            run.step.exit()
            run.step = None
        op = run.operation.scope
        run.step = DetachedScope(op.step(), op.span)
        run.open_in_step = 0
        return run.step.enter()

    def _current_step(self, run: _Run) -> Step:
        return run.step.scope if run.step is not None else self._new_step(run)

    def _end_member(self, run_id: UUID, exc: BaseException | None = None) -> None:
        root = self._root_of.pop(run_id, None)
        if root is None or root not in self._runs or self._runs[root].owner != run_id:
            return
        run = self._runs.pop(root)
        for member in run.members:
            self._root_of.pop(member, None)
        interrupted = exc is not None and type(exc).__name__ in _INTERRUPTS
        if interrupted:
            run.operation.scope.complete("interrupted")
            exc = None
        if run.step is not None:
            run.step.exit(exc)
        run.operation.exit(exc)

    # -- chains ------------------------------------------------------------------------------------

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: dict[str, Any] | Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        with _Guard("on_chain_start"), self._lock:
            if parent_run_id is None:
                name = kwargs.get("name") or (serialized or {}).get("name") or "chain"
                # what before_agent_start guards read (before, "": an input guard let every run by)
                text = inputs if isinstance(inputs, str) else dumps(inputs)
                root = self._ensure_run(run_id, None, str(name), kwargs, text)
                if is_resume(inputs):
                    root.wave = ResumeWave()
            else:
                run = self._runs.get(self._root(run_id, parent_run_id))
                if run is not None and run.wave is not None:
                    run.wave.saw(kwargs.get("metadata") or {})

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        with _Guard("on_chain_end"), self._lock:
            self._end_member(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with _Guard("on_chain_error"), self._lock:
            self._end_member(run_id, error)

    # -- model calls -------------------------------------------------------------------------------

    def _llm_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[dict[str, Any]],
        run_id: UUID,
        parent_run_id: UUID | None,
        kwargs: dict[str, Any],
    ) -> None:
        bound = bound_provider_tools(kwargs.get("invocation_params") or {})
        if bound:  # the provider runs these: no hook can stop their calls, which it reports
            self.provider_tools_named.warn(bound, stacklevel=2)
        with self._lock:
            model = model_name(serialized, kwargs)
            run = self._ensure_run(run_id, parent_run_id, model, kwargs)
            step = self._new_step(run)
            run.open_in_step += 1
            call = step.llm(model, messages=messages, provider=provider_name(kwargs))
            scope = DetachedScope(call, step.span)
            self._llms[run_id] = scope
        scope.enter()

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        with _Guard("on_chat_model_start"):
            flat = [{"role": m.type, "content": m.content} for batch in messages for m in batch]
            self._llm_start(serialized, flat, run_id, parent_run_id, kwargs)

    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        with _Guard("on_llm_start"):
            flat = [{"role": "user", "content": p} for p in prompts]
            self._llm_start(serialized, flat, run_id, parent_run_id, kwargs)

    def _llm_done(self, run_id: UUID, exc: BaseException | None) -> None:
        with self._lock:
            scope = self._llms.pop(run_id, None)
            root = self._root_of.get(run_id)
            run = self._runs.get(root) if root is not None else None
            if run is not None:
                run.open_in_step = max(0, run.open_in_step - 1)
        if scope is not None:
            scope.exit(exc)
        with self._lock:
            self._end_member(run_id, exc)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        with _Guard("on_llm_end"):
            scope = self._llms.get(run_id)
            if scope is not None:
                record_generation(scope.scope, response)
                # the provider ran these before it answered: a record, never a guard
                calls = server_tool_calls(response)
                if calls:
                    record_server_tools(scope.scope.step, self.identifier, calls)
            self._llm_done(run_id, None)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with _Guard("on_llm_error"):
            self._llm_done(run_id, error)

    # -- tools -------------------------------------------------------------------------------------

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        with _Guard("on_tool_start"):
            with self._lock:
                metadata = kwargs.get("metadata") or {}
                if metadata.get(INNER_RUN_KEY):
                    self._root(run_id, parent_run_id)  # the wrapper's inner tool: one span only
                    return
                name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
                hooked = bool(metadata.get(HOOKED_METADATA_KEY))
                if not hooked and GUARDED_BY.get() is self:
                    # a middleware after ours ran a tool of its own: nothing would enforce
                    # a deny its guards gave, so it does not start
                    _log.error(
                        "a tool no hook_tool wraps ran inside OtelHooksMiddleware: refused",
                        tool=name,
                    )
                    raise ToolNotHookedError(
                        f"tool {name!r} started inside an OtelHooksMiddleware tool call without "
                        "the otelhooks wrapper that enforces its hooks (a middleware listed after "
                        "OtelHooksMiddleware ran or substituted it): refused"
                    )
                if run_id in self._tools:  # a caller's fixed config["run_id"], two calls at once
                    self._tools[run_id].contested = True
                    self._sharers[run_id] = self._sharers.get(run_id, 0) + 1
                    _log.error("two tool calls share one run id: refused", tool=name)
                    return
                run = self._ensure_run(run_id, parent_run_id, name, kwargs)
                step = self._current_step(run)
                run.open_in_step += 1
                tool_call_id = kwargs.get("tool_call_id")
                args = dict(inputs) if isinstance(inputs, dict) else {"input": input_str}
                if hooked:  # what the caller injected (a user id) is the guards' to judge too
                    args.update(CALLER_INJECTED.get() or {})
                call = step.tool_call(self.identifier, name, args, tool_call_id=tool_call_id)
                if run.wave is not None:
                    run.wave.saw(metadata)
                resumed = run.wave is not None and run.wave.holds(metadata)
                rootless = run.owner == run_id  # no graph run seen: a resume is not told
                tool = ToolRun(DetachedScope(call, step.span), hooked, tool_call_id, args=args)
                self._tools[run_id] = tool
                unnamed = run.unnamed_key(metadata, name) if tool_call_id is None else None
            try:
                tool.scope.enter()
            except Exception:
                # no record: the wrapper refuses the call its guards never judged
                with self._lock:
                    self._tools.pop(run_id, None)
                    run.open_in_step = max(0, run.open_in_step - 1)
                raise
            # a call without an id in a handler that sees no graph run has no place to be
            # known by (each such call is a run of its own)
            if hooked and (tool_call_id is not None or not rootless):
                self._paused.judge(
                    run_id,
                    tool,
                    metadata,
                    resumed=resumed,
                    rootless=rootless,
                    call_id=unnamed,
                    graph_run=run.owner,
                )
            if not hooked and (not call.should_run or call.args != args):
                self._refuse_unwrapped(run_id, tool, args)

    def _refuse_unwrapped(self, run_id: UUID, tool: ToolRun, args: dict[str, Any]) -> None:
        """Refuse a tool no ``hook_tool`` wraps whose hooks denied, mocked or rewrote its call:
        it cannot be handed a mock or other arguments, but raising from its start (the
        handler's ``raise_error``) keeps it from running. LangChain calls no end of a run whose
        start raised, so its record ends here."""
        call = tool.call
        if call.should_run:  # rewritten: the tool would run with the arguments as they were
            call.refuse(
                "a before_tool_call hook rewrote the arguments, which a tool no hook_tool wraps "
                "cannot take: refused rather than run as the model wrote it"
            )
        decision = "denied" if call.denied and not call.mocked else "mocked"
        _log.warning(
            "a tool hook decided on a tool that is not wrapped: refused",
            tool=call.matcher_value,
            decision=decision,
            fix="wrap it with otelhooks.integrations.langchain.hook_tool",
        )
        with self._lock:
            self._tools.pop(run_id, None)
            run = self._runs.get(self._root_of.get(run_id, run_id))
            if run is not None:
                run.open_in_step = max(0, run.open_in_step - 1)
        tool.scope.exit(None)
        with self._lock:
            self._end_member(run_id)
        reason = call.deny_reason if call.denied else None
        raise ToolDenied(
            reason or f"a hook {decision} it, which a tool no hook_tool wraps cannot obey",
            tool=call.matcher_value,
        )

    def _tool_done(self, run_id: UUID, output: Any, exc: BaseException | None) -> None:
        withheld: ToolDenied | None = None
        with self._lock:
            sharers = self._sharers.pop(run_id, 0)
            if sharers:  # a call that shared the id ended: the first one's record stays open
                if sharers > 1:
                    self._sharers[run_id] = sharers - 1
                return
            tool = self._tools.pop(run_id, None)
            root = self._root_of.get(run_id)
            run = self._runs.get(root) if root is not None else None
            if tool is not None and run is not None:
                run.open_in_step = max(0, run.open_in_step - 1)
            # the handler saw no run above the tool (it is in the tool's callbacks only)
            rootless = run is not None and run.owner == run_id
        if tool is not None:
            call = tool.call
            if exc is not None and type(exc).__name__ in _INTERRUPTS:
                # the tool asked a person (interrupt()): paused, not failed; it runs again,
                # judged again, when the graph resumes
                call.interrupt()
                graph_run = run.owner if run is not None else None
                self._paused.done(run_id, tool, paused=True, rootless=rootless, graph_run=graph_run)
                tool.scope.exit(None)
            else:
                self._paused.done(run_id, tool, paused=False)
                if exc is None and not tool.result_set and call.should_run:
                    seen = _text(output)
                    kept = call.set_result(seen, success=succeeded(output)).content
                    if not tool.hooked and (call.persist_blocked or kept != seen):
                        # a callback cannot hand the model the hooks' text, but raising from
                        # the tool's end (raise_error) keeps the tool's own from it
                        _log.warning(
                            "a tool_result_persist hook blocked or rewrote the result of a "
                            "tool that is not wrapped: withheld",
                            tool=call.api_name,
                            blocked=call.persist_blocked,
                            fix="wrap it with otelhooks.integrations.langchain.hook_tool",
                        )
                        withheld = ToolDenied(
                            kept
                            if call.persist_blocked
                            else "a tool_result_persist hook "
                            "rewrote the result, which a tool no hook_tool wraps cannot return: "
                            "withheld",
                            tool=call.matcher_value,
                        )
                tool.scope.exit(exc)
        with self._lock:
            self._end_member(run_id, exc)
        if withheld is not None:
            raise withheld

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        with _Guard("on_tool_end"):
            self._tool_done(run_id, output, None)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with _Guard("on_tool_error"):
            self._tool_done(run_id, None, error)


def succeeded(output: Any) -> bool:
    """False for a tool error LangChain turned into the tool's answer (``handle_tool_error``,
    ``handle_validation_error``: a ``ToolMessage`` with ``status="error"``)."""
    return getattr(output, "status", None) != "error"


class _Guard:
    """Log and swallow a failure of the handler: telemetry must not break the run."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        # UnguardedToolWarning leaves it only where warnings are errors: the user refuses such runs
        refusals = RunBlockedError | ToolNotHookedError | ToolDenied | UnguardedToolWarning
        if isinstance(exc, Exception) and not isinstance(exc, refusals):
            _log.error("langchain adapter failed", callback=self.what, exc_info=exc)
            return True
        return False
