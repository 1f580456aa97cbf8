"""Hook actions: what a hook does when it fires.

Every action is a callable taking the event payload and returning the handler return protocol
(``None``: no change; a payload or dict: rewrite; :class:`~otelhooks.Block`: block), so the
dispatcher runs a shell command, a control webhook or a Python function the same way, under the
hook's deadline. An action that delivers off the agent's path on its own (notification webhooks)
also has ``enqueue(payload, deliverer)``: observers of that kind are handed over instead of run.

Builders are registered by kind (``handler``, ``command``, ``script``, ``plugin``, ``webhook``);
:func:`build_action` picks the one the hook's fields ask for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, runtime_checkable

from otelhooks._actions._handler import HandlerAction
from otelhooks._errors import ConfigError

if TYPE_CHECKING:
    from otelhooks._actions._webhook_delivery import WebhookDeliverer
    from otelhooks._events import HookEvent
    from otelhooks._hooks import Hook

__all__ = [
    "ACTION_KINDS",
    "Action",
    "Enqueueing",
    "build_action",
    "enqueues",
    "register_action_kind",
]


@runtime_checkable
class Action(Protocol):
    """What a hook does. ``is_async``: calling it returns a coroutine."""

    kind: str
    is_async: bool
    concurrent: bool  # observers of one event may run it in parallel with its siblings

    def __call__(self, payload: HookEvent) -> Any: ...


@runtime_checkable
class Enqueueing(Protocol):
    """An action that, as an observer, delivers off the agent's path by itself, through the
    engine's deliverer."""

    def enqueue(self, payload: HookEvent, deliverer: WebhookDeliverer) -> bool: ...


_ENQUEUEING: dict[type, bool] = {}


def enqueues(action: object) -> TypeGuard[Enqueueing]:
    """Whether ``action`` is :class:`Enqueueing`, cached per type: a runtime-checkable Protocol
    check costs ~4 µs on 3.11, and the dispatcher asks for every hook of every notified event."""
    kind = type(action)
    known = _ENQUEUEING.get(kind)
    if known is None:
        known = _ENQUEUEING[kind] = isinstance(action, Enqueueing)
    return known


_BUILDERS: dict[str, Callable[[Hook], Action]] = {
    "handler": lambda hook: HandlerAction(hook.handler),  # type: ignore[arg-type]
}

ACTION_KINDS = ("handler", "command", "script", "plugin", "webhook")


def register_action_kind(kind: str, builder: Callable[[Hook], Action]) -> None:
    """Register the builder of an action kind (the action modules call this on import)."""
    _BUILDERS[kind] = builder


def build_action(hook: Hook, kind: str) -> Action:
    """Build the action of ``kind`` for ``hook``; a ConfigError names the field on failure."""
    _load_builtin_kinds()
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise ConfigError(f"{kind} actions are not available", field=kind)
    return builder(hook)


def _load_builtin_kinds() -> None:
    # Imported lazily: the action modules import httpx, subprocess helpers and entry points,
    # which a process that only uses Python handlers should not pay for.
    import importlib

    for module in ("_command", "_script", "_plugin", "_webhook"):
        try:
            importlib.import_module(f"otelhooks._actions.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"otelhooks._actions.{module}":
                raise
