"""Building hooks from config entries: where any failure becomes a located ConfigError."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from otelhooks._actions import ACTION_KINDS
from otelhooks._actions import build_hook as bind_hook
from otelhooks._config._parse import Document, Loc
from otelhooks._errors import ConfigError, unknown_field
from otelhooks._events import resolve_event
from otelhooks._hooks import Hook
from otelhooks._matchers import MatchKind

__all__ = [
    "ConfigWarning",
    "absolute_script",
    "build_hook",
    "import_handler",
    "matcher_warning",
    "problem_from",
]


def import_handler(path: str, *, beside: Path | None = None) -> Callable[..., Any]:
    """Import ``package.module:function`` (``:`` or the last ``.`` separates the attribute).

    A module the import system cannot find is looked for in ``beside`` (the hook file's
    folder): ``handler: myhooks:guard`` imports ``myhooks.py`` next to the file, whatever the
    working directory.
    """
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(f"handler {path!r} is not an import path like 'pkg.module:function'")
    try:
        target: Any = _import_module(module_name, beside)
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


def _import_module(name: str, beside: Path | None) -> ModuleType:
    top = name.partition(".")[0]
    if beside is not None and top not in sys.modules and importlib.util.find_spec(top) is None:
        # By file path (importlib's public API), not by a sys.path entry that would outlive
        # this import and shadow other modules. Registered under its name, so that the
        # package's submodules and a second hook naming the module find it.
        for file, package in ((beside / top / "__init__.py", True), (beside / f"{top}.py", False)):
            if not file.is_file():
                continue
            locations = [str(file.parent)] if package else None
            spec = importlib.util.spec_from_file_location(
                top, file, submodule_search_locations=locations
            )
            if spec is None or spec.loader is None:
                break
            module = importlib.util.module_from_spec(spec)
            sys.modules[top] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[top]
                raise
            break
    return importlib.import_module(name)


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


class ConfigWarning(ConfigError):
    """A config problem that does not stop the hook from loading (it runs, perhaps not as the
    author meant): an invalid regex matcher that falls back to exact matching. ``otelhooks
    validate`` prints it as a warning, and as an error with ``--strict``."""


def _placeholder_handler(payload: Any) -> None:
    """Stands in for an action that failed validation, so the hook's other fields are checked."""


_MAX_PASSES = 6  # each pass sets aside the fields it found wrong; a hook has few fields


def _problems_of(exc: Exception) -> list[ConfigError]:
    """Every problem a failed ``Hook.model_validate`` reports (pydantic lists them all; our own
    checks in ``model_post_init`` arrive wrapped, one at a time)."""
    if not isinstance(exc, ValidationError):
        return [problem_from(exc)]
    problems: list[ConfigError] = []
    for error in exc.errors():
        original = error.get("ctx", {}).get("error")
        if isinstance(original, ConfigError):
            problems.append(original)
            continue
        loc = [str(p) for p in error["loc"]]
        field = ".".join(loc) or None
        if error["type"] == "extra_forbidden" and len(loc) == 1:
            message = unknown_field(loc[0], Hook.model_fields)
        else:
            message = str(error["msg"]).removeprefix("Value error, ")
        problems.append(ConfigError(message, field=field))
    return problems


def _webhook_problems(raw: Any) -> list[ConfigError]:
    """Every problem of a webhook mapping (the webhook action reports only its first)."""
    from otelhooks._actions._webhook_config import WebhookConfig

    try:
        WebhookConfig.model_validate(raw)
    except ValidationError as exc:
        names = [
            n for name, f in WebhookConfig.model_fields.items() for n in (f.alias or name, name)
        ]
        problems = []
        for error in exc.errors():
            loc = [str(p) for p in error["loc"]]
            if error["type"] == "extra_forbidden" and len(loc) == 1:
                message = unknown_field(loc[0], dict.fromkeys(names))
            else:
                message = str(error["msg"]).removeprefix("Value error, ")
            problems.append(ConfigError(message, field=".".join(["webhook", *loc])))
        return problems
    return []


