"""A ``ComputerTool`` whose actions go through otelhooks' tool hooks: its ``computer`` is wrapped
(:func:`hook_computer`), one ``execute_tool`` call per action the SDK asks of it (matcher value
``computer_use_preview``), its arguments the action (``action``: ``click``, ``type``,
``screenshot``, ...) and the action's fields (``x``, ``y``, ``button``, ``text``, ``keys``,
``path``, ``scroll_x``, ``scroll_y``).

The safety checks the model's API flagged a call with (``pending_safety_checks``, which the
SDK passes to ``on_safety_check`` when one is set, else only logs) are in each of its actions'
arguments as ``pending_safety_checks`` (each check's ``id``, ``code``, ``message``), so a guard
can deny what the API flagged: the agent's hooks queue each response's computer calls
(``on_llm_end``) and take the next as its actions start (``on_tool_start``; the SDK runs a
response's computer calls one after another, in order).

The user's computer (or the one its factory or ``ComputerProvider`` makes for a run) is never
changed: the SDK is given a copy of the tool whose computer is a wrapper that delegates each
action after the hooks allow it. The span ends when the action has ended. The SDK turns no
error of an action into a message for the model (a computer call's output is a screenshot), so
a denied action raises :class:`~otelhooks.ToolDenied` and the run ends with it: the action and
every later one never run.
"""

from __future__ import annotations

import dataclasses
import inspect
import weakref
from collections import deque
from collections.abc import Iterable
from typing import Any

import structlog
from agents import AsyncComputer, Computer, ComputerProvider, ComputerTool, RunState
from agents.run_context import RunContextWrapper
from openai.types.responses import ResponseComputerToolCall

from otelhooks._errors import ToolDenied
from otelhooks.integrations.openai_agents._guard import awaited, guarded

__all__ = [
    "calls_expected",
    "calls_resumed",
    "computer_call_starts",
    "computer_hooked",
    "hook_computer",
]

_log = structlog.get_logger("otelhooks")

# each action's positional parameters, in the order the SDK's Computer methods take them
_PARAMS: dict[str, tuple[str, ...]] = {
    "screenshot": (),
    "click": ("x", "y", "button"),
    "double_click": ("x", "y"),
    "scroll": ("x", "y", "scroll_x", "scroll_y"),
    "type": ("text",),
    "wait": (),
    "move": ("x", "y"),
    "keypress": ("keys",),
    "drag": ("path",),
}


class _Calls:
    """The model's computer calls a hooked tool copy has yet to run (each one's pending safety
    checks) and those of the one running."""

    def __init__(self) -> None:
        self.waiting: deque[list[dict[str, Any]]] = deque()
        self.current: list[dict[str, Any]] = []


_OUTPUT = "computer_call_output"  # the item of a call that ran

# each hooked copy's calls; the SDK keys its own per-tool state the same way
_CALLS: weakref.WeakKeyDictionary[ComputerTool[Any], _Calls] = weakref.WeakKeyDictionary()


def calls_expected(tools: Iterable[Any], output: Iterable[Any]) -> None:
    """Queue the ``computer_call`` items of a model's ``output`` on the agent's hooked
    ``ComputerTool`` (of ``tools``): a new response's calls are the next to run."""
    calls = next((_CALLS[t] for t in tools if isinstance(t, ComputerTool) and t in _CALLS), None)
    if calls is None:
        return
    calls.waiting.clear()  # a call of the last response the SDK did not run never will
    for item in output:
        if getattr(item, "type", None) == "computer_call":
            checks = getattr(item, "pending_safety_checks", None) or []
            calls.waiting.append([c.model_dump(mode="json", exclude_none=True) for c in checks])


def calls_resumed(state: RunState[Any, Any]) -> None:
    """Queue the ``computer_call`` items a resumed ``state`` will run (its last response's calls
    with no output yet) on its agents' hooked ``ComputerTool``: no model response of this run
    brings them (:func:`calls_expected`), and the state keeps each call's pending safety checks
    (read through its public JSON form)."""
    try:
        data = state.to_json()
    except Exception as exc:  # e.g. same-name agents the SDK cannot tell apart: resume anyway
        _log.warning(
            "the pending safety checks of the computer calls a resumed run state runs could "
            "not be read: guards see none for them",
            error=str(exc),
        )
        return
    last = data.get("last_processed_response")
    actions = last.get("computer_actions") if isinstance(last, dict) else None
    if not actions:
        return
    raws = [item.get("raw_item") for item in data.get("generated_items") or ()]
    done = {r.get("call_id") for r in raws if isinstance(r, dict) and r.get("type") == _OUTPUT}
    calls = [a.get("tool_call") for a in actions if isinstance(a, dict)]
    pending = [
        ResponseComputerToolCall.model_validate(call)
        for call in calls
        if isinstance(call, dict) and call.get("call_id") not in done
    ]
    current = (data.get("current_agent") or {}).get("name")
    agents = {id(i.agent): i.agent for i in state.get_interruptions() if i.agent.name == current}
    for agent in agents.values():
        calls_expected(agent.tools, pending)


def computer_call_starts(tool: Any) -> None:
    """The SDK starts running the next queued call of ``tool`` (its ``on_tool_start``)."""
    calls = _CALLS.get(tool) if isinstance(tool, ComputerTool) else None
    if calls is not None:
        calls.current = calls.waiting.popleft() if calls.waiting else []


def _takes_keys(method: Any) -> bool:
    """Whether a computer's ``method`` takes the held modifier keys (``keys=``)."""
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD
        or (p.name == "keys" and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
        for p in params
    )


