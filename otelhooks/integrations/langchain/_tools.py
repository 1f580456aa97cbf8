"""``hook_tool``: a LangChain tool that obeys otelhooks' ``before_tool_call`` decisions.

The :class:`~otelhooks.integrations.langchain.OtelHooksCallbackHandler` opens the tool's
``execute_tool`` span at ``on_tool_start`` (the interceptors run there); the wrapper, called right
after, looks the decision up by its run id (in every otelhooks handler of its callbacks: a
refusal by any stands, then rewritten arguments) and then:

* denied: returns a ``ToolMessage`` with ``status="error"``, the reason as content and
  ``response_metadata["otelhooks"] = {"classification": "hook_denied", ...}``; the inner tool
  is never called and the graph goes on;
* mocked: returns the mock's content, the inner tool is never called;
* otherwise: calls the inner tool with the (possibly rewritten) arguments and passes the result
  through ``tool_result_persist`` (a LangGraph ``Command``'s own ``ToolMessage``, rewritten in
  place, or :class:`ResultNotRewritableError`); an exception it raises is judged there too, as
  its text (what a ``ToolNode``'s ``handle_tool_errors`` tells the model), and raised again made
  from the text the hooks kept when they changed it.

Without the handler in the run's callbacks (none was given, or a thread pool of your own lost the
run's context) the wrapper calls the inner tool and logs a warning that no hook saw the call.
With a handler that holds no record of the call (it failed as the call started, so its guards
never decided) the call is refused instead, decided by ``otelhooks``.
"""

from __future__ import annotations

import contextvars
from typing import Any

