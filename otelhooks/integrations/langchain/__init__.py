"""LangChain / LangGraph adapter (``pip install 'otelhooks[langchain]'``).

Example:
    >>> from otelhooks.integrations.langchain import OtelHooksCallbackHandler, hook_tool
    >>> tools = [hook_tool(t) for t in tools]  # denials and mocks really stop these
    >>> handler = OtelHooksCallbackHandler(oh.tracer, agent_name="researcher")
    >>> graph.invoke({"messages": [("user", "hi")]}, config={"callbacks": [handler]})

See :mod:`otelhooks.integrations.langchain._handler` for the mapping.
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
    ToolRun,
)
from otelhooks.integrations.langchain._tools import HookedTool, hook_tool

__all__ = [
    "HOOKED_METADATA_KEY",
    "PROVIDER",
    "HookedTool",
    "OtelHooksCallbackHandler",
    "ToolRun",
    "hook_tool",
]
