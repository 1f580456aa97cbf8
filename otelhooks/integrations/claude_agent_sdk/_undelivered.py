"""The hooks ``hooks_for`` cannot run: those on an event the Claude Agent SDK never calls back for.

The SDK hands its CLI every hook name of ``ClaudeAgentOptions(hooks=...)``, but the CLI calls a
Python callback only for some events: measured with claude-agent-sdk 0.2.190 and the CLI it
bundles (2.1.337), the settings-file command hook of ``SessionStart`` (at startup),
``SessionEnd`` and ``InstructionsLoaded`` runs and the callback never does
(``tests/agent_sdk/fixtures/delivered_events.json``). A hook on such an event would never run
and say nothing: :func:`undelivered` finds them, :func:`check_delivered` refuses the guards
among them (or warns).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from otelhooks.integrations.coding_agents._combine import ANSWERING_EVENTS
from otelhooks.integrations.coding_agents._input import SKILL_COMMAND
from otelhooks.integrations.coding_agents._mapping import ALSO_NOW, EVENTS

__all__ = [
    "DeliveryCheck",
    "UndeliveredHookWarning",
    "check_delivered",
    "undelivered",
    "undelivered_events",
]

# Canonical events the bridge runs on its own, from a delivered event or from close():
# ``on_tool_call_denied`` when a guard denies a PreToolUse, ``on_error`` when a turn ends
# interrupted, ``session_end`` when SdkHooks.close() ends the sessions.
_BRIDGE_MADE = frozenset({"on_tool_call_denied", "on_error", "session_end"})
# Of those, the ones dispatched in no turn (close() ends sessions, not turns): an operation's
# hooks (the application's, or a turn's own) on it never run
_OUTSIDE_TURNS = frozenset({"session_end"})


class UndeliveredHookWarning(UserWarning):
    """A hook given to ``hooks_for`` (or to its engine later, or to the ``oh.operation(...)``
    the SDK runs in, or to one of its turns' operations) is on an event the Claude Agent SDK
    never calls back for (``SessionStart``, ``SessionEnd``, ``InstructionsLoaded``, ...), or on
    no Claude Code event at all: it will never run under the SDK. Also: the hooks of an
    operation the SDK's callbacks do not run in (a ``ClaudeSDKClient`` connected before it
    began) or that has ended, which do not see the SDK's session.

    Turn it into an error to refuse such engines: ``warnings.simplefilter("error",
    UndeliveredHookWarning)``.
    """


def undelivered_events(delivered: Iterable[str]) -> tuple[str, ...]:
    """The Claude Code hook events not in ``delivered``, in the bridge table's order.

    Example:
        >>> "SessionEnd" in undelivered_events(["PreToolUse"])
        True
    """
    hooked = set(delivered)
    return tuple(name for name in EVENTS if name not in hooked)


def _reached(delivered: Iterable[str], *, in_turn: bool = False) -> frozenset[str]:
    """The canonical events the bridge dispatches from ``delivered`` (Claude Code's names);
    ``in_turn``: only those dispatched in a turn (where an operation's hooks run)."""
    found = set(_BRIDGE_MADE - _OUTSIDE_TURNS if in_turn else _BRIDGE_MADE)
    for name in delivered:
        if name == SKILL_COMMAND:  # judged as its shell tool's PreToolUse
            name = "PreToolUse"
        row = EVENTS.get(name)
        if row is not None:
            found.add(row.canonical)
        found.update(ALSO_NOW.get(name, ()))
    return frozenset(found)


def undelivered(
    hooks: Sequence[Any], delivered: Iterable[str], *, in_turn: bool = False
) -> list[tuple[Any, list[str]]]:
    """The hooks of ``hooks`` (not ``disabled``) on no canonical event the bridge dispatches
    when only ``delivered`` (Claude Code's names) reach it (``in_turn``: hooks of an operation,
    which run only on the events of a turn), each with the Claude Code events that would have
    run it (``[]``: no Claude Code event does).

    Example:
        >>> from otelhooks import Hook
        >>> start = Hook(id="hello", type="SessionStart", handler=print)
        >>> [(h.id, names) for h, names in undelivered([start], ["PreToolUse"])]
        [('hello', ['SessionStart'])]
    """
    reached = _reached(delivered, in_turn=in_turn)
    return [
        (hook, [name for name, row in EVENTS.items() if row.canonical == hook.event])
        for hook in hooks
        if hook.mode != "disabled" and hook.event not in reached
    ]


def _named(found: list[tuple[Any, list[str]]]) -> str:
    return "; ".join(
        f"{hook.id} ({hook.event}: {', '.join(names) if names else 'no Claude Code event'})"
        for hook, names in found
    )


def _guards(found: list[tuple[Any, list[str]]]) -> list[tuple[Any, list[str]]]:
    """The enforcing hooks of ``found`` on an event whose hooks could decide under the CLI."""
    return [
        (hook, names)
        for hook, names in found
        if hook.mode == "enforce" and any(name in ANSWERING_EVENTS for name in names)
    ]


def check_delivered(hooks: Sequence[Any], delivered: Iterable[str], *, accept: bool) -> None:
    """Refuse (``ValueError``) the guards of ``hooks`` that would never run when only
    ``delivered`` reach the bridge: enforcing hooks on an event whose hooks could decide under
    the Claude Code CLI; warn (:class:`UndeliveredHookWarning`) of every hook that would never
    run, the guards too when ``accept``.

    Example:
        >>> from otelhooks import Hook
        >>> check_delivered([Hook(id="t", type="PreToolUse", handler=print)], ["PreToolUse"],
        ...                 accept=False)
    """
    found = undelivered(hooks, delivered)
    if not found:
        return
    guards = _guards(found)
    if guards and not accept:
        raise ValueError(
            "hooks_for: the Claude Agent SDK never calls back for the events of these guards, "
            f"so they would never run: {_named(guards)}. Move them to an event the SDK "
            "delivers (SDK_EVENTS), or pass accept_undelivered=True to run without them"
        )
    warnings.warn(
        "hooks_for: these hooks will never run under the Claude Agent SDK (it never calls "
        f"back for their events): {_named(found)}",
        UndeliveredHookWarning,
        stacklevel=3,
    )


class DeliveryCheck:
    """The rule of :func:`check_delivered`, applied again wherever ``hooks_for`` learns of hooks
    it did not see when it was called: at every callback, before the bridge runs an event.

    The hooks an event meets come from three scopes: the engine's global hooks (registered
    after ``hooks_for`` too), the :meth:`~otelhooks.OtelHooks.operation` the SDK runs inside
    (``async with oh.operation(..., hooks=[guard])`` around ``query``: each SDK turn runs
    within it, :mod:`._turn_scopes`), and the turn's own operation (hooks registered for the
    ``operationId`` its events carry). A hook of any of them on an event the SDK never calls
    back for was taken without a word, never to run. A callback cannot raise to the
    application: :meth:`refusal` gives the message the callback refuses its event with (and
    stops the run), unless ``accept``; every such hook is named once in an
    :class:`UndeliveredHookWarning`.

    Asked at every callback: it looks again only when the engine's hooks changed
    (``registry.version``) or the callback's scopes did.

    Example:
        >>> from otelhooks._dispatch._registry import HookRegistry
        >>> registry = HookRegistry()
        >>> check = DeliveryCheck(registry, ["PreToolUse"], accept=False)
        >>> check.refusal(()) is None
        True
        >>> _ = registry.register([{"id": "start", "type": "SessionStart", "command": "exit 2"}])
        >>> with warnings.catch_warnings(record=True):  # and an UndeliveredHookWarning
        ...     "start (session_start: SessionStart)" in check.refusal(())
        True
    """

    def __init__(self, registry: Any, delivered: Iterable[str], *, accept: bool) -> None:
        self._registry = registry
        self._delivered = tuple(delivered)
        self._accept = accept
        self._warned: set[tuple[str | None, str]] = set()
        # what was found for (registry version, scopes): hooks change rarely
        self._last: tuple[tuple[int, tuple[str, ...]], str | None] | None = None
        self._unseen_at = -1  # the registry version unseen() last looked at

    def start(self) -> None:
        """The check of ``hooks_for`` itself: raises ``ValueError`` for a guard that would never
        run (unless ``accept``), warns of every hook that would never run."""
        hooks = self._registry.hooks()
        check_delivered(hooks, self._delivered, accept=self._accept)
        self._warned.update((None, hook.id) for hook, _ in undelivered(hooks, self._delivered))
        self._last = ((self._registry.version, ()), None)

    def refusal(self, scopes: Sequence[str]) -> str | None:
        """Why a callback whose event meets the hooks of the operations ``scopes`` (besides the
        global ones) must refuse it: a guard that would never run (``None`` when there is none,
        or ``accept``)."""
        key = (self._registry.version, tuple(scopes))
        last = self._last
        if last is not None and last[0] == key:
            return last[1]
        problem = self._look(key[1])
        self._last = (key, problem)
        return problem

    def _look(self, scopes: tuple[str, ...]) -> str | None:
        registry = self._registry
        late = undelivered(registry.hooks(), self._delivered)
        told = [
            f"hooks registered after hooks_for on events it never calls back for: {_named(late)}"
            if late
            else ""
        ]
        new: list[tuple[str | None, str]] = [(None, h.id) for h, _ in late]
        scoped: list[tuple[Any, list[str]]] = []
        for scope in scopes:
            if not registry.has_own(scope):
                continue
            found = [
                (hook, names)
                for hook, names in undelivered(
                    registry.hooks(operation_id=scope), self._delivered, in_turn=True
                )
                if ("operation", hook.id) not in new  # a turn holds its operation's hooks too
            ]
            if found:
                told.append(
                    f"hooks of the operation {scope} on events the SDK never calls back for: "
                    f"{_named(found)}"
                )
                new += [("operation", h.id) for h, _ in found]
                scoped += found
        if not set(new) <= self._warned:
            self._warned.update(new)
            warnings.warn(
                "hooks_for: these hooks will never run under the Claude Agent SDK: "
                + "; ".join(t for t in told if t),
                UndeliveredHookWarning,
                stacklevel=2,
            )
        guards = _guards(late) + _guards(scoped)
        if not guards or self._accept:
            return None
        return (
            "otelhooks claude-agent-sdk: refused, these guards would never run under the Claude "
            f"Agent SDK: {_named(guards)}. Put them on an event the SDK calls back for "
            "(SDK_EVENTS), or pass hooks_for(accept_undelivered=True) to run without them"
        )

    def outside_turn(self, event: str, scope: str) -> str | None:
        """Why a callback must refuse ``event`` (Claude Code's name), which the bridge dispatches
        in no turn (none is open: the operation's hooks run only on a turn's events), when the
        SDK runs inside operation ``scope``: a guard of that operation on the event. Every
        hook of it there is named once in an :class:`UndeliveredHookWarning`."""
        row = EVENTS.get(event)
        registry = self._registry
        if row is None or not registry.has_own(scope):
            return None
        events = {row.canonical, *ALSO_NOW.get(event, ())}
        found = [
            (hook, [event])
            for hook in registry.hooks(operation_id=scope)
            if hook.mode != "disabled" and hook.event in events
        ]
        if not found:
            return None
        new = {("outside", hook.id) for hook, _ in found}
        if not new <= self._warned:
            self._warned.update(new)
            warnings.warn(
                f"hooks_for: these hooks of the operation {scope} did not run: the Claude Agent "
                f"SDK sent {event} outside any turn (before a prompt opened one): "
                f"{_named(found)}",
                UndeliveredHookWarning,
                stacklevel=2,
            )
        guards = _guards(found)
        if not guards or self._accept:
            return None
        return (
            f"otelhooks claude-agent-sdk: refused, these guards of the operation {scope} cannot "
            f"run on {event} sent outside any turn: {_named(guards)}. Register them with "
            "oh.register or configure(hooks=...) to run on every event"
        )

    def unseen(self, known: Callable[[], Iterable[str]]) -> None:
        """For a callback that runs in no operation: warn (an :class:`UndeliveredHookWarning`,
        once per operation) of each operation with hooks of its own but those ``known()`` names
        (the bridge's turns, whose events carry their ids). The SDK's callbacks run in the
        context where its CLI was started: a ``ClaudeSDKClient`` connected before ``async with
        oh.operation(..., hooks=[guard])`` began runs every turn outside it, and the guard
        never runs. Which
        operation the SDK serves cannot be told from here (another runtime's run may be open
        too), so this warns and does not refuse."""
        version = self._registry.version
        if version == self._unseen_at:
            return
        self._unseen_at = version
        scopes = [s for s in self._registry.operation_ids() if ("unseen", s) not in self._warned]
        skip = set(known()) if scopes else set()
        for scope in scopes:
            if scope in skip:
                continue
            hooks = [h for h in self._registry.hooks(operation_id=scope) if h.mode != "disabled"]
            if not hooks:
                continue
            self._warned.add(("unseen", scope))
            warnings.warn(
                f"hooks_for: the Claude Agent SDK's callbacks run outside the operation {scope}, "
                f"so its hooks do not see this SDK session: {', '.join(h.id for h in hooks)}. "
                "Start the SDK inside it (query(...), or ClaudeSDKClient.connect() / async with "
                "ClaudeSDKClient(...), within the operation's with), or register them with "
                "oh.register",
                UndeliveredHookWarning,
                stacklevel=2,
            )

    def ended(self, operation: Any) -> None:
        """For a callback that runs in ``operation`` (an :class:`~otelhooks.Operation`) after it
        ended: warn (once per operation) when it was given hooks. They ended with it, so they do
        not see the SDK session (a ``ClaudeSDKClient`` connected inside the operation and used
        after its ``with``)."""
        key = ("ended", str(operation.operation_id))
        given = [
            h.get("id", "?") if isinstance(h, dict) else getattr(h, "id", "?")
            for h in operation.hooks
        ]
        if not given or key in self._warned:
            return
        self._warned.add(key)
        warnings.warn(
            f"hooks_for: the Claude Agent SDK's callbacks run in the operation "
            f"{operation.operation_id}, which has ended: the hooks it was given do not see this "
            f"SDK session: {', '.join(map(str, given))}. Use the SDK inside the operation's "
            "with (connect the client, and close it, within it), or register them with "
            "oh.register",
            UndeliveredHookWarning,
            stacklevel=2,
        )
