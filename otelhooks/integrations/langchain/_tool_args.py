"""How a ``hook_tool`` call's validated arguments reach its guards: in their JSON form."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import InjectedToolArg
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

__all__ = ["injects", "json_form"]


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
