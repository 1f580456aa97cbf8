"""otelhooks / LobeHub-style hook lists in JSON or YAML.

A file holds a list of hooks, or ``{"hooks": [...]}``. Each hook has the shape of
:class:`~otelhooks.Hook` (LobeHub's ``AgentHook``: ``id``, ``type``, ``matcher``, ``webhook``,
plus otelhooks' ``handler``, ``command``, ``script``, ``plugin``, ...). ``handler`` is an import
path ``package.module:function`` (a module beside the file imports too); ``script`` is
``file.py:function`` relative to the file's folder;
``webhook`` passes through as written (camelCase LobeHub keys included) to the webhook action,
which validates it strictly.

Example file (``hooks.yaml``)::

    hooks:
      - id: audit-tools
        type: afterToolCall
        matcher: "^fs/"
        handler: my_package.hooks:audit
      - id: notify
        type: onComplete
        webhook: {url: "https://example.com/hook", allowedEnvVars: [TOKEN],
                  headers: {Authorization: "Bearer ${TOKEN}"}}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from otelhooks._config._build import absolute_script, build_hook, import_handler
from otelhooks._config._parse import Document, Loc
from otelhooks._errors import ConfigError
from otelhooks._hooks import Hook

__all__ = ["hook_entries", "import_handler", "load_hook_list"]


def hook_entries(
    doc: Document,
    entries: Any,
    base: Loc,
    errors: list[ConfigError],
    *,
    adjust: Callable[[dict[str, Any]], None] | None = None,
) -> list[Hook]:
    """Build every hook of a list at ``base`` in ``doc``; problems go to ``errors``."""
    if not isinstance(entries, list):
        errors.append(doc.error("expected a list of hooks", base, field=".".join(map(str, base))))
        return []
    hooks: list[Hook] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        loc = (*base, index)
        if not isinstance(entry, dict):
            errors.append(doc.error("each hook must be an object", loc, field=f"hooks[{index}]"))
            continue
        raw_id = entry.get("id")
        hook_id = raw_id if isinstance(raw_id, str) and raw_id else f"hooks[{index}]"

        def prepare(item: dict[str, Any]) -> None:
            if isinstance(item.get("handler"), str):
                try:
                    item["handler"] = import_handler(item["handler"], beside=doc.path.parent)
                except ConfigError as exc:
                    exc.field = exc.field or "handler"
                    raise
            if "script" in item:
                item["script"] = absolute_script(item["script"], doc.path.parent)
            if adjust is not None:
                adjust(item)

        hook = build_hook(doc, entry, loc, hook_id=hook_id, errors=errors, prepare=prepare)
        if hook is None:
            continue
        if hook.id in seen:
            errors.append(doc.error("duplicate hook id", (*loc, "id"), hook_id=hook.id, field="id"))
            continue
        seen.add(hook.id)
        hooks.append(hook)
    return hooks


def load_hook_list(doc: Document, errors: list[ConfigError]) -> list[Hook]:
    """The hooks of a list document (a list, or ``{"hooks": [...]}``)."""
    data = doc.data
    if isinstance(data, list):
        return hook_entries(doc, data, (), errors)
    if isinstance(data, dict):
        unknown = [k for k in data if k != "hooks"]
        for key in unknown:
            errors.append(doc.error("unknown key; a hook list file has 'hooks'", (key,), field=key))
        return hook_entries(doc, data.get("hooks"), ("hooks",), errors)
    errors.append(doc.error("expected a list of hooks or {'hooks': [...]}"))
    return []
