"""Every lifecycle event model and payload type, for typed hook handlers.

Each canonical event (see :data:`EVENTS`) has one pydantic model; a handler receives it and may
return a changed copy (a rewrite), :class:`~otelhooks.Block`, or ``None``.

Example:
    >>> from otelhooks import Block
    >>> from otelhooks.events import MessageSendingEvent
    >>> def no_secrets(event: MessageSendingEvent) -> Block | None:
    ...     return Block("looks like a key") if "sk-" in event.content else None
"""

from otelhooks._events import *  # noqa: F403
from otelhooks._events import __all__ as _names
from otelhooks._hook_step import HookStep
from otelhooks._live import Verdict

__all__ = [*_names, "HookStep", "Verdict"]
