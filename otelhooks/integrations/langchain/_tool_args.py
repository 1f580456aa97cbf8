"""How a ``hook_tool`` call's validated arguments reach its guards: in their JSON form."""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from typing import Annotated, Any

from langchain_core.tools import BaseTool, InjectedToolArg
from langgraph.prebuilt import ToolRuntime
from pydantic import AliasChoices, AliasPath, BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticSerializationError

__all__ = [
    "NestedAliasError",
    "filled_in",
    "injects",
    "json_form",
    "leads",
    "named",
    "nested_paths",
    "set_nested",
    "spellings",
]


def injects(marker: Any) -> bool:
    """``marker`` (an ``Annotated`` argument's) makes the argument one the caller or the graph
    fills in (``InjectedToolArg``, LangGraph's ``InjectedState``, class or instance)."""
    if isinstance(marker, type):
        return issubclass(marker, InjectedToolArg)
    return isinstance(marker, InjectedToolArg)


def json_form(parsed: BaseModel, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (validated) as JSON gives them: ``Mode.DELETE`` is ``"delete"``, an
    ``Opts`` its fields. A Python guard comparing ``args["mode"] == "delete"`` or reading
    ``args["opts"]["force"]`` saw the enum member or the model object: it let the delete
    run or failed. Not the injected arguments (the graph's state, its store), which the
    guards do not see, nor a set, nor a value JSON cannot hold; none when the schema
    cannot take the values back in that form (a strict field): LangChain validates what
    the guards judge."""
    fields = type(parsed).model_fields
    form: dict[str, Any] = {}
    for key, value in values.items():
        # a set stays one: as a list its order would be the process's string hashing's
        if isinstance(value, set | frozenset) or any(map(injects, fields[key].metadata)):
            continue
        try:
            form[key] = parsed.model_dump(mode="json", include={key})[key]
        except (PydanticSerializationError, KeyError):  # no JSON form, or it is not dumped
            continue
    try:
        type(parsed).model_validate({**values, **form})
    except Exception:  # a probe: the values as validated are what LangChain took before
        return {}
    return form


def spellings(field: FieldInfo) -> set[str]:
    """The keys other than its name that ``field`` is given under: its alias and each plain
    validation alias (a nested ``AliasPath`` is no key of its own)."""
    found: set[str] = set()
    for alias in (field.alias, field.validation_alias):
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        found.update(c for c in choices if isinstance(c, str))
    return found


class NestedAliasError(ValueError):
    """A hook removed an argument the caller gave as a list's item under a nested alias
    (``AliasPath("targets", 0)``): no list without it gives the function what the hook left."""


def nested_paths(field: FieldInfo) -> list[list[str | int]]:
    """The nested spellings of ``field`` (each ``AliasPath`` of its validation alias): a value
    read from inside another argument (``{"target": {"file": ...}}``), under no key of its own.

    Example:
        >>> from pydantic import Field
        >>> nested_paths(Field(validation_alias=AliasPath("target", 0)))
        [['target', 0]]
    """
    alias = field.validation_alias
    choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
    return [list(choice.path) for choice in choices if isinstance(choice, AliasPath)]


def leads(holder: Any, path: list[str | int]) -> bool:
    """``path`` leads to a value inside ``holder`` (where pydantic reads a nested alias)."""
    for step in path:
        if isinstance(step, int):
            found = isinstance(holder, list) and -len(holder) <= step < len(holder)
        else:
            found = isinstance(holder, dict) and step in holder
        if not found:
            return False
        holder = holder[step]
    return True


def set_nested(
    args: dict[str, Any], path: list[str | int], value: Any, *, remove: bool = False
) -> dict[str, Any]:
    """``args`` with ``value`` where ``path`` leads (or nothing there, with ``remove``), each
    container on the way copied: the caller's are left as they are. ``args`` itself when the
    path leads to nothing in ``args`` (the argument was not given that way: pydantic did not
    read it there either).

    Raises:
        NestedAliasError: the argument is a list's item, to be removed (which would move the
            next item into its place: the function would get that one).

    Example:
        >>> set_nested({"target": {"file": "/etc/passwd", "mode": "w"}}, ["target", "file"], "/tmp")
        {'target': {'file': '/tmp', 'mode': 'w'}}
    """
    if not leads(args, path):
        return args
    if remove and isinstance(path[-1], int):
        raise NestedAliasError("a list's item cannot be removed")

    def put(holder: Any, step: str | int, more: list[str | int]) -> Any:
        copy: Any = dict(holder) if isinstance(holder, dict) else list(holder)
        if more:
            copy[step] = put(holder[step], more[0], more[1:])
        elif remove:
            copy.pop(step)
        else:
            copy[step] = value
        return copy

    written: dict[str, Any] = put(args, path[0], path[1:])
    return written


def named(model: type[BaseModel], given: dict[str, Any]) -> dict[str, Any]:
    """``given`` with each argument given under an alias (``file_path``) under the name the
    function receives it by (``path``) instead, when the schema takes the names (its
    ``populate_by_name``): a guard reading ``path`` must see the call that spells it
    ``file_path``, which the model may send as well as ``path``. ``given`` as it is when the
    schema takes only the aliases, or nothing was spelled otherwise, or it is invalid."""
    renamed = dict(given)
    for name, field in model.model_fields.items():
        for key in spellings(field) - {name}:
            if key in renamed and key not in model.model_fields:
                renamed[name] = renamed.pop(key)  # both given: pydantic takes the alias's
    if renamed == given:
        return given
    try:  # a probe: a validator's own error is no reason to fail the call
        same = model.model_validate(renamed) == model.model_validate(given)
    except Exception:
        same = False
    return renamed if same else given


def _fills(hint: Any) -> bool:
    """An annotation of an argument the graph or the caller fills in: a ``ToolRuntime``
    (generic or not), or one ``Annotated`` with an ``InjectedToolArg``."""
    if typing.get_origin(hint) is Annotated:
        base, *marks = typing.get_args(hint)
        return any(map(injects, marks)) or _fills(base)
    kind = typing.get_origin(hint) or hint
    return isinstance(kind, type) and issubclass(kind, ToolRuntime)


def filled_in(tool: BaseTool) -> frozenset[str]:
    """The arguments of ``tool``'s function the graph fills in (its ``ToolRuntime``) as its
    signature says, which is where LangChain reads them to keep them from callbacks; its
    argument schema may not say so (LangChain's ``ShellToolMiddleware`` declares
    ``runtime: Any``), and the wrapper's function says nothing."""
    function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    if function is None:
        return frozenset()
    try:
        return _filled_in(function)
    except TypeError:  # a callable that cannot be a cache key (an object without a hash)
        return _filled_in.__wrapped__(function)


@functools.lru_cache(maxsize=1024)  # asked at each call: the hints are read once a function
def _filled_in(function: Callable[..., Any]) -> frozenset[str]:
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception:  # an annotation that names what its module does not import
        return frozenset()
    return frozenset(k for k, hint in hints.items() if k != "return" and _fills(hint))
