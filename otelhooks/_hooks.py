"""The hook definition: ``{id, type, handler, matcher, ...}``, and what an action is.

A :class:`Hook` describes; it validates its own fields (event, matcher, which action) and builds
nothing. :func:`otelhooks._actions.build_hook` turns it into a runnable hook by binding its
action, when it is loaded or registered (pluggy keeps spec and implementation apart the same way).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeGuard, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from otelhooks._env_seconds import LEAST_TIMEOUT_S
from otelhooks._errors import ConfigError, unknown_field
from otelhooks._events import EventSpec, HookEvent, resolve_event
from otelhooks._hook_step import HookStep
from otelhooks._matchers import Matcher, compile_matcher

if TYPE_CHECKING:
    from otelhooks._actions._webhook_delivery import WebhookDeliverer

__all__ = [
    "ACTION_KINDS",
    "HOOK_MODES",
    "Action",
    "Block",
    "Enqueueing",
    "Hook",
    "HookFacts",
    "enqueues",
]

ACTION_KINDS = ("handler", "command", "script", "plugin", "webhook", "approval", "budget")
HOOK_MODES = ("enforce", "permissive", "disabled")  # the names of IBM's MCP ContextForge gateway


@runtime_checkable
class Action(Protocol):
    """What a hook does. Called with the event payload, it returns the handler return protocol
    (``None``: no change; a payload or dict: rewrite; :class:`Block`: block). ``is_async``:
    calling it returns a coroutine; ``concurrent``: observers of one event may run it beside
    its siblings; ``hands_payload``: the payload object itself reaches code otelhooks does not
    own (a Python function), which may change it in place, so an intercept chain keeps a copy
    of its rewritable field to tell (otelhooks' own commands, webhooks, approvals and budgets
    read it, or send a copy of it, and answer with their decision)."""

    kind: str
    is_async: bool
    concurrent: bool
    hands_payload: bool

    def __call__(self, payload: HookEvent) -> Any: ...


@runtime_checkable
class Enqueueing(Protocol):
    """An action that, as an observer, delivers off the agent's path by itself, through the
    engine's deliverer (notification webhooks)."""

    def enqueue(self, payload: HookEvent, deliverer: WebhookDeliverer) -> bool: ...


_ENQUEUEING: dict[type, bool] = {}


def enqueues(action: object) -> TypeGuard[Enqueueing]:
    """Whether ``action`` is :class:`Enqueueing`, cached per type: a runtime-checkable Protocol
    check inspects every member, and the dispatcher asks for every hook of every event."""
    kind = type(action)
    known = _ENQUEUEING.get(kind)
    if known is None:
        known = _ENQUEUEING[kind] = isinstance(action, Enqueueing)
    return known


class Block:
    """Return this from a handler to block the action (deny a tool call, drop a message).

    Example:
        >>> def guard(event):
        ...     if event.apiName == "rm":
        ...         return Block("rm is not allowed")
    """

    __slots__ = ("reason",)

    def __init__(self, reason: str | None = None) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"Block({self.reason!r})"


