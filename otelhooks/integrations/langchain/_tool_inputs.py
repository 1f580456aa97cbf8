"""What a ``hook_tool`` call's guards judge, and what its inner tool is then given.

The wrapper (:class:`~otelhooks.integrations.langchain._tools.HookedTool`) stands between
LangChain and the tool: the guards see the arguments as the tool's function would receive them
(:func:`full_input`: under their names, defaults filled in, in JSON form), and the inner tool is
given the arguments as the caller gave them, each the hooks rewrote as the hooks gave it
(:func:`args_for_inner`). Each function takes the tool's argument schema (``None`` when it is
not a pydantic model: LangChain also takes JSON's).
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import InjectedToolArg
from pydantic import BaseModel, ValidationError

from otelhooks.integrations.langchain._tool_args import (
    json_form,
    leads,
    named,
    nested_paths,
    set_nested,
    spellings,
)

__all__ = [
    "args_for_inner",
    "caller_injected",
    "for_inner",
    "full_input",
    "given_of",
    "kept_back",
    "named_input",
]


def _fields(model: type[BaseModel] | None) -> dict[str, Any]:
    return dict(model.model_fields) if model is not None else {}


def _aliases(fields: dict[str, Any], key: str) -> bool:
    """``key`` spells one of ``fields`` (an alias of it)."""
    return any(key in spellings(field) for field in fields.values())


def for_inner(model: type[BaseModel] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    """What the inner tool is given: LangChain hands ``_run`` every default of the schema,
    and the inner tool validates what it is given, where ``limit: int = None`` refuses the
    ``None`` it defaults to; such a default is left for the inner tool to fill in."""
    fields = _fields(model)
    return {
        k: v
        for k, v in kwargs.items()
        if v is not None
        or k not in fields
        or fields[k].is_required()
        or fields[k].default is not None
    }


def full_input(
    model: type[BaseModel] | None, tool_input: str | dict[str, Any]
) -> tuple[str | dict[str, Any], dict[str, Any]]:
    """The input as the tool's function receives it, which is what the handler's guards
    judge as the call starts: a plain string (LangChain's input for a one-argument tool)
    named after that argument, each default of the argument schema the caller left out
    filled in (a guard denying ``force`` must see the ``force=True`` it defaults to), and
    each value as the schema gives it to the function, in its JSON form (``"true"`` given
    is ``True``, which a guard comparing with ``true`` must see; an enum is its value and a
    nested model its fields, as the model wrote them, which a guard compares with). Not a
    ``None`` default: the schema validates what is given, and ``limit: int = None`` refuses
    a ``None`` given.

    Returns:
        LangChain's input (which the schema validates), and what the guards are shown beside
        it (as the handler's caller-injected arguments are) where the schema would refuse it
        in the input: a schema forbidding other keys (``extra="forbid"``) takes no name of an
        argument it takes under an alias only, and a guard reading ``path`` must still see the
        call that gives it as ``file_path`` or inside ``{"target": {"file": ...}}``, and the
        ``force=True`` it defaults to (before, it saw neither and let ``/etc/passwd`` be
        deleted).
    """
    if model is None or not model.model_fields:
        return tool_input, {}
    fields = model.model_fields
    if isinstance(tool_input, str):
        tool_input = {next(iter(fields)): tool_input}
    defaults = {
        name: field.get_default(call_default_factory=True)
        for name, field in fields.items()
        if not field.is_required() and name not in tool_input
    }
    full = {**tool_input, **{k: v for k, v in defaults.items() if v is not None}}
    try:
        # what was given, validated; a default left out is the function's as it is (its
        # validators do not run on it unless the schema says ``validate_default``)
        parsed = model.model_validate(tool_input)
    except ValidationError:  # LangChain's own validation answers it, as without otelhooks
        return full, {}
    # each field given, under its name too when it was given under an alias the schema
    # takes alone (``file_path``): a guard reads the name the function receives
    shown = full.keys() | parsed.model_fields_set
    values = {k: getattr(parsed, k) for k in fields if k in shown}
    view = {**full, **values, **json_form(parsed, values)}
    try:  # a probe: its validators see their own output here, which one may refuse
        model.model_validate({**full, **values})
    except Exception:  # e.g. the schema forbids what it takes under no alias: as given
        given = dict(tool_input)
        return given, {k: v for k, v in view.items() if k not in given}
    return view, {}


def kept_back(
    model: type[BaseModel] | None, filled: frozenset[str], tool_input: str | dict[str, Any]
) -> tuple[str | dict[str, Any], dict[str, Any]]:
    """The input without what the graph filled in that the tool's function alone says it
    does (``filled``: a ``ToolRuntime``, the agent's whole state, the run's config), and
    that: the guards, the span and the callbacks never get it (unwrapped, LangChain keeps it
    from them), the inner tool does. Not an argument the schema requires: validated without
    it, the call would fail."""
    fields = _fields(model)
    if not filled or not isinstance(tool_input, dict):
        return tool_input, {}
    back = {
        k: v
        for k, v in tool_input.items()
        if k in filled and not (k in fields and fields[k].is_required())
    }
    return {k: v for k, v in tool_input.items() if k not in back}, back


def named_input(
    model: type[BaseModel] | None, tool_input: str | dict[str, Any]
) -> str | dict[str, Any]:
    """The input with each argument given under an alias under its name, where the schema
    takes that (see :func:`._tool_args.named`): what the guards judge, the function gets."""
    if model is None or not isinstance(tool_input, dict):
        return tool_input
    return named(model, tool_input)


def caller_injected(model: type[BaseModel] | None, given: dict[str, Any]) -> dict[str, Any]:
    """The ``InjectedToolArg`` arguments the caller gave (a user id the model may not set),
    which LangChain hides from callbacks; not LangGraph's own (the graph's state, its store,
    the call id: its kinds of ``InjectedToolArg``), which the graph fills in."""
    return {
        k: given[k]
        for k, f in _fields(model).items()
        if k in given
        and any(m is InjectedToolArg or type(m) is InjectedToolArg for m in f.metadata)
    }


def given_of(model: type[BaseModel] | None, tool_input: str | dict[str, Any]) -> dict[str, Any]:
    """The arguments as the caller gave them, before the schema's validators ran."""
    if isinstance(tool_input, dict):
        return dict(tool_input)
    return {next(iter(model.model_fields)): tool_input} if model and model.model_fields else {}


def args_for_inner(
    model: type[BaseModel] | None,
    kwargs: dict[str, Any],
    given: dict[str, Any],
    back: dict[str, Any],
    decided: dict[str, Any],
    started: dict[str, Any],
) -> dict[str, Any]:
    """What the inner tool is given, which its schema validates once more: each argument
    as the caller gave it (``given``: the schema's validators ran on ``kwargs`` already, and
    one that is not idempotent, ``removeprefix("file://")``, would run twice: the function
    would get other values than the guards judged), an argument a hook rewrote (``decided``
    against ``started``, what the guards were shown) as the hook gave it, a default the caller
    left out left for the inner tool to fill in, injected arguments (``InjectedToolCallId``)
    as LangChain filled them in, and what the graph filled in that no callback saw
    (``back``)."""
    fields = _fields(model)
    args: dict[str, Any] = {}
    # an argument given under an alias the schema takes alone (``f`` for ``force``)
    # reaches the function so, as it would unwrapped (LangChain's ``kwargs`` name it not)
    aliased = {k: v for k, v in given.items() if k not in fields and _aliases(fields, k)}
    for key, value in {**aliased, **kwargs, **decided}.items():
        if key in decided and (key not in started or decided[key] != started[key]):
            args[key] = value  # the hook's
        elif key in given:
            args[key] = given[key]
        elif key not in fields or fields[key].is_required():
            args[key] = value
    for key in started.keys() - decided.keys():  # a hook removed it
        args.pop(key, None)
        for alias in spellings(fields[key]) if key in fields else ():
            args.pop(alias, None)
    for key, value in decided.items():
        # the schema takes only the aliases (its name was added for the guards): the
        # function gets the value the hook gave the name, not the one the alias held
        changed = key not in started or value != started[key]
        for alias in spellings(fields[key]) if changed and key in fields else ():
            if alias in args and alias not in fields:
                args[alias] = value
    for key, field in fields.items():  # the alias carries it: its name is no second key
        if key in args and key not in given and spellings(field) - {key} & args.keys():
            del args[key]
    return {**for_inner(model, _nested(fields, args, given, decided, started)), **back}


def _nested(
    fields: dict[str, Any],
    args: dict[str, Any],
    given: dict[str, Any],
    decided: dict[str, Any],
    started: dict[str, Any],
) -> dict[str, Any]:
    """``args`` with each argument a hook rewrote (or removed) that the caller gave inside
    another (a nested alias, ``AliasPath("target", "file")``: the guards saw it under its
    name) rewritten (or removed) there too: the schema reads it from there before any name,
    and the function got the caller's ``/etc/passwd`` where the hook sandboxed it. The name
    then rides beside it no more (a schema forbidding other keys would refuse it).

    Raises:
        NestedAliasError: a hook removed a list's item (refused: never run with the
            caller's)."""
    for key, field in fields.items():
        removed = key in started and key not in decided
        changed = key in decided and (key not in started or decided[key] != started[key])
        for path in nested_paths(field):
            if removed or changed:
                args = set_nested(args, path, decided.get(key), remove=removed)
            if key not in given and leads(args, path):
                args = {k: v for k, v in args.items() if k != key}  # the path carries it
    return args
