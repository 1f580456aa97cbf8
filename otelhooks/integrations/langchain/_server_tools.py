"""The calls of tools the model's provider runs itself, which no otelhooks hook can stop.

A provider tool (a dict such as ``{"type": "web_search_preview"}`` given to ``create_agent`` or
a model's ``bind_tools``: web search, code execution, a hosted MCP server) is run by the
provider before it answers; LangChain never runs it, so neither ``hook_tool`` nor a callback
can refuse its calls. ``OtelHooksMiddleware`` names such tools in an
:class:`UnguardedToolWarning` at the agent's first model call (the handler, a built-in one a
model call binds), and the handler records each call
the answer reports (LangChain's standard ``server_tool_call`` blocks, which it reads from the
provider's own format) as an ``execute_tool {tool}`` span in the step of that model call, the
tool hooks run on it so observers and audit hooks see it. A hook that denies or mocks such a
call is not enforced (the provider already ran it), and that is never silent: the span fails
(``error.type`` ``otelhooks.integrations.langchain.UnguardedToolCall``,
``on_tool_call_error`` told) and a warning line names the tool and the decision.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from opentelemetry import trace

from otelhooks._encoding import dumps
from otelhooks._instrument import Step
from otelhooks.integrations._unguarded import not_enforced

__all__ = [
    "NamedOnce",
    "UnguardedToolCall",
    "UnguardedToolWarning",
    "bound_provider_tools",
    "provider_tools",
    "record_server_tools",
    "server_tool_calls",
    "warn_provider_tools",
]


class UnguardedToolWarning(UserWarning):
    """A tool of the agent runs without any otelhooks tool hook able to stop it (a provider
    tool, ``{"type": "web_search_preview"}``, which the model's provider runs itself).

    Turn it into an error to refuse such agents: ``warnings.simplefilter("error",
    UnguardedToolWarning)``.
    """


class UnguardedToolCall(RuntimeError):
    """A hook denied or mocked a call the model's provider ran itself: the decision was not
    enforced.

    The failure of that call's ``execute_tool`` span (``error.type``
    ``otelhooks.integrations.langchain.UnguardedToolCall``) and of ``on_tool_call_error``;
    never raised into the run.
    """


# error.type and the warning name the classes where users import them from
UnguardedToolCall.__module__ = "otelhooks.integrations.langchain"
UnguardedToolWarning.__module__ = "otelhooks.integrations.langchain"


def provider_tools(tools: Iterable[Any]) -> list[str]:
    """The names of the provider tools among ``tools``: the dicts that are not a function's
    schema (whose calls come back as tool calls a LangChain tool answers)."""
    names = []
    for tool in tools:
        if isinstance(tool, dict) and tool.get("type") != "function":
            names.append(str(tool.get("name") or tool.get("type") or dumps(tool)))
    return names


# the built-in tool types a model's provider runs itself (OpenAI's, as LangChain passes them on;
# Anthropic's are dated: web_search_20250305)
_RUN_BY_PROVIDER = frozenset(
    {"file_search", "code_interpreter", "mcp", "image_generation", "web_search", "tool_search"}
)
_RUN_BY_PROVIDER_PREFIXES = ("web_search_", "web_fetch_", "code_execution_")


def bound_provider_tools(params: dict[str, Any]) -> list[str]:
    """The tools a model call's invocation parameters (its ``bind_tools``) hand the provider to
    run itself: the known built-in types only, since a model's own call binds client tools
    as dicts too (an Anthropic ``bash_20250124``, whose calls come back as tool calls)."""
    tools = params.get("tools")
    found = []
    for tool in tools if isinstance(tools, list) else []:
        kind = tool.get("type") if isinstance(tool, dict) else None
        if isinstance(kind, str) and (
            kind in _RUN_BY_PROVIDER or kind.startswith(_RUN_BY_PROVIDER_PREFIXES)
        ):
            found.append(str(tool.get("name") or kind))
    return found


class NamedOnce:
    """The provider tools already named in an :class:`UnguardedToolWarning` (a handler's, which
    its middleware shares), so that each is named once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._named: set[str] = set()

    def warn(self, names: list[str], stacklevel: int) -> None:
        """Name those of ``names`` not named before."""
        with self._lock:
            new = [n for n in dict.fromkeys(names) if n not in self._named]
            self._named.update(new)
        if new:
            warn_provider_tools(new, stacklevel + 1)


def warn_provider_tools(names: list[str], stacklevel: int) -> None:
    """Say that no hook can stop the calls of the provider tools ``names``."""
    listed = ", ".join(f"{n!r} (a provider tool: the model's provider runs it)" for n in names)
    warnings.warn(
        f"otelhooks: no otelhooks tool hook can stop {listed}; before_tool_call guards do "
        "not stop its calls, which are recorded from the model's answer (a deny of one fails "
        "its execute_tool span: not enforced)",
        UnguardedToolWarning,
        stacklevel=stacklevel + 1,
    )


def server_tool_calls(response: LLMResult) -> list[tuple[str, dict[str, Any], str | None, Any]]:
    """The calls the provider ran before answering: (tool, arguments, call id, its result
    block or ``None``), from each generation's message's standard content blocks."""
    found = []
    for generations in response.generations:
        for gen in generations:
            message = gen.message if isinstance(gen, ChatGeneration) else None
            if not isinstance(message, AIMessage) or isinstance(message.content, str):
                continue
            blocks = [b for b in message.content_blocks if isinstance(b, dict)]
            results = {
                b.get("tool_call_id"): b for b in blocks if b.get("type") == "server_tool_result"
            }
            for block in blocks:
                if block.get("type") != "server_tool_call":
                    continue
                args = block.get("args")
                call_id = block.get("id")
                found.append(
                    (
                        str(block.get("name") or "server_tool"),
                        dict(args) if isinstance(args, dict) else {"input": args},
                        str(call_id) if call_id is not None else None,
                        results.get(call_id) if call_id is not None else None,
                    )
                )
    return found


def record_server_tools(
    step: Step, identifier: str, calls: list[tuple[str, dict[str, Any], str | None, Any]]
) -> None:
    """Record each of ``calls`` (see the module) in ``step``."""
    for name, args, call_id, result in calls:
        with (
            trace.use_span(step.span, end_on_exit=False),
            step.tool_call(
                identifier, name, args, tool_call_id=call_id, tool_type="extension"
            ) as call,
        ):
            if not call.should_run:
                not_enforced(call, UnguardedToolCall, "the model's provider")
                continue
            block = result if isinstance(result, dict) else {}
            output = block.get("output")
            text = output if isinstance(output, str) else dumps(output) if output else ""
            call.set_result(text, success=block.get("status") != "error")
