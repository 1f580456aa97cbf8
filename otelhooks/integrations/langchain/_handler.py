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
model never runs; every other failure of the handler is logged and swallowed, but one as a
tool starts refuses it (a wrapped tool's wrapper finds no record; any other raises
:class:`~otelhooks.ToolDenied`): its guards never judged it. The
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
from typing import Any
from uuid import UUID

import structlog
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult

from otelhooks._encoding import dumps
from otelhooks._errors import RunBlockedError, ToolDenied
from otelhooks._instrument import AgentTracer, LlmCall, Operation
from otelhooks.integrations._scopes import DetachedScope
from otelhooks.integrations.langchain._model_calls import (
    model_name,
    provider_name,
    record_generation,
)
from otelhooks.integrations.langchain._resume import PausedCalls, ResumeWave, is_resume
from otelhooks.integrations.langchain._root_runs import RootRun, RootRuns, is_interrupt
from otelhooks.integrations.langchain._server_tools import (
    NamedOnce,
    UnguardedToolWarning,
    bound_provider_tools,
    record_server_tools,
    server_tool_calls,
)
from otelhooks.integrations.langchain._tool_results import succeeded
from otelhooks.integrations.langchain._tool_results import text as result_text
from otelhooks.integrations.langchain._tool_run import (
    CALLER_INJECTED,
    GUARDED_BY,
    INNER_RUN_KEY,
    ToolNotHookedError,
    ToolRun,
)
from otelhooks.integrations.langchain._unwrapped import refusal, unjudged, withheld

__all__ = [
    "HOOKED_METADATA_KEY",
    "PROVIDER",
    "OtelHooksCallbackHandler",
    "RunBlockedError",
    "ToolRun",
]

# LangChain is not a model provider: the provider comes from each model call's ``ls_provider``
# (LangChain's tracing metadata), in the GenAI conventions' spelling where they name it.
PROVIDER: str | None = None
HOOKED_METADATA_KEY = "otelhooks_hooked"
_log = structlog.get_logger("otelhooks")


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
        self._runs = RootRuns()
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

    def _start(self, name: str, kwargs: Any, input: str) -> Operation:
        """The operation of a new root run (what ``before_agent_start`` hooks judge)."""
        thread = (kwargs.get("metadata") or {}).get("thread_id")
        return self.tracer.operation(
            self.agent_name or name,
            provider=PROVIDER,
            session_id=self.session_id or (str(thread) if thread is not None else None),
            user_id=self.user_id,
            input=input,
        )

    def _open(
        self, run_id: UUID, parent: UUID | None, name: str, kwargs: Any, input: str = ""
    ) -> RootRun:
        return self._runs.open(run_id, parent, input, lambda: self._start(name, kwargs, input))

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
                root = self._open(run_id, None, str(name), kwargs, text)
                if is_resume(inputs):
                    root.wave = ResumeWave()
            else:
                run = self._runs.member(run_id, parent_run_id)
                if run is not None and run.wave is not None:
                    run.wave.saw(kwargs.get("metadata") or {})

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        with _Guard("on_chain_end"), self._lock:
            self._runs.end(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with _Guard("on_chain_error"), self._lock:
            self._runs.end(run_id, error)

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
            run = self._open(run_id, parent_run_id, model, kwargs)
            step = run.new_step()
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
            run = self._runs.of(run_id)
            if run is not None:
                run.call_ended()
        if scope is not None:
            scope.exit(exc)
        with self._lock:
            self._runs.end(run_id, exc)

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
            try:
                self._tool_start(serialized, input_str, run_id, parent_run_id, inputs, kwargs)
            except _REFUSALS:
                raise
            except Exception as exc:
                metadata = kwargs.get("metadata") or {}
                if metadata.get(HOOKED_METADATA_KEY) or metadata.get(INNER_RUN_KEY):
                    raise  # logged; the wrapper, finding no record, refuses the call
                # no wrapper refuses a call of this tool that its guards never judged
                with self._lock:
                    opened = self._tools.pop(run_id, None)
                    run = self._runs.of(run_id)
                    if opened is not None and run is not None:
                        run.call_ended()
                    self._runs.end(run_id, exc)
                raise unjudged(str((serialized or {}).get("name") or "tool"), exc) from exc

    def _tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        run_id: UUID,
        parent_run_id: UUID | None,
        inputs: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> None:
        """:meth:`on_tool_start`: open the call's span, its hooks deciding as it opens."""
        with self._lock:
            metadata = kwargs.get("metadata") or {}
            if metadata.get(INNER_RUN_KEY):
                # the wrapper's inner tool: one span only
                self._runs.root(run_id, parent_run_id)
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
                _log.error("two tool calls share one run id: refused", tool=name)
                if not hooked:  # no wrapper refuses it: it must not start (nor end the other)
                    raise unjudged(name, None)
                self._tools[run_id].contested = True
                self._sharers[run_id] = self._sharers.get(run_id, 0) + 1
                return
            run = self._open(run_id, parent_run_id, name, kwargs)
            step = run.current_step()
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
                run.call_ended()
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
            denial = refusal(call)
            # LangChain calls no end of a run whose start raised: its record ends here
            with self._lock:
                self._tools.pop(run_id, None)
                still = self._runs.of(run_id)
                if still is not None:
                    still.call_ended()
            tool.scope.exit(None)
            with self._lock:
                self._runs.end(run_id)
            raise denial

    def _tool_done(self, run_id: UUID, output: Any, exc: BaseException | None) -> None:
        withheld_by: ToolDenied | None = None
        with self._lock:
            sharers = self._sharers.pop(run_id, 0)
            if sharers:  # a call that shared the id ended: the first one's record stays open
                if sharers > 1:
                    self._sharers[run_id] = sharers - 1
                return
            tool = self._tools.pop(run_id, None)
            run = self._runs.of(run_id)
            if tool is not None and run is not None:
                run.call_ended()
            # the handler saw no run above the tool (it is in the tool's callbacks only)
            rootless = run is not None and run.owner == run_id
        if tool is not None:
            call = tool.call
            if is_interrupt(exc):
                # the tool asked a person (interrupt()): paused, not failed; it runs again,
                # judged again, when the graph resumes
                call.interrupt()
                graph_run = run.owner if run is not None else None
                self._paused.done(run_id, tool, paused=True, rootless=rootless, graph_run=graph_run)
                tool.scope.exit(None)
            else:
                self._paused.done(run_id, tool, paused=False)
                if exc is None and not tool.result_set and call.should_run:
                    seen = result_text(output)
                    kept = call.set_result(seen, success=succeeded(output)).content
                    if not tool.hooked:
                        withheld_by = withheld(call, seen, kept)
                tool.scope.exit(exc)
        with self._lock:
            self._runs.end(run_id, exc)
        if withheld_by is not None:
            raise withheld_by

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        with _Guard("on_tool_end"):
            self._tool_done(run_id, output, None)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with _Guard("on_tool_error"):
            self._tool_done(run_id, None, error)


# what leaves a callback of the handler; any other failure is logged and swallowed
_REFUSALS = (RunBlockedError, ToolNotHookedError, ToolDenied, UnguardedToolWarning)


class _Guard:
    """Log and swallow a failure of the handler: telemetry must not break the run."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        # UnguardedToolWarning leaves it only where warnings are errors: the user refuses such runs
        if isinstance(exc, Exception) and not isinstance(exc, _REFUSALS):
            _log.error("langchain adapter failed", callback=self.what, exc_info=exc)
            return True
        return False
