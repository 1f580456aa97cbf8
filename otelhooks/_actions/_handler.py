"""The Python handler action: the function itself."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["HandlerAction"]


class HandlerAction:
    """Calls a sync or async Python callable with the payload."""

    kind = "handler"
    concurrent = False
    # The payload object reaches Python code otelhooks does not own, which may change it in
    # place (a script's and a plugin's function too): the chain watches its rewritable field.
    hands_payload = True

    __slots__ = ("fn", "is_async")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
        )

    def __call__(self, payload: Any) -> Any:
        return self.fn(payload)

    @property
    def direct(self) -> Callable[[Any], Any]:
        """What a call of this action calls: the function itself, for a caller that would
        rather skip this wrapper's frame (the observer worker); the action for a subclass that
        calls something else."""
        return self.fn if type(self).__call__ is HandlerAction.__call__ else self
