"""Hook actions and the builder that binds them: what a hook does when it fires.

Every action is a callable taking the event payload and returning the handler return protocol
(``None``: no change; a payload or dict: rewrite; :class:`~otelhooks.Block`: block), so the
dispatcher runs a shell command, a control webhook or a Python function the same way, under the
hook's deadline. An action that delivers off the agent's path on its own (notification webhooks)
also has ``enqueue(payload, deliverer)``: observers of that kind are handed over instead of run.

:func:`build_hook` is the one place a hook description becomes runnable: it validates the
description (a :class:`~otelhooks.Hook` or its mapping) and binds the action its fields ask for.
The builders of the action kinds are listed here, each importing its module when first used: a
process that only runs Python handlers never imports httpx, subprocess helpers or entry points.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from otelhooks._actions._handler import HandlerAction
from otelhooks._errors import ConfigError
from otelhooks._hooks import ACTION_KINDS, Action, Hook, enqueues

if TYPE_CHECKING:
    pass

__all__ = ["ACTION_KINDS", "Action", "build_action", "build_hook", "enqueues"]


def _handler(hook: Hook) -> Action:
    return HandlerAction(hook.handler)  # type: ignore[arg-type]


def _command(hook: Hook) -> Action:
    from otelhooks._actions._command import CommandAction

    return CommandAction(hook)


def _script(hook: Hook) -> Action:
    from otelhooks._actions._script import ScriptAction

    return ScriptAction(hook)


def _plugin(hook: Hook) -> Action:
    from otelhooks._actions._plugin import PluginAction

    return PluginAction(hook)


def _webhook(hook: Hook) -> Action:
    from otelhooks._actions._webhook import build_webhook_action

    return build_webhook_action(hook)


def _approval(hook: Hook) -> Action:
    from otelhooks._actions._approval import ApprovalAction

    return ApprovalAction(hook.id, hook.event, hook.approval)


def _budget(hook: Hook) -> Action:
    from otelhooks._actions._budget import BudgetAction

    return BudgetAction(hook.id, hook.event, hook.budget)


_BUILDERS: dict[str, Callable[[Hook], Action]] = {
    "handler": _handler,
    "command": _command,
    "script": _script,
    "plugin": _plugin,
    "webhook": _webhook,
    "approval": _approval,
    "budget": _budget,
}


def build_action(hook: Hook, kind: str) -> Action:
    """Build the action of ``kind`` for ``hook``; a ConfigError names the field on failure."""
    return _BUILDERS[kind](hook)


def build_hook(obj: Hook | Mapping[str, Any], **defaults: Any) -> Hook:
    """Validate a hook description and bind its action (a bound hook is returned as it is).

    ``obj`` is a :class:`~otelhooks.Hook` or a mapping of the LobeHub shape; ``defaults`` fill
    fields the mapping leaves out.

    Raises:
        ConfigError: naming the hook id and the field.
    """
    hook = _validated(obj, defaults)
    if hook.bound:
        return hook
    kinds = hook.action_kinds
    try:
        action = build_action(hook, kinds[0])
        if kinds[0] != "webhook" and hook.webhook is not None:
            build_action(hook, "webhook")  # validated now, used when the hook is queued
    except ConfigError as exc:
        raise exc.located(hook_id=hook.id) from None
    hook.bind(action)
    return hook


def _validated(obj: Hook | Mapping[str, Any], defaults: Mapping[str, Any]) -> Hook:
    if isinstance(obj, Hook):
        return obj
    if not isinstance(obj, Mapping):
        raise ConfigError(f"a hook must be a Hook or a mapping, not {type(obj).__name__}")
    data = {**defaults, **obj}
    hook_id = data.get("id") if isinstance(data.get("id"), str) else None
    try:
        return Hook.model_validate(data)
    except ConfigError as exc:
        raise exc.located(hook_id=hook_id) from None
    except ValidationError as exc:
        # Our own checks in model_post_init raise ConfigError (a ValueError): pydantic wraps it.
        first = exc.errors()[0]
        original = first.get("ctx", {}).get("error")
        if isinstance(original, ConfigError):
            raise original.located(hook_id=hook_id) from None
        field = ".".join(str(x) for x in first["loc"]) or "?"
        raise ConfigError(first["msg"], hook_id=hook_id, field=field) from None