class Hook(BaseModel):
    """One hook: what event it runs on, which calls it matches, and what it does.

    Attributes:
        id: unique within its registry (global or per operation).
        type: the event, by its canonical name or any dialect's name (``beforeToolCall``,
            ``before_tool_call``, ``PreToolUse``, ``after_tool_result``, ...).
        handler: a sync or async callable that gets the event payload.
        command, script, plugin, webhook, approval, budget: the other actions (exactly one
            action per hook, except that LobeHub allows a handler with a webhook: the handler
            runs in process and the webhook is what the queue delivers).
        matcher: which tools the hook applies to, in the rules of ``dialect``.
        intercept: the kernel's intercept contract: the return value replaces the event data
            and ``None`` blocks. Without it a handler returns ``None`` to change nothing, a payload
            (model or dict) to rewrite, or :class:`Block` to block.
        timeout: seconds a handler may run; past it the result is ignored and an error recorded.
        on_error: what a failing interceptor means: ``continue`` (ignore it) or ``block``.
        dialect: matcher rules; defaults to the dialect of the ``type`` name.
        mode: ``enforce`` (the default): what the hook decides is done. ``permissive``: the
            hook runs and its would-be decision is recorded (span attribute
            ``otelhooks.hook.permissive``, a log line, the ``otelhooks.hook.mode`` metric
            attribute, ``hooks test`` and ``replay`` output) but never acted on: it blocks,
            mocks and rewrites nothing, and ``on_error: block`` does not block. ``disabled``:
            validated, never run.

    Example:
        >>> Hook(id="log-tools", type="afterToolCall", handler=print, matcher="^fs/")
        Hook(id='log-tools', type='afterToolCall', ...)
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, frozen=True)

    id: str = Field(min_length=1)
    type: str = Field(min_length=1)
    handler: Callable[..., Any] | None = None
    matcher: str | None = None
    intercept: bool = False
    timeout: float = Field(default=10.0, ge=LEAST_TIMEOUT_S, le=600)
    on_error: Literal["continue", "block"] = "continue"
    dialect: Literal["otelhooks", "lobehub", "kernel", "workspace", "claude"] | None = None
    mode: Literal["enforce", "permissive", "disabled"] = "enforce"
    command: str | list[str] | None = None
    script: str | None = None
    plugin: str | None = None
    webhook: Any = None  # a WebhookConfig (or its dict); validated by the webhook action
    approval: Any = None  # an ApprovalConfig (or its dict); validated by the approval action
    budget: Any = None  # a BudgetConfig (or its dict); validated by the budget action

    _spec: EventSpec = PrivateAttr()
    _matcher: Matcher = PrivateAttr()
    _action: Any = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        # A typo gets the closest field name, as in a config file, not pydantic's bare
        # "Extra inputs are not permitted".
        if isinstance(data, Mapping):
            for key in data:
                if key not in cls.model_fields:
                    raise ConfigError(unknown_field(str(key), cls.model_fields), field=str(key))
        return data

    def model_post_init(self, context: Any, /) -> None:
        spec, dialect = resolve_event(self.type)
        # Claude Code's event names (the workspace engine's too) in a hook list of ours take our
        # matcher rules, Claude Code's plus /re/: a guard written from Claude Code's, Codex's or
        # Gemini's reference (`mcp__memory__.*`) was read by the workspace rules as an exact
        # name no tool has, and never fired. A workspace `*.hook.json` says `dialect: workspace`.
        named = "otelhooks" if dialect.value == "workspace" else dialect.value
        effective = self.dialect or named
        kinds = self.action_kinds
        if not kinds:
            raise ConfigError(
                "a hook needs an action: handler, command, script, plugin, webhook, approval "
                "or budget",
                field="handler",
            )
        # LobeHub: a hook may have both a handler (run locally) and a webhook (used when the
        # hook is delivered through the queue); any other combination is ambiguous.
        if len(kinds) > 1 and set(kinds) != {"handler", "webhook"}:
            raise ConfigError(f"a hook has one action, not {' and '.join(kinds)}", field=kinds[1])
        if self.matcher not in (None, "", "*") and effective == "lobehub" and not spec.tool_event:
            raise ConfigError(
                f"matchers are allowed only on tool events, not {self.type}", field="matcher"
            )
        if self.intercept and not spec.intercept:
            raise ConfigError(
                f"{self.type} cannot be intercepted; interceptable events: "
                "before_agent_start, before_tool_call, message_sending, tool_result_persist, "
                "before_human_intervention",
                field="intercept",
            )
        self._spec = spec
        self._matcher = compile_matcher(self.matcher, effective, hook_id=self.id)

    @property
    def action_kinds(self) -> list[str]:
        """The action fields set, in :data:`ACTION_KINDS` order (the first is what runs)."""
        return [k for k in ACTION_KINDS if getattr(self, k) is not None]

    @property
    def bound(self) -> bool:
        """Whether the builder gave this hook its action (it was loaded or registered)."""
        return self._action is not None

    def bind(self, action: Action) -> None:
        """Give the hook its action (the builder's job; once)."""
        if self._action is not None and self._action is not action:
            raise ConfigError("a hook's action is bound once", hook_id=self.id)
        self._action = action

    def __repr__(self) -> str:
        return f"Hook(id={self.id!r}, type={self.type!r}, ...)"

    # The read-only views below are cached_property: a pydantic private attribute is read through
    # __getattr__, and the dispatcher reads them for every hook of every event. The model is
    # frozen and they are set once in model_post_init, so a cached copy in the instance __dict__
    # (which pydantic leaves out of fields) never goes stale.

    @cached_property
    def event(self) -> str:
        """The canonical event name."""
        return self._spec.name

    @cached_property
    def spec(self) -> EventSpec:
        return self._spec

    @cached_property
    def compiled_matcher(self) -> Matcher:
        return self._matcher

    def serializable(self) -> dict[str, Any]:
        """The part of the hook that can be persisted (LobeHub: ``{id, type, webhook, matcher}``,
        and ``mode`` when it is not ``enforce``, so a permissive hook stays permissive).

        Restore it with ``Hook.model_validate(...)``, which validates it again.
        """
        webhook = self.webhook
        if webhook is not None and hasattr(webhook, "persisted"):
            webhook = webhook.persisted()
        persisted = {"id": self.id, "type": self.type, "webhook": webhook, "matcher": self.matcher}
        if self.mode != "enforce":
            persisted["mode"] = self.mode
        return persisted

    @cached_property
    def action(self) -> Action:
        """What the hook does, bound by the builder (see :mod:`otelhooks._actions`)."""
        if self._action is None:
            raise ConfigError(
                "this hook has no action yet: register it, or load it with load_config",
                hook_id=self.id,
            )
        action: Action = self._action
        return action

    @cached_property
    def deadline_s(self) -> float:
        """How long a call of this hook may take (a webhook's own timeout wins)."""
        own: float | None = getattr(self.action, "deadline_s", None)
        return own if own is not None else self.timeout

    @cached_property
    def error_policy(self) -> str:
        """``continue`` or ``block`` when the hook fails (a webhook's ``onError`` wins)."""
        own: str | None = getattr(self.action, "on_error", None)
        return own if own is not None else self.on_error

    @cached_property
    def is_async(self) -> bool:
        return self.action.is_async

    @cached_property
    def inline(self) -> Callable[[HookEvent], Any] | None:
        """What the observer worker calls on its own thread, under its watchdog, for this hook;
        None when the hook runs another way: async, ``concurrent`` (started beside its
        siblings) or ``self_bounded`` (it bounds its own time). An action that offers
        ``direct`` (a Python handler: its function) is called through it, one frame less."""
        action = self.action
        if action.is_async or action.concurrent or getattr(action, "self_bounded", False):
            return None
        direct: Callable[[HookEvent], Any] | None = getattr(action, "direct", None)
        return direct if direct is not None else action

    @cached_property
    def notifies(self) -> bool:
        """A notification: its action delivers by itself, off the path (:func:`enqueues`);
        read for every hook of every event."""
        return enqueues(self.action)

    @cached_property
    def intercepts(self) -> bool:
        """Runs inline, before the action, and may change or block it."""
        return self._spec.intercept

    @cached_property
    def facts(self) -> HookFacts:
        """What the intercept chain reads of this hook on every run, as one plain object."""
        return HookFacts(self)


class HookFacts:
    """What the intercept chain reads of a hook on every run, made once per hook (the hook is
    frozen and its action bound once): plain slots, because most of what a run asks of the
    pydantic :class:`Hook` is derived (``action``, ``deadline_s``, ``error_policy``, ``inline``
    are properties over its private attributes, read through the model's ``__getattr__``), and a
    replay runs hundreds of thousands of hooks.

    ``call``: what a call on the caller's thread calls (:attr:`Hook.inline`, else the action);
    ``steps``: the :class:`~otelhooks._hook_step.HookStep` of each outcome of an enforcing run that
    returned, made here and shared by every run (they are immutable).
    """

    __slots__ = (
        "blocks_on_error",
        "call",
        "deadline_s",
        "hands_payload",
        "hook",
        "id",
        "intercept",
        "is_async",
        "kind",
        "notifies",
        "permissive",
        "steps",
    )

    def __init__(self, hook: Hook) -> None:
        action = hook.action
        self.hook = hook
        self.id = hook.id
        self.kind: str = action.kind
        self.permissive = hook.mode == "permissive"
        self.intercept = hook.intercept
        self.blocks_on_error = hook.error_policy == "block"
        self.deadline_s = hook.deadline_s
        self.is_async = action.is_async
        self.hands_payload = action.hands_payload
        self.notifies = hook.notifies
        self.call: Callable[[HookEvent], Any] = hook.inline or action
        self.steps = {
            outcome: HookStep(hook.id, self.kind, outcome)
            for outcome in ("ok", "rewritten", "blocked", "mocked", "error")
        }