def _screenshot_text(output: Any) -> Any:
    """What a span records of a screenshot: its size, not the image (a PNG's base64)."""
    return f"screenshot ({len(output)} base64 characters)" if isinstance(output, str) else output


class _HookedComputer(AsyncComputer):
    """An ``AsyncComputer`` whose actions go through otelhooks' tool hooks, then the user's
    ``computer`` (sync or async)."""

    def __init__(
        self, computer: Computer | AsyncComputer, name: str, ident: str | None, calls: _Calls
    ) -> None:
        self.computer = computer
        self.name = name
        self.identifier = ident
        self.calls = calls

    @property
    def environment(self) -> Any:
        return self.computer.environment

    @property
    def dimensions(self) -> tuple[int, int] | None:
        return self.computer.dimensions

    async def _perform(self, args: dict[str, Any]) -> Any:
        action = args.get("action")
        if not isinstance(action, str) or action not in _PARAMS:
            raise ValueError(f"unknown computer action {action!r}")
        method = getattr(self.computer, action)
        positional = [args.get(p) for p in _PARAMS[action]]
        if action == "drag":
            positional = [[(int(p[0]), int(p[1])) for p in args.get("path") or []]]
        keys = args.get("keys") if action != "keypress" else None
        if keys and not _takes_keys(method):
            _log.warning("a computer action's modifier keys were dropped", action=action)
            keys = None
        return await awaited(method(*positional, **({"keys": keys} if keys else {})))

    async def _act(self, action: str, **fields: Any) -> Any:
        args = {"action": action, **{k: v for k, v in fields.items() if v is not None}}
        if action == "drag":
            args["path"] = [list(p) for p in fields["path"]]
        if self.calls.current:
            args["pending_safety_checks"] = self.calls.current

        async def run(changed: dict[str, Any] | None) -> Any:
            return await self._perform(args if changed is None else changed)

        shown = _screenshot_text if action == "screenshot" else None
        # the SDK does not tell a computer the model's call id; the span gets one of its own
        output, denied = await guarded(self.name, self.identifier, args, None, run, shown)
        if denied:
            matcher = f"{self.identifier}/{self.name}" if self.identifier else self.name
            raise ToolDenied(str(output), tool=matcher)
        return output

    async def screenshot(self) -> str:
        output = await self._act("screenshot")
        return output if isinstance(output, str) else str(output)

    async def click(self, x: int, y: int, button: Any, *, keys: list[str] | None = None) -> None:
        await self._act("click", x=x, y=y, button=button, keys=keys)

    async def double_click(self, x: int, y: int, *, keys: list[str] | None = None) -> None:
        await self._act("double_click", x=x, y=y, keys=keys)

    async def scroll(
        self, x: int, y: int, scroll_x: int, scroll_y: int, *, keys: list[str] | None = None
    ) -> None:
        await self._act("scroll", x=x, y=y, scroll_x=scroll_x, scroll_y=scroll_y, keys=keys)

    async def type(self, text: str) -> None:
        await self._act("type", text=text)

    async def wait(self) -> None:
        await self._act("wait")

    async def move(self, x: int, y: int, *, keys: list[str] | None = None) -> None:
        await self._act("move", x=x, y=y, keys=keys)

    async def keypress(self, keys: list[str]) -> None:
        await self._act("keypress", keys=list(keys))

    async def drag(self, path: list[tuple[int, int]], *, keys: list[str] | None = None) -> None:
        await self._act("drag", path=path, keys=keys)


def computer_hooked(tool: ComputerTool[Any]) -> bool:
    """Whether ``tool``'s actions go through the hooks (a copy :func:`hook_computer` made)."""
    return tool in _CALLS


def hook_computer(tool: ComputerTool[Any], identifier: str | None) -> ComputerTool[Any]:
    """A copy of ``tool`` whose computer's actions go through the hooks (``tool`` itself when
    its computer is hooked already). A factory or ``ComputerProvider`` is wrapped so that the
    computer it makes for a run is; its ``dispose`` is given the computer it made."""
    config: Any = tool.computer
    name = tool.name
    made_by = config.create if isinstance(config, ComputerProvider) else config
    if isinstance(config, _HookedComputer) or getattr(made_by, "__otelhooks_hooked__", False):
        return tool
    calls = _Calls()
    if isinstance(config, Computer | AsyncComputer):
        return _kept(tool, _HookedComputer(config, name, identifier, calls), calls)
    provider = config if isinstance(config, ComputerProvider) else None
    create = provider.create if provider is not None else config

    async def hooked_create(*, run_context: RunContextWrapper[Any]) -> _HookedComputer:
        made = await awaited(create(run_context=run_context))
        if isinstance(made, _HookedComputer):
            return made
        return _HookedComputer(made, name, identifier, calls)

    hooked_create.__otelhooks_hooked__ = True  # type: ignore[attr-defined]
    if provider is None or provider.dispose is None:
        return _kept(tool, hooked_create, calls)
    dispose = provider.dispose

    async def hooked_dispose(*, run_context: RunContextWrapper[Any], computer: Any) -> None:
        inner = computer.computer if isinstance(computer, _HookedComputer) else computer
        await awaited(dispose(run_context=run_context, computer=inner))

    lifecycle = ComputerProvider(create=hooked_create, dispose=hooked_dispose)
    return _kept(tool, lifecycle, calls)


def _kept(tool: ComputerTool[Any], computer: Any, calls: _Calls) -> ComputerTool[Any]:
    """A copy of ``tool`` with ``computer``, whose calls are ``calls``."""
    hooked = dataclasses.replace(tool, computer=computer)
    _CALLS[hooked] = calls
    return hooked
