"""Loading hooks from files: otelhooks / LobeHub-style hook lists in JSON or YAML.

A file holds a list of hooks, or ``{"hooks": [...]}``. Each hook has the shape of
:class:`~otelhooks.Hook`; ``handler`` is an import path ``package.module:function``. Every
problem raises one :class:`~otelhooks.ConfigError` naming the file, the hook, the field and
(for syntax errors) the line, and nothing from a bad file is registered.

Example file (``hooks.yaml``)::

    hooks:
      - id: audit-tools
        type: afterToolCall
        matcher: "^fs/"
        handler: my_package.hooks:audit
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from otelhooks._errors import ConfigError
from otelhooks._hooks import Hook, coerce_hook

__all__ = ["import_handler", "load_hook_files", "load_hooks"]


def import_handler(path: str) -> Callable[..., Any]:
    """Import ``package.module:function`` (``:`` or the last ``.`` separates the attribute)."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(f"handler {path!r} is not an import path like 'pkg.module:function'")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import module {module_name!r}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ConfigError(f"module {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise ConfigError(f"handler {path!r} is not callable")
    return target  # type: ignore[no-any-return]


def _parse(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        try:
            return yaml.safe_load(text)
        except yaml.MarkedYAMLError as exc:
            line = exc.problem_mark.line + 1 if exc.problem_mark else None
            raise ConfigError(f"invalid YAML: {exc.problem}", file=str(path), line=line) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc.msg}", file=str(path), line=exc.lineno) from None


def load_hooks(path: str | Path) -> list[Hook]:
    """Load and validate every hook in one file (all or nothing)."""
    path = Path(path)
    try:
        data = _parse(path)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", file=str(path)) from None
    entries = data.get("hooks") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ConfigError("expected a list of hooks or {'hooks': [...]}", file=str(path))
    hooks: list[Hook] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ConfigError(
                "each hook must be an object", file=str(path), field=f"hooks[{index}]"
            )
        hook_id = entry.get("id") if isinstance(entry.get("id"), str) else f"hooks[{index}]"
        item = dict(entry)
        try:
            if isinstance(item.get("handler"), str):
                item["handler"] = import_handler(item["handler"])
            hook = coerce_hook(item)
        except ConfigError as exc:
            if exc.field is None and "handler" in entry:
                exc.field = "handler"
            raise exc.located(file=str(path), hook_id=hook_id) from None
        if hook.id in seen:
            raise ConfigError("duplicate hook id", file=str(path), hook_id=hook.id, field="id")
        seen.add(hook.id)
        hooks.append(hook)
    return hooks


def load_hook_files(paths: Iterable[str | Path]) -> list[Hook]:
    """Load several files; ids must be unique across all of them."""
    hooks: list[Hook] = []
    seen: dict[str, str] = {}
    for path in paths:
        for hook in load_hooks(path):
            if hook.id in seen:
                raise ConfigError(
                    f"duplicate hook id (also in {seen[hook.id]})",
                    file=str(path),
                    hook_id=hook.id,
                    field="id",
                )
            seen[hook.id] = str(path)
            hooks.append(hook)
    return hooks
