"""Details an action can leave for whoever asked to see them (``otelhooks hooks test``).

A command's exit code and output do not belong in the handler return protocol, yet a person
testing a hook wants them. An action calls :func:`note`; it costs one context-variable read
unless a caller is :func:`collecting`, and the notes follow the call onto the engine's pool
threads because the dispatcher runs handlers in a copy of the caller's context.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["collecting", "note"]

_sink: ContextVar[list[tuple[str, object]] | None] = ContextVar("otelhooks_notes", default=None)


@contextmanager
def collecting() -> Iterator[list[tuple[str, object]]]:
    """Collect ``(hook id, detail)`` notes left by actions run inside the block."""
    notes: list[tuple[str, object]] = []
    token = _sink.set(notes)
    try:
        yield notes
    finally:
        _sink.reset(token)


def note(hook_id: str, detail: object) -> None:
    """Leave ``detail`` for a collecting caller (dropped when nobody collects)."""
    sink = _sink.get()
    if sink is not None:
        sink.append((hook_id, detail))
