"""The inner tool of a ``hook_tool`` wrapper runs as a run no callback handler hears.

The wrapper's own run is the tool call every listener sees: its start (the model's arguments)
and its end, with the result ``tool_result_persist`` hooks kept. The inner tool's run would be a
second tool run under it whose end carries the tool's own result, unredacted: a user's
``on_tool_end``, ``astream_events``' ``on_tool_end`` would hand out what a redaction hook hid
from the model. So the inner run has no handlers of its own; its children (a model a tool
calls) still have every inheritable handler, and it takes the wrapper's run id, so they hang
under the wrapper's run as they would under the tool unwrapped.

LangChain adds some handlers to every run it configures, whatever its callbacks:
``set_debug(True)``'s console, LangSmith's tracer when tracing is on, ``collect_runs()``'s
collector. They would hear the inner run, and a second run with the wrapper's id would merge
with it there: with either of the first two on, the inner run takes an id of its own, and a
warning says once that they see the tool's own result.
"""

from __future__ import annotations

import threading
import weakref

import structlog
from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForToolRun,
    CallbackManager,
    CallbackManagerForToolRun,
)
from langchain_core.globals import get_debug
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.tracers.context import tracing_v2_callback_var

from otelhooks.integrations.langchain._handler import OtelHooksCallbackHandler
from otelhooks.integrations.langchain._tool_run import INNER_RUN_KEY

__all__ = ["quiet_config", "quiet_tool"]

_log = structlog.get_logger("otelhooks")

# the handlers (or, with none in the call's callbacks, the process) already told that
# LangChain's own listeners hear inner runs: once each, not once a call
_lock = threading.Lock()
_told: weakref.WeakSet[OtelHooksCallbackHandler] = weakref.WeakSet()
_told_unhandled = False


def _tell(handlers: list[OtelHooksCallbackHandler]) -> None:
    global _told_unhandled
    with _lock:
        if handlers:
            new = any(h not in _told for h in handlers)
            _told.update(handlers)
        else:
            new, _told_unhandled = not _told_unhandled, True
    if new:
        _log.warning(
            "LangChain debug or LangSmith tracing is on: their handlers hear a hooked "
            "tool's inner run, with its result before tool_result_persist hooks",
            fix="turn them off where the hooks keep a result from whoever reads them",
        )


def _global_listeners() -> bool:
    """LangChain adds a handler of its own to every run: debug's console, LangSmith's tracer."""
    if get_debug() or tracing_v2_callback_var.get() is not None:
        return True
    try:
        from langsmith.utils import tracing_is_enabled
    except ImportError:  # pragma: no cover - langchain-core depends on langsmith
        return False
    return bool(tracing_is_enabled())


def quiet_config(
    manager: CallbackManagerForToolRun | AsyncCallbackManagerForToolRun | None,
) -> RunnableConfig:
    """The config the wrapper runs its inner tool with: no handler hears the inner run
    itself, every inheritable one hears its children, as children of the wrapper's run."""
    if manager is None:  # called without LangChain's run (``_run`` by hand): as given
        return RunnableConfig()
    cls: type[CallbackManager | AsyncCallbackManager] = CallbackManager
    if isinstance(manager, AsyncCallbackManagerForToolRun):
        cls = AsyncCallbackManager
    callbacks = cls(
        handlers=[],
        inheritable_handlers=list(manager.inheritable_handlers),
        parent_run_id=manager.parent_run_id,
        inheritable_tags=list(manager.inheritable_tags),
        inheritable_metadata=dict(manager.inheritable_metadata),
    )
    if _global_listeners():
        ours = [h for h in manager.handlers if isinstance(h, OtelHooksCallbackHandler)]
        _tell(ours)
        # the otelhooks handlers hear it, marked, so its children stay in the wrapper's run
        for handler in ours:
            callbacks.add_handler(handler, inherit=False)
        callbacks.add_metadata({INNER_RUN_KEY: True}, inherit=False)
        callbacks.parent_run_id = manager.run_id
        return RunnableConfig(callbacks=callbacks)
    return RunnableConfig(callbacks=callbacks, run_id=manager.run_id)


def quiet_tool(tool: BaseTool) -> BaseTool:
    """``tool`` without its own ``callbacks`` and ``verbose`` (a copy; the caller's tool is
    left as it is): the wrapper was given them, and tells them the result the hooks kept."""
    if tool.callbacks is None and not tool.verbose:
        return tool
    return tool.model_copy(update={"callbacks": None, "verbose": False})
