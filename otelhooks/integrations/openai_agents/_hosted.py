"""The calls of the tools no otelhooks hook can stop, read from the model's response: the hosted
tools the model's API ran before it answered (``WebSearchTool``, ``FileSearchTool``,
``CodeInterpreterTool``, ``ImageGenerationTool``, a ``HostedMCPTool``'s server, a ``ShellTool``
with no executor, whose arguments are a local one's, a ``ToolSearchTool``'s search, a
``ProgrammaticToolCallingTool``'s program: the function calls a program makes are the SDK's
own, hooked) and those the SDK
runs with nothing otelhooks wraps (a ``ComputerTool`` of an agent whose tools are not hooked;
a hooked one's actions are calls of their own,
:mod:`~otelhooks.integrations.openai_agents._computer`).

Each is an ``execute_tool {tool}`` span in the step of the model call that made it (a hosted
MCP call's matcher value ``{server_label}/{tool}``, as any MCP tool's), and the tool hooks run on
it as on any call, so observers and audit hooks see it. A hook that denies or mocks it cannot be
enforced: the call already ran or runs anyway. That is never silent: the span fails
(``error.type`` ``otelhooks.integrations.openai_agents.UnguardedToolCall``,
``on_tool_call_error`` told) and a warning line names the
tool and the hook's decision.
"""

from __future__ import annotations

from typing import Any, Final

from opentelemetry import trace

from otelhooks._fingerprint import canonical_json
from otelhooks._instrument import Step
from otelhooks.integrations._unguarded import not_enforced
from otelhooks.integrations.openai_agents._guard import parse_args

__all__ = ["UnguardedToolCall", "record_hosted"]


# the model's item type -> the name of the tool that made it (None: the item's own ``name``)
_TOOLS: Final[dict[str, str | None]] = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
    "image_generation_call": "image_generation",
    "computer_call": "computer_use_preview",
    "mcp_call": None,
    "tool_search_call": "tool_search",
    "program": "programmatic_tool_calling",
}
# the item holding what such a call gave back, when it is an item of its own (same call id)
_OUTPUTS: Final = {"tool_search_output": "tools", "program_output": "result"}

# what the tool gave back, not what it was asked: kept out of the arguments hooks judge
_RESULTS: Final = frozenset({"result", "results", "outputs", "output", "error"})
_IDS: Final = frozenset(
    {"type", "id", "call_id", "status", "pending_safety_checks", "name", "created_by"}
    | {"fingerprint"}  # a program's replay token, not what it was asked
)


class UnguardedToolCall(RuntimeError):
    """A hook denied or mocked a call no otelhooks hook can stop (a hosted tool the model's API
    ran, the ``ComputerTool`` of an agent run unhooked): the decision was not enforced.

    The failure of that call's ``execute_tool`` span (``error.type``
    ``otelhooks.integrations.openai_agents.UnguardedToolCall``) and of ``on_tool_call_error``;
    never raised into the run.
    """


# error.type names the class where users import it from
UnguardedToolCall.__module__ = "otelhooks.integrations.openai_agents"


def _call(
    item: Any, shell: str | None, computer: bool
) -> tuple[str | None, str, dict[str, Any], str | None] | None:
    """The call ``item`` of a model's output is, if it is one of a tool no hook can stop:
    (identifier, tool, arguments, call id); identifier ``None``: the agent's. ``shell``: the
    name of the agent's hosted ``ShellTool`` (a local one's calls are hooked)."""
    kind = getattr(item, "type", None)
    fields = item.model_dump(mode="json", exclude_none=True)
    call_id = fields.get("call_id") or fields.get("id")
    if kind == "shell_call" and shell is not None:
        action = fields.get("action") or {}
        keys = ("commands", "timeout_ms", "max_output_length")
        return None, shell, {k: action.get(k) for k in keys}, call_id
    if kind not in _TOOLS or (kind == "computer_call" and not computer):
        return None
    if kind == "mcp_call":
        args = parse_args(str(fields.get("arguments") or ""))
        return str(fields.get("server_label") or ""), str(item.name), args, call_id
    name = _TOOLS[kind] or str(fields.get("name") or kind)
    args = {k: v for k, v in fields.items() if k not in _RESULTS | _IDS}
    return None, name, args, call_id


def _given_back(output: list[Any]) -> dict[str, dict[str, Any]]:
    """By call id, what a tool search or a program gave back, in an item of its own (the
    ``tools`` found, by name; a program's ``result``) and its ``status``."""
    found: dict[str, dict[str, Any]] = {}
    for item in output:
        key = _OUTPUTS.get(getattr(item, "type", None) or "")
        if key is None:
            continue
        fields = item.model_dump(mode="json", exclude_none=True)
        value = fields.get(key)
        if key == "tools" and isinstance(value, list):
            value = [t.get("name") or t.get("type") for t in value if isinstance(t, dict)]
        call_id = fields.get("call_id")
        if call_id:
            found[call_id] = {"output": value, "status": fields.get("status")}
    return found


async def record_hosted(
    step: Step, agent: str, output: list[Any], shell: str | None = None, computer: bool = True
) -> None:
    """Record each call in the model's ``output`` that no hook can stop (see the module);
    ``shell``: the name of the agent's hosted ``ShellTool``, if it has one; ``computer``:
    whether its ``computer_call`` items are (its ``ComputerTool`` is not hooked)."""
    given = _given_back(output)
    for item in output:
        found = _call(item, shell, computer)
        if found is None:
            continue
        identifier, name, args, call_id = found
        fields = item.model_dump(mode="json", exclude_none=True)
        fields.update(given.get(call_id, {}) if call_id else {})
        with trace.use_span(step.span, end_on_exit=False):
            async with step.tool_call(
                identifier or agent, name, args, tool_call_id=call_id, tool_type="extension"
            ) as call:
                if not call.should_run:
                    not_enforced(call, UnguardedToolCall, "the model's API or the SDK")
                    continue
                failed = fields.get("status") in ("failed", "incomplete") or "error" in fields
                result = {k: v for k, v in fields.items() if k in _RESULTS}
                await call.aset_result(canonical_json(result), success=not failed)
