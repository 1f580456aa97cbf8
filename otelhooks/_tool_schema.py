"""What an MCP tool will receive, read from the ``inputSchema`` its server listed.

A guard judges a call's arguments; the server runs what it makes of them. The SDKs' servers
validate leniently (the Python SDK with pydantic's lax mode: ``"true"``, ``"1"`` and ``1`` are
all ``True`` for a boolean) and fill in the defaults their schema declares. So a guard that
denies ``force is True`` let ``{"force": "true"}`` through, and one that reads ``force`` saw
nothing when the server's default was ``True``. One rule, for the MCP gateway and the OpenAI
Agents MCP wrapper alike:

* :func:`type_problem`: arguments whose JSON types are not those the schema declares are
  refused before any guard, as a tool error naming the argument (the MCP specification,
  2025-11-25, Tools, "Error Handling": an input validation error is a tool execution error,
  ``isError: true``, which the model reads and can correct by sending typed values);
* :func:`with_defaults`: the defaults the schema declares for the arguments the client left
  out (in objects inside them too) are filled into what guards see; the server still gets
  what the client sent, or (:func:`rewritten`) what a hook rewrote.

Only types are checked (``type``, through ``anyOf`` / ``oneOf`` / ``allOf``, local ``$ref``,
``properties``, ``additionalProperties``, ``prefixItems`` and ``items``): a value of the declared
type is one the server cannot read as another. A schema part this module cannot read (a remote
``$ref``, ``if`` / ``then``, ``patternProperties``) is not checked.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["rewritten", "type_problem", "with_defaults"]

# $ref hops, and anyOf / oneOf / allOf branches, followed without descending into the value (a
# schema whose refs loop stops here)
_MAX_REF_HOPS: Final = 32


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def _is(value: Any, kind: str) -> bool:
    actual = _json_type(value)
    if kind == "number":
        return actual in ("integer", "number")
    if kind == "integer":  # JSON Schema: 1.0 is an integer
        return actual == "integer" or (actual == "number" and float(value).is_integer())
    return actual == kind


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    for _ in range(_MAX_REF_HOPS):
        ref = schema.get("$ref") if isinstance(schema, Mapping) else None
        if not isinstance(ref, str):
            return schema
        if not ref.startswith("#/"):
            return None  # a remote schema: not fetched, not checked
        node: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, Mapping) else None
        schema = node
    return None


def _problem(
    value: Any, schema: Any, root: Mapping[str, Any], where: str, branches_in: int = 0
) -> str | None:
    if branches_in > _MAX_REF_HOPS:
        # a branch that refers back to itself (``{"anyOf": [{"$ref": "#"}]}``): no type can be
        # told, and a value no type was told for is not one to judge
        return f"{where} cannot be checked: the tool's inputSchema refers to itself without end"
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping):
        return None
    kinds = schema.get("type")
    if isinstance(kinds, str):
        kinds = [kinds]
    if isinstance(kinds, list) and not any(isinstance(k, str) and _is(value, k) for k in kinds):
        declared = " or ".join(str(k) for k in kinds)
        return f"{where} is {_json_type(value)} where the tool's inputSchema says {declared}"
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            problems = [_problem(value, b, root, where, branches_in + 1) for b in branches]
            if all(problems):
                return problems[0]
    for branch in schema.get("allOf") or ():
        problem = _problem(value, branch, root, where, branches_in + 1)
        if problem:
            return problem
    if isinstance(value, dict):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            sub = properties.get(name, extra)
            problem = _problem(item, sub, root, f"{where}.{name}")
            if problem:
                return problem
    elif isinstance(value, list):
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else schema.get("items")
            problem = _problem(item, sub, root, f"{where}[{i}]")
            if problem:
                return problem
    return None


def type_problem(arguments: Any, schema: Any) -> str | None:
    """Why ``arguments`` do not have the JSON types ``schema`` declares (``None``: they do,
    or there is no schema to read).

    >>> schema = {"type": "object", "properties": {"force": {"type": "boolean"}}}
    >>> type_problem({"force": "true"}, schema)
    "arguments.force is string where the tool's inputSchema says boolean"
    >>> type_problem({"force": True, "other": "x"}, schema) is None
    True
    """
    if not isinstance(schema, Mapping):
        return None
    return _problem({} if arguments is None else arguments, schema, schema, "arguments")


def with_defaults(arguments: dict[str, Any], schema: Any) -> dict[str, Any]:
    """``arguments`` and, for each argument left out, the default ``schema`` declares, in
    objects inside them too (a new dict where one is added; ``arguments`` is not changed).

    >>> schema = {"properties": {"force": {"type": "boolean", "default": True}}}
    >>> with_defaults({"path": "/"}, schema)
    {'path': '/', 'force': True}
    """
    if not isinstance(schema, Mapping):
        return arguments
    filled: dict[str, Any] = _filled(arguments, schema, schema)
    return filled


def _filled(value: Any, schema: Any, root: Mapping[str, Any]) -> Any:
    properties = _resolve(schema, root)
    properties = properties.get("properties") if isinstance(properties, Mapping) else None
    if not isinstance(value, dict) or not isinstance(properties, Mapping):
        return value
    out = value
    for name, sub in properties.items():
        if name in value:
            new = _filled(value[name], sub, root)
        else:
            # a default may sit beside a $ref (pydantic's way) or in the schema it names
            declared = sub if isinstance(sub, Mapping) and "default" in sub else _resolve(sub, root)
            if not isinstance(declared, Mapping) or "default" not in declared:
                continue
            new = copy.deepcopy(declared["default"])
        if name not in value or new is not value[name]:
            out = dict(value) if out is value else out
            out[name] = new
    return out


def rewritten(judged: dict[str, Any], sent: dict[str, Any], schema: Any) -> dict[str, Any] | None:
    """What the server gets after the hooks judged ``judged``: ``None`` when they changed
    nothing (``sent`` goes as it is), else their arguments without the top-level defaults they
    left as filled in, which stay the server's to apply (a ``None`` default of an argument typed
    ``int`` is refused when sent).

    >>> schema = {"properties": {"force": {"type": "boolean", "default": True}}}
    >>> rewritten({"path": "/tmp", "force": True}, {"path": "/"}, schema)
    {'path': '/tmp'}
    """
    filled = with_defaults(sent, schema)
    if judged == filled:
        return None
    return {k: v for k, v in judged.items() if k in sent or k not in filled or v != filled[k]}
