"""The ``webhook`` action kind: notification webhooks and ``before_tool_call`` control hooks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from otelhooks._actions._webhook_config import WebhookConfig
from otelhooks._actions._webhook_control import ControlWebhookAction
from otelhooks._actions._webhook_delivery import WebhookDeliverer
from otelhooks._errors import ConfigError, HookError
from otelhooks._events import HookEvent

if TYPE_CHECKING:
    from otelhooks._hooks import Hook

__all__ = ["NotifyWebhookAction", "build_webhook_action", "webhook_config"]


class NotifyWebhookAction:
    """A notification: queued for background delivery, never awaited (also on
    ``before_tool_call``: observation never gates execution)."""

    kind = "webhook"
    is_async = False
    concurrent = False
    hands_payload = False  # otelhooks' own code reads the payload; it never changes it

    def __init__(self, hook_id: str, hook_type: str, config: WebhookConfig) -> None:
        self.hook_id = hook_id
        self.hook_type = hook_type
        self.config = config
        # made known secrets when the hook is registered (HookRegistry.register)
        self.secret_env = tuple(config.allowed_env_vars)

    def enqueue(self, payload: HookEvent, deliverer: WebhookDeliverer) -> bool:
        return deliverer.enqueue(self.hook_id, self.hook_type, self.config, payload)

    def __call__(self, payload: HookEvent) -> None:
        # Engines hand notifications to their deliverer (enqueue); there is no process-wide one
        # to fall back on, so a direct call is a wiring mistake, reported as a hook failure.
        raise HookError(
            "a notification webhook is delivered through an engine's deliverer, not called",
            hook_id=self.hook_id,
            event=payload.event,
        )


def webhook_config(hook: Hook) -> WebhookConfig:
    """Validate ``hook.webhook`` and the rules that involve the rest of the hook.

    Pure: the values of its ``allowedEnvVars`` become known secrets when the hook is registered
    (``secret_env`` of the action), so one that fails quoting them is scrubbed before any
    request was ever sent.
    """
    raw: Any = hook.webhook
    try:
        config = raw if isinstance(raw, WebhookConfig) else WebhookConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        field = f"webhook.{loc}" if loc else "webhook"
        raise ConfigError(first["msg"].removeprefix("Value error, "), field=field) from None
    if config.is_control:
        if hook.spec.name != "before_tool_call":
            raise ConfigError(
                "control hooks (responseHandling: toolCall) run only on beforeToolCall",
                field="webhook.responseHandling",
            )
        if hook.handler is not None:
            raise ConfigError("a control hook cannot also have a handler", field="handler")
    return config


def build_webhook_action(hook: Hook) -> ControlWebhookAction | NotifyWebhookAction:
    """A control webhook (``responseHandling: toolCall``) or a notification, as configured."""
    config = webhook_config(hook)
    if config.is_control:
        return ControlWebhookAction(hook.id, hook.type, config)
    return NotifyWebhookAction(hook.id, hook.type, config)
