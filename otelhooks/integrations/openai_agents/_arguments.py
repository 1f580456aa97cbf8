"""The arguments a hooked ``FunctionTool``'s guards judge: the values the function receives.

The SDK validates a ``@function_tool`` call's JSON with a model made from your function before
the call, and fills in the defaults the model left out: ``"true"`` given to a ``bool`` is
``True`` to the function. A guard that judged the JSON as sent would judge another call than the
one that runs. This module's one job is to give the hooks the arguments as the function gets
them; it is apart from :mod:`._tools`, which wraps the SDK's tools, because it reads your
function's signature (with a cache keyed by it), not the tool.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import weakref
from typing import Any, Final

from agents import FunctionTool
from agents.function_schema import function_schema
from pydantic import BaseModel, ValidationError

__all__ = ["arguments_model", "received"]


def _with_defaults(schema: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """``args`` as the function receives them: each top-level default of the tool's schema
    that the model left out filled in, so a guard denying ``force`` sees the ``force=True`` it
    defaults to. Not a ``None`` default, which a strict schema drops: a rewrite passes every
    argument on, and ``limit: int = None`` refuses a ``None`` given."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return args
    defaults = {
        name: copy.deepcopy(p["default"])
        for name, p in properties.items()
        if isinstance(p, dict) and p.get("default") is not None and name not in args
    }
    return {**args, **defaults} if defaults else args


# Each @function_tool's argument model, by the function you decorated: hook_agent hooks every
# tool at each run, and making the model costs milliseconds. Keyed by your code's own objects
# (weakly: a tool made per request goes with its function), never by names from a model.
_MODELS: Final[weakref.WeakKeyDictionary[Any, type[BaseModel] | None]] = weakref.WeakKeyDictionary()


def arguments_model(tool: FunctionTool) -> type[BaseModel] | None:
    """The model the SDK validates a ``@function_tool`` call's JSON with before the call, made
    again from your function by the SDK's public ``function_schema`` (the SDK keeps its own
    private); ``None`` for a tool of another kind (its ``on_invoke_tool`` reads the JSON
    itself)."""
    try:
        func: Any = tool.__wrapped__  # the SDK's public way to the function you decorated
    except AttributeError:  # not made by @function_tool
        return None
    try:
        return _MODELS[func]
    except (KeyError, TypeError):  # TypeError: a callable object that cannot be weakly keyed
        pass
    try:
        # a callable object: the SDK reads its __call__ the same way
        target = func if inspect.isroutine(func) or inspect.isclass(func) else func.__call__
        model: type[BaseModel] | None = function_schema(
            target, use_docstring_info=False
        ).params_pydantic_model
    except Exception:  # a callable the SDK reads otherwise: the JSON values, as sent
        model = None
    with contextlib.suppress(TypeError):
        _MODELS[func] = model
    return model


def received(
    model: type[BaseModel] | None, schema: dict[str, Any], args: dict[str, Any]
) -> dict[str, Any]:
    """``args`` as the function receives them, which is what guards judge: each value as the
    SDK's validation gives it (``"true"`` given to a ``bool`` is ``true``, as a non-strict
    schema lets the model send; in its JSON form, so a rewrite is JSON again) and each default
    the model left out (:func:`_with_defaults`). Arguments the SDK refuses are shown as sent:
    the function does not run."""
    full = _with_defaults(schema, args)
    if model is None:
        return full
    try:
        parsed = model.model_validate(full)
        values = parsed.model_dump(mode="json")
        # a JSON form that is not the value again (a SecretStr's is its mask) stays as sent:
        # a rewrite passes every argument on, and the function would get the mask
        again = model.model_validate({**full, **values})
    except ValidationError:
        return full
    return {
        **full,
        **{
            k: v
            for k, v in values.items()
            if k in full and getattr(again, k, None) == getattr(parsed, k, None)
        },
    }
