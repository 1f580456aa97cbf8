"""What one intercept hook did in a chain: the record a :class:`~otelhooks._live.Verdict` lists,
and which each hook's :class:`~otelhooks._hooks.HookFacts` makes once per outcome."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HookStep"]


@dataclass(slots=True, frozen=True)
class HookStep:
    """What one intercept hook did in a chain.

    Attributes:
        hook_id, kind: the hook and its action kind (``handler``, ``command``, ``webhook``...).
        outcome: ``ok``, ``rewritten``, ``blocked``, ``mocked``, ``error`` or ``timeout``.
        error: the problem, for ``error`` and ``timeout`` (known secrets scrubbed).
        permissive: for a hook in ``mode: permissive``, what it would have done, never done
            (``deny: reason``, ``ask: reason``, ``mock``, ``rewrite``, ``allow``, ``error``);
            None for a hook that enforces.
    """

    hook_id: str
    kind: str
    outcome: str
    error: str | None = None
    permissive: str | None = None