def _set_aside(data: dict[str, Any], problem: ConfigError) -> None:
    """Replace or drop what ``problem`` is about, so the next pass can check the rest."""
    head = (problem.field or "").split(".", 1)[0]
    if head == "type":
        suggestion = getattr(problem, "suggestion", None)
        data["type"] = suggestion or "after_tool_call"
    elif head == "id":
        data["id"] = "hook"
    elif head in ACTION_KINDS or "needs an action" in problem.problem:
        for kind in ACTION_KINDS:
            data.pop(kind, None)
        data["handler"] = _placeholder_handler
    elif head:
        data.pop(head, None)


def _validate_all(data: dict[str, Any]) -> tuple[Hook | None, list[ConfigError]]:
    """The hook, or every problem of ``data`` (not only the first)."""
    problems: list[ConfigError] = []
    seen: set[tuple[str | None, str]] = set()
    fields: set[str] = set()
    for _ in range(_MAX_PASSES):
        try:
            hook = bind_hook(Hook.model_validate(data))  # validated, then its action bound
        except (Exception, SystemExit) as raw:
            found = _problems_of(raw) if isinstance(raw, Exception) else [problem_from(raw)]
            if isinstance(data.get("webhook"), dict) and any(
                (p.field or "").startswith("webhook.") for p in found
            ):
                webhook = _webhook_problems(data["webhook"])
                if webhook:
                    found = [p for p in found if not (p.field or "").startswith("webhook.")]
                    found += webhook
        else:
            return (hook, []) if not problems else (None, problems)
        fresh = [
            p
            for p in found
            if (p.field, p.problem) not in seen and (p.field or "").split(".")[0] not in fields
        ]
        for problem in fresh:
            seen.add((problem.field, problem.problem))
        problems.extend(fresh)
        if not fresh:
            break
        for problem in fresh:
            fields.add((problem.field or "").split(".")[0])
            _set_aside(data, problem)
    return None, problems


def matcher_warning(hook: Hook) -> ConfigWarning | None:
    """A warning when ``hook``'s matcher is an invalid regex that the runtime treats as an exact
    name instead (see :mod:`otelhooks._matchers`); ``None`` when the matcher means what it says."""
    source = hook.matcher
    matcher = hook.compiled_matcher
    if not source or matcher.kind is not MatchKind.NAMES or matcher.names != {source}:
        return None
    slashed = len(source) >= 2 and source.startswith("/") and source.endswith("/")
    dialect = hook.dialect or resolve_event(hook.type)[1].value
    if dialect == "workspace" and not slashed:
        return None  # the workspace engine's rule: a bare matcher is an exact name by design
    try:
        re.compile(source[1:-1] if slashed else source)
    except re.error as exc:
        return ConfigWarning(
            f"invalid regex ({exc}): at run time this matcher falls back to matching the exact "
            f"text {source!r}, so it matches no tool name you meant (`otelhooks validate "
            "--strict` makes this an error)",
            field="matcher",
        )
    return None


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
    """Validate one hook; on failure record every problem of it, each a ConfigError located in
    ``doc``, and return None. A hook that loads with a :class:`ConfigWarning` is returned and
    the warning recorded in ``errors`` too (callers tell them apart by class).

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
    problems: list[ConfigError] = []
    try:
        if prepare is not None:
            prepare(data)
    except (Exception, SystemExit) as raw:
        problems.append(problem_from(raw))
        # Check the rest of the hook with a stand-in for the handler that failed to import.
        data = dict(entry)
        data["handler"] = _placeholder_handler
        try:
            if prepare is not None:
                prepare(data)
        except (Exception, SystemExit):
            _record(doc, problems, loc, hook_id, field_map, event_loc, errors)
            return None
    hook, found = _validate_all(data)
    problems.extend(found)
    if problems:
        _record(doc, problems, loc, hook_id, field_map, event_loc, errors)
        return None
    assert hook is not None
    warning = matcher_warning(hook)
    if warning is not None:
        _record(doc, [warning], loc, hook_id, field_map, event_loc, errors)
    return hook


def _record(
    doc: Document,
    problems: list[ConfigError],
    loc: Loc,
    hook_id: str | None,
    field_map: Mapping[str, str] | None,
    event_loc: Loc | None,
    errors: list[ConfigError],
) -> None:
    located: list[ConfigError] = []
    for exc in problems:
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
        located.append(exc.located(file=str(doc.path), hook_id=hook_id, line=line))
    errors.extend(sorted(located, key=lambda e: e.line or 0))  # a hook's problems top-down