import structlog
from langchain_core.callbacks import (
    AsyncCallbackManagerForToolRun,
    BaseCallbackHandler,
    CallbackManagerForToolRun,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, Tool
from langgraph.errors import GraphBubbleUp
from pydantic import BaseModel, ConfigDict

from otelhooks.integrations.langchain._handler import (
    HOOKED_METADATA_KEY,
    OtelHooksCallbackHandler,
    ToolRun,
)
from otelhooks.integrations.langchain._quiet_run import quiet_config, quiet_tool
from otelhooks.integrations.langchain._tool_args import NestedAliasError, filled_in
from otelhooks.integrations.langchain._tool_inputs import (
    args_for_inner,
    caller_injected,
    for_inner,
    full_input,
    given_of,
    kept_back,
    named_input,
)
from otelhooks.integrations.langchain._tool_refusals import denial, refused, rewrite_lost
from otelhooks.integrations.langchain._tool_results import (
    ResultNotRewritableError,
    retold,
    succeeded,
)
from otelhooks.integrations.langchain._tool_results import kept as kept_result
from otelhooks.integrations.langchain._tool_results import text as result_text
from otelhooks.integrations.langchain._tool_run import CALLER_INJECTED, GUARDED_BY

__all__ = ["HookedTool", "ResultNotRewritableError", "hook_tool"]

_log = structlog.get_logger("otelhooks")

Manager = CallbackManagerForToolRun | AsyncCallbackManagerForToolRun

# what ``run`` was given (the model's tool call id, the input before any validation): LangChain
# hands ``_run`` neither, and ``_run`` runs in a copy of ``run``'s context
# and what the graph filled in that no callback may see (see ``_kept_back``)
_GIVEN: contextvars.ContextVar[tuple[str | None, dict[str, Any], dict[str, Any]]] = (
    contextvars.ContextVar("otelhooks_langchain_given", default=(None, {}, {}))
)

_UNJUDGED = (
    "otelhooks could not judge this call (its handler failed as the tool started, or another "
    "call started under its run id): refused rather than run without its guards"
)


_REWRITES_DIFFER = (
    "the hooks of two otelhooks handlers of this run rewrote this call's arguments differently: "
    "refused rather than run with one rewrite and not the other"
)


class _Unjudged(Exception):
    """An otelhooks handler in the call's callbacks holds no record of it (its start failed,
    logged there, so its guards never decided) or one another call shares."""


def _find_runs(manager: Manager | None, name: str) -> list[ToolRun]:
    """The call as each otelhooks handler in its callbacks opened it; :class:`_Unjudged` when
    one of them did not."""
    runs: list[ToolRun] = []
    handlers: list[BaseCallbackHandler] = list(manager.handlers) if manager is not None else []
    for handler in handlers:
        if isinstance(handler, OtelHooksCallbackHandler):
            found = handler.tool_run(manager.run_id) if manager is not None else None
            if found is None or found.contested:
                # running it would let a deny its guards might give go unheard
                _log.error("a hooked tool's call was not judged: refused", tool=name)
                raise _Unjudged
            runs.append(found)
    if not runs:
        # the tool runs, as it would without otelhooks; a deny a guard would give must not
        # look held
        _log.warning(
            "a hooked tool ran without the otelhooks handler in its callbacks: no hook saw it",
            tool=name,
            fix="pass the handler in the run's config; a thread pool of your own must run the "
            "call in the caller's context (contextvars.copy_context().run)",
        )
    return runs


def _decisive(runs: list[ToolRun]) -> ToolRun:
    """The decision the call follows when several handlers' hooks decided: each handler's
    guards hold, so a refusal (deny or mock) stands, then arguments a hook rewrote. Two
    handlers rewriting it differently (one sandboxes the path, one redacts the token) refuse
    it: running either's would drop the other's without a word, and no guard judged both."""
    refused = next((t for t in runs if not t.call.should_run), None)
    if refused is not None:
        return refused
    rewritten = [t for t in runs if t.call.args != t.args]
    if any(t.call.args != rewritten[0].call.args for t in rewritten):
        _log.error("two otelhooks handlers rewrote a call differently: refused")
        for t in runs:
            t.call.refuse(_REWRITES_DIFFER)
        return runs[0]
    return rewritten[0] if rewritten else runs[0]


def _unjudged(name: str) -> Any:
    """What the model sees of a call no guard could judge: an error, never the tool's run."""
    call_id = _GIVEN.get()[0]
    if call_id is None:
        return _UNJUDGED
    return denial(_UNJUDGED, call_id, name, "otelhooks")


def _persisted(
    runs: list[ToolRun], output: Any, kept: str, tool_call_id: str | None, name: str
) -> Any:
    """What the caller gets once each handler's ``tool_result_persist`` hooks judged the
    result: a block (any handler's) is an error carrying its reason, as a deny is (its
    ``Command``'s update withheld with its text); else what :func:`_kept` keeps."""
    blocked = next((r.call for r in runs if r.call.persist_blocked), None)
    if blocked is None:
        return kept_result(output, kept, tool_call_id)
    state = blocked.result.state or {}
    reason = str(state.get("reason") or blocked.result.content)
    if tool_call_id is None:
        return reason
    return denial(reason, tool_call_id, name, state.get("decidedBy"))


class HookedTool(BaseTool):
    """``inner`` behind otelhooks' tool hooks (build it with :func:`hook_tool`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: BaseTool

    def _model(self) -> type[BaseModel] | None:
        """The argument schema, when it is a pydantic model (LangChain also takes JSON's)."""
        schema = self.args_schema
        return schema if isinstance(schema, type) and issubclass(schema, BaseModel) else None

    def _for_inner(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return for_inner(self._model(), kwargs)

    def _full_input(
        self, tool_input: str | dict[str, Any]
    ) -> tuple[str | dict[str, Any], dict[str, Any]]:
        """What the handler's guards judge as the call starts: LangChain's input, and what they
        are shown beside it (:func:`._tool_inputs.full_input`)."""
        return full_input(self._model(), tool_input)

    def run(self, tool_input: str | dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        tool_input, kept_back = self._kept_back(self._named(tool_input))
        given = self._given(tool_input)
        token = _GIVEN.set((kwargs.get("tool_call_id"), given, kept_back))
        full, beside = self._full_input(tool_input)
        injected = CALLER_INJECTED.set({**beside, **self._caller_injected(given)})
        guarded = GUARDED_BY.set(None)  # this call is judged; what its tool runs is its own
        try:
            return super().run(full, *args, **kwargs)
        finally:
            GUARDED_BY.reset(guarded)
            CALLER_INJECTED.reset(injected)
            _GIVEN.reset(token)

    async def arun(self, tool_input: str | dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        tool_input, kept_back = self._kept_back(self._named(tool_input))
        given = self._given(tool_input)
        token = _GIVEN.set((kwargs.get("tool_call_id"), given, kept_back))
        full, beside = self._full_input(tool_input)
        injected = CALLER_INJECTED.set({**beside, **self._caller_injected(given)})
        guarded = GUARDED_BY.set(None)
        try:
            return await super().arun(full, *args, **kwargs)
        finally:
            GUARDED_BY.reset(guarded)
            CALLER_INJECTED.reset(injected)
            _GIVEN.reset(token)

    def _kept_back(
        self, tool_input: str | dict[str, Any]
    ) -> tuple[str | dict[str, Any], dict[str, Any]]:
        return kept_back(self._model(), filled_in(self.inner), tool_input)

    def _named(self, tool_input: str | dict[str, Any]) -> str | dict[str, Any]:
        return named_input(self._model(), tool_input)

    def _caller_injected(self, given: dict[str, Any]) -> dict[str, Any]:
        return caller_injected(self._model(), given)

    def _given(self, tool_input: str | dict[str, Any]) -> dict[str, Any]:
        return given_of(self._model(), tool_input)

    def _args_for_inner(self, kwargs: dict[str, Any], tool: ToolRun | None) -> dict[str, Any]:
        """What the inner tool is given (:func:`._tool_inputs.args_for_inner`)."""
        _, given, back = _GIVEN.get()
        decided = tool.call.args if tool is not None else {}
        started = tool.args if tool is not None else {}
        return args_for_inner(self._model(), kwargs, given, back, decided, started)

    def _inner_input(self, tool: ToolRun, kwargs: dict[str, Any]) -> Any:
        """The validated input (injected arguments included), then any rewritten arguments; as
        the model's tool call when the call has its id, so the inner tool answers with its own
        ``ToolMessage`` (its ``status="error"`` from ``handle_tool_error``, its artifact)."""
        args = self._args_for_inner(kwargs, tool)
        if tool.tool_call_id is None:
            return args
        return {"name": self.inner.name, "args": args, "id": tool.tool_call_id, "type": "tool_call"}

    def _child_config(self, manager: Manager | None) -> RunnableConfig:
        """The inner tool's config: a run no callback handler hears (see :mod:`._quiet_run`)."""
        return quiet_config(manager)

    def _quiet_inner(self) -> BaseTool:
        """The inner tool without its own ``callbacks`` and ``verbose``: they are the wrapper's
        (:func:`hook_tool` gives them to it), which tells them the result the hooks kept."""
        return quiet_tool(self.inner)

    def _run(
        self, *args: Any, run_manager: CallbackManagerForToolRun | None = None, **kwargs: Any
    ) -> Any:
        try:
            runs = _find_runs(run_manager, self.name)
        except _Unjudged:
            return _unjudged(self.name)
        config = self._child_config(run_manager)
        if not runs:
            return self._quiet_inner().invoke(self._args_for_inner(kwargs, None), config=config)
        tool = _decisive(runs)
        if not tool.call.should_run:
            return refused(runs, tool, self.name)
        try:
            given = self._inner_input(tool, kwargs)
        except NestedAliasError as exc:
            return rewrite_lost(runs, tool, self.name, exc)
        try:
            output = self._quiet_inner().invoke(given, config=config)
        except GraphBubbleUp:  # LangGraph's interrupt(): a pause, not an error text
            raise
        except Exception as exc:
            kept = message = str(exc)
            judged = any(run.call.filters_result() for run in runs)
            for run in runs:  # the model reads the error's text: the hooks filter it as a result
                kept = run.call.set_result(kept, success=False).content
            again = retold(exc, message, kept, judged)
            if again is None:
                raise
            raise again.with_traceback(exc.__traceback__) from None  # where it failed kept
        kept, success = result_text(output, tool.tool_call_id), succeeded(output)
        for run in runs:  # each handler's tool_result_persist hooks filter what the last kept
            kept = run.call.set_result(kept, success=success).content
            run.result_set = True
        return _persisted(runs, output, kept, tool.tool_call_id, self.name)

    async def _arun(
        self,
        *args: Any,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
        **kwargs: Any,
    ) -> Any:
        try:
            runs = _find_runs(run_manager, self.name)
        except _Unjudged:
            return _unjudged(self.name)
        config = self._child_config(run_manager)
        if not runs:
            return await self._quiet_inner().ainvoke(
                self._args_for_inner(kwargs, None), config=config
            )
        tool = _decisive(runs)
        if not tool.call.should_run:
            return refused(runs, tool, self.name)
        try:
            given = self._inner_input(tool, kwargs)
        except NestedAliasError as exc:
            return rewrite_lost(runs, tool, self.name, exc)
        try:
            output = await self._quiet_inner().ainvoke(given, config=config)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            kept = message = str(exc)
            judged = any(run.call.filters_result() for run in runs)
            for run in runs:
                kept = (await run.call.aset_result(kept, success=False)).content
            again = retold(exc, message, kept, judged)
            if again is None:
                raise
            raise again.with_traceback(exc.__traceback__) from None  # where it failed kept
        kept, success = result_text(output, tool.tool_call_id), succeeded(output)
        for run in runs:
            kept = (await run.call.aset_result(kept, success=success)).content
            run.result_set = True
        return _persisted(runs, output, kept, tool.tool_call_id, self.name)


def hook_tool(tool: BaseTool) -> BaseTool:
    """``tool`` wrapped so otelhooks' denials and mocks really stop it (see the module doc).

    The wrapper keeps the tool's name, description and argument schema, so the model sees the
    same tool, its ``handle_validation_error`` (an invalid call answers as the tool would) and
    its ``callbacks`` (a handler given to the tool itself decides there too).
    Wrapping a wrapped tool returns it unchanged.
    """
    if isinstance(tool, HookedTool):
        return tool
    return HookedTool(
        name=tool.name,
        description=tool.description,
        # a BaseTool of the caller's without one has it from its _run's signature, which the
        # wrapper's (*args, **kwargs) is not: the model would be told "args" and "kwargs"
        args_schema=tool.args_schema
        if tool.args_schema is not None or isinstance(tool, Tool)
        else tool.get_input_schema(),
        return_direct=tool.return_direct,
        # the wrapper validates the input first: an invalid call answers as the tool would
        handle_validation_error=tool.handle_validation_error,
        metadata={**(tool.metadata or {}), HOOKED_METADATA_KEY: True},
        tags=tool.tags,
        # a handler given to the tool itself must see the wrapper's start, which decides
        callbacks=tool.callbacks,
        verbose=tool.verbose,
        inner=tool,
    )
