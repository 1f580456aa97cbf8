"""What a hook's returned value makes of the payload (rule 2 of
:mod:`otelhooks._dispatch._chain`): a rewrite validated as the payload's own model, whatever shape
it came in, or the text of what is wrong with it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from otelhooks._events import HookEvent

__all__ = ["rewrite"]


def rewrite(payload: HookEvent, result: Any) -> HookEvent | str:
    """The payload ``result`` makes, validated: a model changed by ``model_copy(update=...)``
    or an assignment was not (its ``42`` where text goes reached the runtime), or what is
    wrong with it. A dict or a model naming a field the payload has not (``{"text": ...}`` for
    a message's ``content``) is wrong: the runtime would go on as if nothing was rewritten."""
    model = type(payload)
    dumped = payload.model_dump(by_alias=True, warnings=False)
    if result is payload:
        update: dict[str, Any] = {}  # changed in place: its dump is ``dumped``, dumped once
    elif isinstance(result, model):
        update = result.model_dump(by_alias=True, warnings=False)
    elif isinstance(result, Mapping):
        update = dict(result)
    else:
        return f"returned {type(result).__name__}, which is not a payload"
    # A model too: a subclass's own field or an extra one set on a copy (``model_copy(update=
    # {"text": ...})``) validated as an extra of the payload, which the runtime never reads.
    unknown = [str(k) for k in update if k not in dumped and k not in model.model_fields]
    if unknown:
        return f"rewrote {', '.join(unknown)}, which {payload.event} has no field for"
    _reconcile_twins(payload, update)
    fields = {**dumped, **update}
    if "toolInput" in fields and fields["toolInput"] == fields["args"]:
        # one object under both names, as a runtime's payload has: an in-place change of
        # either is a change of the args the runtime runs
        del fields["toolInput"]
    try:
        return model.model_validate(fields)
    except ValidationError:
        return f"returned {type(result).__name__}, which is not a payload"


# Fields two dialects name differently, the kernel's first: LobeHub calls a tool's arguments
# ``args``, the kernel ``toolInput``; the workspace engine (and Claude Code) calls the prompt
# ``userMessage``, the kernel ``input``.
_TWIN_FIELDS: dict[str, tuple[str, str]] = {
    "before_tool_call": ("toolInput", "args"),
    "before_agent_start": ("input", "userMessage"),
}


def _reconcile_twins(payload: HookEvent, update: dict[str, Any]) -> None:
    """Whichever of two twin fields the handler changed wins, and the other follows it (a kernel
    handler typically returns the whole payload with only ``toolInput`` changed); the runtime
    reads one of them. A wrong type in either fails validation: it is never dropped."""
    twins = _TWIN_FIELDS.get(payload.event)
    if twins is None:
        return
    kernel, other = twins
    new_kernel = update.get(kernel, getattr(payload, kernel))
    new_other = update.get(other, getattr(payload, other))
    if new_kernel != getattr(payload, kernel):
        update[other] = new_kernel
    elif new_other != getattr(payload, other):
        update[kernel] = new_other
