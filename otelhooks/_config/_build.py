"""Building hooks from config entries: where any failure becomes a located ConfigError."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from otelhooks._actions import build_hook as bind_hook
from otelhooks._config._parse import Document, Loc
from otelhooks._errors import ConfigError
from otelhooks._hooks import Hook

__all__ = ["absolute_script", "build_hook", "import_handler", "problem_from"]


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
    except (Exception, SystemExit) as exc:
        raise ConfigError(
            f"importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ConfigError(f"module {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise ConfigError(f"handler {path!r} is not callable")
    return target  # type: ignore[no-any-return]


def absolute_script(ref: Any, base_dir: Path) -> Any:
    """Resolve the file part of ``path.py:function`` against ``base_dir`` (the config's folder)."""
    if not isinstance(ref, str):
        return ref
    path, sep, function = ref.rpartition(":")
    if not sep or not path:
        return ref
    file = Path(path).expanduser()
    if file.is_absolute() or (len(path) == 1 and path.isalpha()):
        return ref  # absolute, or a bare Windows drive letter: nothing to resolve
    return f"{base_dir / file}:{function}"


def problem_from(exc: BaseException) -> ConfigError:
    """Any error raised while building a hook, as a ConfigError (translated here, once)."""
    if isinstance(exc, ConfigError):
        return exc
    return ConfigError(f"{type(exc).__name__}: {exc}")


def build_hook(
    doc: Document,
    entry: Mapping[str, Any],
    loc: Loc,
    *,
    hook_id: str | None,
    field_map: Mapping[str, str] | None = None,
    event_loc: Loc | None = None,
    errors: list[ConfigError],
    prepare: Callable[[dict[str, Any]], None] | None = None,
) -> Hook | None:
    """Validate one hook; on failure record a ConfigError located in ``doc`` and return None.

    Args:
        entry: the :class:`~otelhooks.Hook` fields.
        loc: where the entry is in the document.
        field_map: Hook field (dotted, or its first part) → the entry's own key, for formats
            that name fields differently; fields not in it keep their name.
        event_loc: where the event name is, when it is not the entry's ``type`` key.
        prepare: called with a copy of ``entry`` before validation (resolving import paths);
            its ConfigErrors are located like the Hook's own.
    """
    data = dict(entry)
    try:
        if prepare is not None:
            prepare(data)
        return bind_hook(data)
    except (Exception, SystemExit) as raw:
        exc = problem_from(raw)
    field = exc.field
    head = field.split(".", 1)[0] if field else None
    if field and head and field_map:
        # The whole dotted field first (``webhook.timeout``), then its head (``webhook``).
        field = field_map.get(field) or field_map.get(head) or field
    exc.field = field
    if head == "type" and event_loc is not None:
        line = doc.line(event_loc)
    elif field:
        line = doc.line((*loc, *[p for p in field.split(".") if p]))
    else:
        line = doc.line(loc)
    errors.append(exc.located(file=str(doc.path), hook_id=hook_id, line=line))
    return None
