"""LangChain / LangGraph adapter (``pip install 'otelhooks[langchain]'``).

Example: a guard denies a LangGraph tool call, and the tool never runs:
    >>> import otelhooks
    >>> from langchain_core.messages import AIMessage
    >>> from langchain_core.tools import tool
    >>> from langgraph.graph import START, MessagesState, StateGraph
    >>> from langgraph.prebuilt import ToolNode
    >>> from otelhooks.integrations.langchain import OtelHooksCallbackHandler, hook_tool
    >>> @tool
    ... def delete_file(path: str) -> str:
    ...     '''Delete a file.'''
    ...     raise AssertionError("never runs")
    >>> no_delete = {"id": "no-delete", "type": "before_tool_call", "matcher": "delete_file",
    ...              "handler": lambda event: otelhooks.Block("deleting files is not allowed")}
    >>> oh = otelhooks.configure(otlp=False, set_global=False, hooks=[no_delete])
    >>> tools = ToolNode([hook_tool(delete_file)])  # denials and mocks really stop these
    >>> graph = StateGraph(MessagesState).add_node("tools", tools).add_edge(START, "tools")
    >>> call = {"name": "delete_file", "args": {"path": "a.txt"}, "id": "t1", "type": "tool_call"}
    >>> handler = OtelHooksCallbackHandler(oh.tracer, agent_name="cleaner")
    >>> state = {"messages": [AIMessage("", tool_calls=[call])]}
    >>> graph.compile().invoke(state, config={"callbacks": [handler]})["messages"][-1].content
    'deleting files is not allowed'
    >>> oh.shutdown().ok
    True

A LangChain v1 ``create_agent`` agent: give it :class:`OtelHooksMiddleware` (its example), which
puts every tool call it makes behind the same hooks.

The mapping of callbacks to spans and events: docs/adapters.md, "LangChain / LangGraph".
"""

try:
    import langchain_core as _langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "otelhooks.integrations.langchain needs langchain-core: pip install 'otelhooks[langchain]'"
    ) from exc

from otelhooks.integrations.langchain._handler import (
    HOOKED_METADATA_KEY,
    PROVIDER,
    OtelHooksCallbackHandler,
    RunBlockedError,
    ToolRun,
)
from otelhooks.integrations.langchain._server_tools import (
    UnguardedToolCall,
    UnguardedToolWarning,
)
from otelhooks.integrations.langchain._tool_results import (
    ResultNotRewritableError,
    ToolErrorNotRetoldError,
)
from otelhooks.integrations.langchain._tool_run import ToolNotHookedError
from otelhooks.integrations.langchain._tools import HookedTool, hook_tool

__all__ = [
    "HOOKED_METADATA_KEY",
    "PROVIDER",
    "HookedTool",
    "OtelHooksCallbackHandler",
    "OtelHooksMiddleware",
    "ResultNotRewritableError",
    "RunBlockedError",
    "ToolErrorNotRetoldError",
    "ToolNotHookedError",
    "ToolRun",
    "UnguardedToolCall",
    "UnguardedToolWarning",
    "hook_tool",
]


def __getattr__(name: str) -> object:
    """``OtelHooksMiddleware`` needs ``langchain`` itself (v1), the rest only its core: imported
    when asked for, so a LangGraph-only install keeps the rest."""
    if name == "OtelHooksMiddleware":
        from otelhooks.integrations.langchain._middleware import OtelHooksMiddleware

        return OtelHooksMiddleware
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
