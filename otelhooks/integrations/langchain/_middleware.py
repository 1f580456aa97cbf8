"""``OtelHooksMiddleware``: the tool calls of a LangChain v1 ``create_agent`` agent behind
otelhooks' tool hooks, with no tool wrapped by hand.

``create_agent`` runs every tool call through its middleware's ``wrap_tool_call`` and then a
LangGraph ``ToolNode``. The middleware puts the call's tool behind :func:`hook_tool` there (the
same wrapper, so a deny, a mock, a rewrite and a ``tool_result_persist`` redaction are decided
and enforced where they are for a ``ToolNode`` of hooked tools), the handler in the wrapped
tool's callbacks (so its guards judge the call even when a run's config forgets it). Listed
first, it is the outermost: any middleware after it that runs a tool of its own, or puts an
unwrapped tool in the request, has that tool refused as it starts
(:class:`ToolNotHookedError`). A middleware before it that runs a tool itself never reaches it:
only the handler in the run's config sees that tool, and its absence there is said (an error)
at the agent's model call.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ToolCallRequest
from langchain_core.callbacks import BaseCallbackManager
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.types import Command

from otelhooks.integrations.langchain._handler import OtelHooksCallbackHandler
from otelhooks.integrations.langchain._server_tools import provider_tools
from otelhooks.integrations.langchain._tool_run import GUARDED_BY
from otelhooks.integrations.langchain._tools import hook_tool

__all__ = ["OtelHooksMiddleware"]

_log = structlog.get_logger("otelhooks")

Result = ToolMessage | Command[Any]


class OtelHooksMiddleware(AgentMiddleware):
    """A ``create_agent`` middleware: every tool call the agent makes obeys otelhooks' hooks.

    Args:
        handler: the :class:`OtelHooksCallbackHandler` whose guards judge the calls. Give the
            same handler in the run's config too (``config={"callbacks": [handler]}``): it then
            records the agent's model calls and steps, and sees a tool a later middleware runs
            itself, which it refuses.

    List it first in ``middleware=[...]`` (the outermost): a middleware before it could run a
    tool no guard judges.

    Example: a guard denies a ``create_agent`` tool call, and the tool never runs:
        >>> from typing import Any
        >>> import otelhooks
        >>> from langchain.agents import create_agent
        >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        >>> from langchain_core.messages import AIMessage
        >>> from langchain_core.tools import tool
        >>> from otelhooks.integrations.langchain import OtelHooksCallbackHandler
        >>> from otelhooks.integrations.langchain import OtelHooksMiddleware
        >>> class Scripted(GenericFakeChatModel):  # a chat model answering from a script
        ...     def bind_tools(self, tools: Any, **kwargs: Any) -> "Scripted":
        ...         return self
        >>> @tool
        ... def delete_file(path: str) -> str:
        ...     '''Delete a file.'''
        ...     raise AssertionError("never runs")
        >>> no_delete = {"id": "no-delete", "type": "before_tool_call", "matcher": "delete_file",
        ...              "handler": lambda event: otelhooks.Block("deleting files is not allowed")}
        >>> oh = otelhooks.configure(otlp=False, set_global=False, hooks=[no_delete])
        >>> handler = OtelHooksCallbackHandler(oh.tracer, agent_name="cleaner")
        >>> call = {"name": "delete_file", "args": {"path": "a.txt"}, "id": "t1"}
        >>> model = Scripted(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("ok")]))
        >>> agent = create_agent(model, tools=[delete_file],
        ...                      middleware=[OtelHooksMiddleware(handler)])
        >>> out = agent.invoke({"messages": [("user", "tidy up")]}, {"callbacks": [handler]})
        >>> out["messages"][2].content
        'deleting files is not allowed'
        >>> oh.shutdown().ok
        True
    """

    def __init__(self, handler: OtelHooksCallbackHandler) -> None:
        super().__init__()
        self.handler = handler
        self._lock = threading.Lock()
        self._told = False  # that the handler was missing from a run's config

    def _in_config(self, config: Any) -> None:
        """Log an error (once) when the handler is not in the run's callbacks (``config``): it
        judges the calls it wraps, but cannot see (so refuse) a tool another middleware runs
        itself. Checked at each model call too: a middleware listed before this one that runs
        the tool itself never reaches :meth:`wrap_tool_call`."""
        callbacks = (config or {}).get("callbacks")
        if isinstance(callbacks, BaseCallbackManager):
            callbacks = callbacks.handlers
        if self.handler in list(callbacks or []):
            return
        with self._lock:
            told, self._told = self._told, True
        if not told:
            _log.error(
                "OtelHooksMiddleware's handler is not in the run's callbacks: a tool a "
                "middleware listed before it, or after it, runs itself goes unjudged",
                fix="invoke the agent with config={'callbacks': [handler]}, or "
                "agent.with_config(callbacks=[handler]); list OtelHooksMiddleware first",
            )

    def _model_call_config(self) -> None:
        """:meth:`_in_config` for the model call running now (its node's config)."""
        try:
            config = get_config()
        except RuntimeError:  # not in a graph's run: no tool of it runs either
            return
        self._in_config(config)

    def _hooked(self, tool: BaseTool) -> BaseTool:
        """``tool`` behind :func:`hook_tool`, the handler among its own callbacks (LangChain adds
        a handler once, so one also in the run's config decides once)."""
        hooked = hook_tool(tool)
        callbacks = hooked.callbacks
        if isinstance(callbacks, BaseCallbackManager):
            manager = callbacks.copy()
            manager.add_handler(self.handler, inherit=False)
            return hooked.model_copy(update={"callbacks": manager})
        listed = list(callbacks or [])
        if self.handler not in listed:
            listed.append(self.handler)
        return hooked.model_copy(update={"callbacks": listed})

    def _request(self, request: ToolCallRequest) -> ToolCallRequest:
        """The request with its tool hooked (none: the ``ToolNode`` answers the call as one of
        an unknown tool, or a later middleware runs one, which the handler refuses)."""
        if request.tool is None:
            return request
        return request.override(tool=self._hooked(request.tool))

    def _provider_tools(self, request: ModelRequest[Any]) -> None:
        """Name, once each, the provider tools of the model call (``{"type":
        "web_search_preview"}``): the provider runs them, no tool call of them reaches the
        ``ToolNode``, so no hook can stop them (their calls are recorded from the answer)."""
        names = provider_tools(request.tools)
        if names:
            self.handler.provider_tools_named.warn(names, stacklevel=3)

    def wrap_model_call(self, request: ModelRequest[Any], handler: Callable[..., Any]) -> Any:
        """Call the model as asked, after naming the provider tools no hook can stop."""
        self._model_call_config()
        self._provider_tools(request)
        return handler(request)

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[..., Awaitable[Any]]
    ) -> Any:
        """As :meth:`wrap_model_call`, in an async run."""
        self._model_call_config()
        self._provider_tools(request)
        return await handler(request)

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Result]
    ) -> Result:
        """Run the call with its tool hooked, the handler refusing any tool started unhooked."""
        self._in_config(getattr(request.runtime, "config", None))
        token = GUARDED_BY.set(self.handler)
        try:
            return handler(self._request(request))
        finally:
            GUARDED_BY.reset(token)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[Result]],
    ) -> Result:
        """As :meth:`wrap_tool_call`, in an async run."""
        self._in_config(getattr(request.runtime, "config", None))
        token = GUARDED_BY.set(self.handler)
        try:
            return await handler(self._request(request))
        finally:
            GUARDED_BY.reset(token)
