"""A kernel app: its manifest and the hooks it governs, in one file.

The kernel's manifest declares which events an app subscribes to and which it intercepts; the
app's hooks sit beside it, as a hook list (the :mod:`._native` shape)::

    {
      "name": "moderation",
      "capabilities": {
        "hooks": {
          "subscribes": ["message_received", "agent_end"],
          "intercepts": ["message_sending", "before_tool_call"]
        }
      },
      "hooks": [
        {"id": "no-shouting", "type": "message_sending", "script": "hooks.py:lower_case"},
        {"id": "no-rm", "type": "before_tool_call", "command": ["./deny-rm.sh"]},
        {"id": "count-runs", "type": "agent_end", "handler": "my_app.hooks:count"}
      ]
    }

Rules:

- A hook on an interceptable event needs that event in ``intercepts``; a hook on any other event
  needs it in ``subscribes``. Otherwise the whole app is refused at load time. (In otelhooks every
  hook on an interceptable event runs as an interceptor, so subscribing is not enough there.)
- ``intercepts`` may only name interceptable events (``before_agent_start``,
  ``before_tool_call``, ``message_sending``, ``tool_result_persist``); names may be any
  dialect's.
- The kernel's intercept contract applies to the app's Python hooks (``handler``, ``script``,
  ``plugin``) on interceptable events: return the (changed) data, or ``None`` to block — unless a
  hook sets ``intercept`` itself. Command hooks keep the command rules.
- Other manifest keys (``id``, ``version``, other capabilities) are the kernel's business and are
  left alone; ``capabilities.hooks`` itself accepts only ``subscribes`` and ``intercepts``.
"""

from __future__ import annotations

from typing import Any, Final

from otelhooks._config._native import hook_entries
from otelhooks._config._parse import Document
from otelhooks._errors import ConfigError
from otelhooks._events import EventSpec, resolve_event
from otelhooks._hooks import Hook

__all__ = ["load_kernel_app"]

_DECLARATIONS: Final = ("subscribes", "intercepts")
_PYTHON_ACTIONS: Final = ("handler", "script", "plugin")


def _declared(doc: Document, errors: list[ConfigError]) -> dict[str, set[str]] | None:
    caps = doc.data.get("capabilities")
    if not isinstance(caps, dict) or not isinstance(caps.get("hooks"), dict):
        errors.append(
            doc.error(
                "capabilities.hooks must be an object with subscribes and intercepts",
                ("capabilities",),
                field="capabilities.hooks",
            )
        )
        return None
    block = caps["hooks"]
    declared: dict[str, set[str]] = {name: set() for name in _DECLARATIONS}
    for key, names in block.items():
        loc = ("capabilities", "hooks", key)
        if key not in _DECLARATIONS:
            errors.append(
                doc.error(
                    "unknown key; capabilities.hooks has subscribes and intercepts",
                    loc,
                    field=f"capabilities.hooks.{key}",
                )
            )
            continue
        if not isinstance(names, list):
            errors.append(doc.error("must be a list of event names", loc, field=".".join(loc)))
            continue
        for index, name in enumerate(names):
            where = (*loc, index)
            field = f"capabilities.hooks.{key}[{index}]"
            try:
                spec, _ = resolve_event(str(name))
            except ConfigError as exc:
                errors.append(doc.error(exc.problem, where, field=field))
                continue
            if key == "intercepts" and not spec.intercept:
                errors.append(
                    doc.error(
                        f"{name} cannot be intercepted; declare it in subscribes",
                        where,
                        field=field,
                    )
                )
                continue
            declared[key].add(spec.name)
    return declared


def _refusal(spec: EventSpec, declared: dict[str, set[str]]) -> str | None:
    if spec.intercept and spec.name not in declared["intercepts"]:
        return (
            f"the app intercepts {spec.name}, which its manifest does not declare in "
            "capabilities.hooks.intercepts"
        )
    if not spec.intercept and spec.name not in declared["subscribes"]:
        return (
            f"the app subscribes to {spec.name}, which its manifest does not declare in "
            "capabilities.hooks.subscribes"
        )
    return None


def _kernel_contract(item: dict[str, Any]) -> None:
    if "intercept" in item or not any(item.get(k) is not None for k in _PYTHON_ACTIONS):
        return
    try:
        spec, _ = resolve_event(str(item.get("type")))
    except ConfigError:
        return  # the Hook reports the unknown name
    if spec.intercept:
        item["intercept"] = True


def load_kernel_app(doc: Document, errors: list[ConfigError]) -> list[Hook]:
    """The hooks of one app file, refused as a whole if one is not declared by the manifest."""
    declared = _declared(doc, errors)
    entries = doc.data.get("hooks", [])
    before = len(errors)
    hooks = hook_entries(doc, entries, ("hooks",), errors, adjust=_kernel_contract)
    if declared is None:
        return []
    position = {
        e["id"]: i
        for i, e in enumerate(entries)
        if isinstance(e, dict) and isinstance(e.get("id"), str)
    }
    refused = False
    for hook in hooks:
        problem = _refusal(hook.spec, declared)
        if problem is not None:
            refused = True
            loc = ("hooks", position.get(hook.id, 0), "type")
            errors.append(doc.error(problem, loc, hook_id=hook.id, field="type"))
    return [] if refused or len(errors) > before else hooks
