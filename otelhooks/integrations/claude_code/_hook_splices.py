"""Our hook entries spliced into and out of a settings file's text (see :mod:`._json_text`).

:func:`replace_ours` removes the handlers a predicate recognises, then the groups, events and
the ``hooks`` object they leave empty (never one that was empty before), and appends one matcher
group per event, creating the event and ``hooks`` as needed, all from one parse of the text (a
13 MB file was parsed up to eight times an install). :func:`strip_ours` is the removal alone.
Kept text is copied verbatim, so removing what was added gives back the earlier bytes: an event
list that was empty (``"BeforeTool": []``) gets our group without a line break before its
closing bracket (:func:`._json_text.fill_empty`), so uninstall knows to leave it, empty.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from otelhooks.integrations.claude_code._json_text import (
    Node,
    apply,
    fill_empty,
    parse,
    rebuild,
    unfilled,
)

__all__ = ["Ours", "add_groups", "replace_ours", "strip_ours"]

Ours = Callable[[Any], bool]


def _handler_value(text: str, node: Node) -> Any:
    return json.loads(text[node.start : node.end]) if node.kind == "object" else None


def _render(text: str, node: Node, splice: tuple[int, int, str]) -> str:
    """``node``'s text with one splice inside it applied."""
    start, end, replacement = splice
    return text[node.start : start] + replacement + text[end : node.end]


def _group(text: str, group: Node, ours: Ours) -> tuple[bool, bool, str | None]:
    """Whether the group holds only ours, any of ours, and its text without ours when it holds
    someone else's too (``None``: unchanged)."""
    handlers = group.get("hooks") if group.kind == "object" else None
    if handlers is None or handlers.kind != "array" or not handlers.items:
        return False, False, None
    mine = [ours(_handler_value(text, h)) for h in handlers.items]
    if all(mine):
        return True, True, None
    if not any(mine):
        return False, False, None
    return False, True, _render(text, group, rebuild(text, handlers, [not m for m in mine], []))


def _event(
    text: str, array: Node, ours: Ours, new: dict[str, Any] | None
) -> tuple[str | None, bool, bool]:
    """One event's list: its new text (``None``: unchanged), whether it held ours, and whether
    it goes (it held only ours, and install did not find it empty)."""
    if not array.items:
        return (None if new is None else fill_empty(text, array, new)), False, False
    found = [_group(text, group, ours) for group in array.items]
    touched = any(any_ours for _, any_ours, _ in found)
    if all(only for only, _, _ in found):
        before = unfilled(text, array)
        if before is None:
            if new is None:
                return None, touched, True
        else:  # install filled an empty list: it is given back, or filled again
            filled = None if new is None else fill_empty(text, array, new, before[1:-1])
            return (before if filled is None else filled), touched, False
    if not touched and new is None:
        return None, False, False
    keep = [not only for only, _, _ in found]
    texts = [changed for _, _, changed in found]
    return (
        _render(text, array, rebuild(text, array, keep, [new] if new else [], texts)),
        True,
        False,
    )


def replace_ours(
    text: str,
    path: Path,
    ours: Ours,
    groups: dict[str, dict[str, Any]],
    root: Node | None = None,
) -> tuple[str, list[str]]:
    """``text`` without the handlers ``ours`` recognises (and the groups, events and ``hooks``
    object they leave empty), with one of ``groups`` appended per event; also the events that
    held ours. ``root`` is ``text`` already parsed."""
    root = parse(text) if root is None else root
    hooks = root.get("hooks")
    if hooks is None:
        if not groups:
            return text, []
        fresh = {event: [group] for event, group in groups.items()}
        return apply(
            text, [rebuild(text, root, [True] * len(root.members), [("hooks", fresh)])]
        ), []
    if hooks.kind != "object":
        raise ValueError(f"{path}: 'hooks' is not an object")
    removed: list[str] = []
    keep: list[bool] = []
    texts: list[str | None] = []
    for member in hooks.members:
        new = groups.get(member.key)
        if member.value.kind != "array":
            if new is not None:
                raise ValueError(f"{path}: hooks.{member.key} is not a list")
            keep.append(True)
            texts.append(None)
            continue
        changed, touched, gone = _event(text, member.value, ours, new)
        removed += [member.key] if touched else []
        keep.append(not gone)
        texts.append(None if changed is None else text[member.start : member.value.start] + changed)
    known = {m.key for m in hooks.members}
    fresh_events = [(event, [group]) for event, group in groups.items() if event not in known]
    if all(keep) and not fresh_events and all(t is None for t in texts):
        return text, removed
    if not any(keep) and not fresh_events:  # we emptied the hooks object: the member goes too
        return apply(text, [rebuild(text, root, [m.key != "hooks" for m in root.members], [])]), (
            removed
        )
    return apply(text, [rebuild(text, hooks, keep, fresh_events, texts)]), removed


def strip_ours(
    text: str, path: Path, ours: Ours, root: Node | None = None
) -> tuple[str, list[str]]:
    """``text`` without the handlers ``ours`` recognises, and without the groups, events and
    ``hooks`` object they leave empty; also the events touched."""
    return replace_ours(text, path, ours, {}, root)


def add_groups(text: str, path: Path, groups: dict[str, dict[str, Any]]) -> str:
    """``text`` with one group appended per event (events and ``hooks`` created as needed)."""
    return replace_ours(text, path, lambda _handler: False, groups)[0]
