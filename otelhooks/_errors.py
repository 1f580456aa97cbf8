"""The otelhooks exception tree.

::

    OtelHooksError
    ├── ConfigError            bad hook definition or config file: names file, hook and field
    │   ├── UnknownEventError  an event name no dialect knows (lists the valid ones)
    │   └── InvalidMatcherError
    ├── HookError              a hook failed while it ran (carries the hook id and event)
    │   ├── HookTimeoutError
    │   ├── HookCapacityError  too many calls of this hook are stuck past their deadline
    │   │                      (``HookPoolExhaustedError`` is its old name)
    │   └── CriticalHookDeliveryError  raised once, after sibling hooks ran, for ``fallback: none``
    ├── ControlProtocolError   a control webhook answered outside the protocol (error class)
    ├── DeadlinePassed         the engine's own deadline for one hook passed (never escapes it)
    ├── ToolDenied             a hook denied a call of an ``@otelhooks.tool`` function (reason)
    ├── BudgetExceeded         a budget guard refused a model call: its operation or session
    │                          passed the limit (reason, scope, limit, spent)
    └── EventLogError          an event log request failed (``otelhooks.EventLogClient``)

Hooks failing is normal operation: dispatch records it on the span and in the
``otelhooks.hook.invocations`` metric and goes on. Only ``CriticalHookDeliveryError`` is raised
to the caller, because a ``fallback: none`` hook asked for exactly that.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from otelhooks._redact import scrub

__all__ = [
    "BudgetExceeded",
    "ConfigError",
    "ControlProtocolError",
    "CriticalHookDeliveryError",
    "DeadlinePassed",
    "HookCapacityError",
    "HookError",
    "HookPoolExhaustedError",
    "HookTimeoutError",
    "InvalidMatcherError",
    "OtelHooksError",
    "RunBlockedError",
    "ToolDenied",
    "UnknownEventError",
    "unknown_field",
]


class OtelHooksError(Exception):
    """Base of every error otelhooks raises."""


def unknown_field(name: str, known: Iterable[str]) -> str:
    """The problem of an unknown field, with the closest known name: one rule for config files
    (``otelhooks validate``) and the Python API (``Hook(matchr=...)``)."""
    known = list(known)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else f"known fields: {', '.join(known)}"
    return f"unknown field; {hint}"


class ConfigError(OtelHooksError, ValueError):
    """A hook definition or config file is invalid.

    Attributes:
        problem: what is wrong, in one sentence.
        file: the config file, when the hook came from one.
        hook_id: the hook concerned, when known.
        field: the offending field (dotted path), when known.
        line: the line in ``file``, when the format has lines.
    """

    def __init__(
        self,
        problem: str,
        *,
        file: str | None = None,
        hook_id: str | None = None,
        field: str | None = None,
        line: int | None = None,
    ) -> None:
        self.problem = problem
        self.file = file
        self.hook_id = hook_id
        self.field = field
        self.line = line
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.file:
            where.append(f"{self.file}:{self.line}" if self.line else self.file)
        if self.hook_id:
            where.append(f"hook {self.hook_id!r}")
        if self.field:
            where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.problem}" if where else self.problem

    def located(
        self, *, file: str | None = None, hook_id: str | None = None, line: int | None = None
    ) -> ConfigError:
        """Fill in location facts the raiser did not know (keeps the ones it did)."""
        self.file = self.file or file
        self.hook_id = self.hook_id or hook_id
        self.line = self.line or line
        self.args = (self._render(),)
        return self


class UnknownEventError(ConfigError):
    """An event name that neither otelhooks nor any dialect defines.

    The message names the closest valid name when there is one, and then not the full list
    (``valid``; ``otelhooks events`` prints the table); a name close to none gets the list.
    """

    def __init__(self, name: str, *, suggestion: str | None, valid: Sequence[str]) -> None:
        self.name = name
        self.suggestion = suggestion
        self.valid = tuple(valid)
        # A typo gets its correction only; a name like nothing known gets the whole list.
        hint = (
            f"Did you mean {suggestion!r}? (`otelhooks events` lists every name)"
            if suggestion
            else f"Valid names: {', '.join(self.valid)}"
        )
        super().__init__(f"unknown event {name!r}. {hint}", field="type")


class InvalidMatcherError(ConfigError):
    """A matcher that cannot be compiled in a dialect with no fallback."""


class HookError(OtelHooksError):
    """A hook failed while running. Carries the hook id and the event it ran for.

    Known secrets in ``message`` (a command's stderr, say) are replaced by ``[REDACTED]``: the
    message ends up in logs and on spans.
    """

    def __init__(self, message: str, *, hook_id: str, event: str) -> None:
        self.hook_id = hook_id
        self.event = event
        super().__init__(scrub(f"hook {hook_id!r} on {event}: {message}"))


class HookTimeoutError(HookError):
    """A hook ran past its timeout; its result (if any) is ignored."""


class HookCapacityError(HookError):
    """Too many calls of this hook are stuck past their deadline to start another one.

    Counted per hook: one hook stuck on a slow endpoint or a hung function never takes the
    capacity of another (a local guard keeps running). It is a hook failure like any other:
    the hook's ``on_error`` decides what it means.
    """


class CriticalHookDeliveryError(HookError):
    """One or more ``fallback: none`` hooks failed. Raised after all sibling hooks ran."""

    def __init__(self, failures: Sequence[HookError], *, event: str) -> None:
        self.failures = tuple(failures)
        ids = ", ".join(f.hook_id for f in self.failures)
        super().__init__(f"critical delivery failed for {ids}", hook_id=ids, event=event)


class ControlProtocolError(OtelHooksError):
    """A control webhook did not answer with a valid decision. ``error_class`` says how
    (``http_error``, ``invalid_response``, ``timeout``, ...); the chain then follows the hook's
    ``onError``."""

    def __init__(self, error_class: str, message: str) -> None:
        self.error_class = error_class
        super().__init__(f"{error_class}: {message}")


class DeadlinePassed(OtelHooksError):
    """A hook ran past the deadline the engine gave it (distinct from a ``TimeoutError`` the
    hook raised itself); recorded as a ``timeout`` outcome, never raised to the caller."""


class ToolDenied(OtelHooksError):
    """A hook denied a call of an ``@otelhooks.tool`` function (the function did not run), or
    a ``tool_result_persist`` hook blocked what it returned (it ran; its result is withheld).

    Agent frameworks treat an exception from a tool as the tool's error and show its message
    to the model, so the reason reaches the model as a denial would.

    Attributes:
        reason: what the deciding hook said.
        tool: the tool as matchers see it (``identifier/name``, or ``name``).
        decided_by: the id of the hook that denied it.
    """

    def __init__(self, reason: str, *, tool: str, decided_by: str | None = None) -> None:
        self.reason = reason
        self.tool = tool
        self.decided_by = decided_by
        super().__init__(f"tool call {tool} denied: {reason}" if reason else f"{tool} denied")


class RunBlockedError(OtelHooksError):
    """A ``before_agent_start`` hook refused the run: the agent never ran (the Agents SDK was
    never called; the graph, chain, model or tool never started).

    Attributes:
        reason: the hook's reason.
    """

    def __init__(self, reason: str | None) -> None:
        super().__init__(reason or "the run was blocked by a before_agent_start hook")
        self.reason = reason


class BudgetExceeded(OtelHooksError):
    """A budget guard refused a model call: its operation or session passed the limit.

    Raised where the model call starts (an otelhooks ``step.llm()``, or the SDK call an
    instrumented OpenAI or Anthropic client makes), before any request is sent.

    Attributes:
        reason: the guard's explanation (``operation cost $0.52 passed its limit $0.50``).
        scope: the limit that was passed: ``operation``, ``session``, ``operation_tokens`` or
            ``session_tokens``.
        limit, spent: the limit and the total that passed it (dollars or tokens).
        hook_id: the budget guard's hook id.
    """

    def __init__(
        self, reason: str, *, scope: str, limit: float, spent: float, hook_id: str
    ) -> None:
        self.reason = reason
        self.scope = scope
        self.limit = limit
        self.spent = spent
        self.hook_id = hook_id
        super().__init__(reason)


# The name of earlier releases: capacity is counted per hook now, not per pool.
HookPoolExhaustedError = HookCapacityError
