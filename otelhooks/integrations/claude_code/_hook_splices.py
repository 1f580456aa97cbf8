"""Our hook entries spliced into and out of a settings file's text (see :mod:`._json_text`).

:func:`strip_ours` removes the handlers a predicate recognises, then the groups, events and the
``hooks`` object they leave empty (never one that was empty before); :func:`add_groups` appends
one matcher group per event, creating the event and ``hooks`` as needed. Kept text is copied
verbatim, so removing what :func:`add_groups` added gives back the earlier bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from otelhooks.integrations.claude_code._json_text import Node, apply, parse, rebuild

__all__ = ["Ours", "add_groups", "strip_ours"]

Ours = Callable[[Any], bool]


def _handler_value(text: str, node: Node) -> Any:
    return json.loads(text[node.start : node.end]) if node.kind == "object" else None


def _strip_handlers(text: str, hooks: Node, ours: Ours) -> list[tuple[int, int, str]]:
    """Splices removing our handlers from groups that also hold someone else's."""
    splices = []
    for member in hooks.members:
        for group in member.value.items if member.value.kind == "array" else ():
            handlers = group.get("hooks") if group.kind == "object" else None
            if handlers is None or handlers.kind != "array":
                continue
            mine = [ours(_handler_value(text, h)) for h in handlers.items]
            if any(mine) and not all(mine):
                splices.append(rebuild(text, handlers, [not o for o in mine], []))
    return splices


def _ours_only(text: str, group: Node, ours: Ours) -> bool:
    handlers = group.get("hooks") if group.kind == "object" else None
    if handlers is None or handlers.kind != "array" or not handlers.items:
        return False
    return all(ours(_handler_value(text, h)) for h in handlers.items)


def _touched(text: str, hooks: Node, ours: Ours) -> list[str]:
    """The events holding any handler of ours."""
    touched = []
    for member in hooks.members:
        for group in member.value.items if member.value.kind == "array" else ():
            handlers = group.get("hooks") if group.kind == "object" else None
            if handlers is not None and any(ours(_handler_value(text, h)) for h in handlers.items):
                touched.append(member.key)
                break
    return touched


def strip_ours(text: str, path: Path, ours: Ours) -> tuple[str, list[str]]:
    """``text`` without the handlers ``ours`` recognises, and without the groups, events and
    ``hooks`` object they leave empty; also the events touched."""
    root = parse(text)
    hooks = root.get("hooks")
    if hooks is None:
        return text, []
    if hooks.kind != "object":
        raise ValueError(f"{path}: 'hooks' is not an object")
    removed = _touched(text, hooks, ours)
    if not removed:
        return text, []
    text = apply(text, _strip_handlers(text, hooks, ours))
    hooks = _hooks(text)
    emptied: set[str] = set()
    splices = []
    for member in hooks.members:
        if member.value.kind != "array" or not member.value.items:
            continue
        keep = [not _ours_only(text, group, ours) for group in member.value.items]
        if not any(keep):
            emptied.add(member.key)
        elif not all(keep):
            splices.append(rebuild(text, member.value, keep, []))
    text = apply(text, splices)
    if emptied:
        root = parse(text)
        hooks = _hooks(text)
        keep_events = [m.key not in emptied for m in hooks.members]
        if any(keep_events):
            text = apply(text, [rebuild(text, hooks, keep_events, [])])
        else:  # we emptied the hooks object: the member goes too
            text = apply(text, [rebuild(text, root, [m.key != "hooks" for m in root.members], [])])
    return text, removed


def _hooks(text: str) -> Node:
    hooks = parse(text).get("hooks")
    assert hooks is not None
    return hooks


def add_groups(text: str, path: Path, groups: dict[str, dict[str, Any]]) -> str:
    """``text`` with one group appended per event (events and ``hooks`` created as needed)."""
    if not groups:
        return text
    root = parse(text)
    hooks = root.get("hooks")
    if hooks is None:
        fresh = {event: [group] for event, group in groups.items()}
        return apply(text, [rebuild(text, root, [True] * len(root.members), [("hooks", fresh)])])
    splices = []
    for member in hooks.members:
        group = groups.get(member.key)
        if group is None:
            continue
        if member.value.kind != "array":
            raise ValueError(f"{path}: hooks.{member.key} is not a list")
        splices.append(rebuild(text, member.value, [True] * len(member.value.items), [group]))
    text = apply(text, splices)
    known = {m.key for m in hooks.members}
    new = [(event, [group]) for event, group in groups.items() if event not in known]
    if new:
        hooks = _hooks(text)
        text = apply(text, [rebuild(text, hooks, [True] * len(hooks.members), new)])
    return text
