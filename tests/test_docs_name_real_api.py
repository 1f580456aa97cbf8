"""The docs and docstrings name only methods, fields and options that exist (#27: the
``ToolCallEvent`` docstring promised ``deny``, which did not exist; the handler that called it
raised, and the tool ran).

Checked, in README.md, docs/*.md and the docstrings of every public object (and its public
members) of ``otelhooks``, ``otelhooks.events`` and ``otelhooks.testing``:

- ``:meth:`name``` / ``:attr:`name``` inside a class's docstrings: a member of that class;
- ``:meth:`Class.name``` / ``:attr:`~otelhooks.Class.name``` and ```Class.name``` or
  ``Class.name(`` anywhere, for a public class ``Class``: a member of it (a method, property,
  attribute or pydantic field);
- ``event.name(`` anywhere: a method of some public event payload class.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import otelhooks
import otelhooks.events
import otelhooks.testing

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_ROLE = re.compile(r":(?:meth|attr):`~?([\w.]+)`")
_CLASS_MEMBER = re.compile(r"(?<![\w.])([A-Z]\w+)\.([a-z_]\w*)\b(?:`|\()")
_EVENT_CALL = re.compile(r"(?<![\w.])event\.([a-z_]\w*)\(")


def public_objects() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for module in (otelhooks, otelhooks.events, otelhooks.testing):
        for name in module.__all__:
            found.setdefault(name, getattr(module, name))
    return found


PUBLIC = public_objects()
CLASSES = {name: obj for name, obj in PUBLIC.items() if inspect.isclass(obj)}
EVENT_CLASSES = [c for c in CLASSES.values() if issubclass(c, otelhooks.HookEvent)]


def has_member(cls: type, name: str) -> bool:
    fields = getattr(cls, "model_fields", None)
    if isinstance(fields, dict) and name in fields:
        return True
    dataclass_fields = getattr(cls, "__dataclass_fields__", None)
    if isinstance(dataclass_fields, dict) and name in dataclass_fields:
        return True
    if name in getattr(cls, "__slots__", ()) or hasattr(cls, name):
        return True
    # an attribute declared on the class, or set on the instance by a method of ours
    if any(name in vars(klass).get("__annotations__", {}) for klass in cls.__mro__):
        return True
    assigned = re.compile(rf"\bself\.{re.escape(name)}\s*(?::[^=]*)?=[^=]")
    return any(assigned.search(source) for source in sources_of(cls))


def sources_of(cls: type) -> Iterator[str]:
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] != "otelhooks":
            continue
        try:
            yield inspect.getsource(klass)
        except (OSError, TypeError):
            continue


def resolve(dotted: str) -> tuple[type, str] | None:
    """``otelhooks.Class.member`` / ``Class.member`` as (class, member), for a public class."""
    parts = dotted.split(".")
    if parts[0] == "otelhooks":
        parts = parts[1:]
    while parts and parts[0] in ("events", "testing"):
        parts = parts[1:]
    if len(parts) != 2 or parts[0] not in CLASSES:
        return None
    return CLASSES[parts[0]], parts[1]


def docstrings() -> Iterator[tuple[str, type | None, str]]:
    """(where, the class it belongs to, text) for every public docstring."""
    for name, obj in PUBLIC.items():
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        owner = obj if inspect.isclass(obj) else None
        yield name, owner, inspect.getdoc(obj) or ""
        if owner is None:
            continue
        for member_name, member in vars(obj).items():
            if member_name.startswith("_"):
                continue
            target = member.fget if isinstance(member, property) else member
            doc = getattr(target, "__doc__", None)
            documented = isinstance(doc, str) and bool(doc)
            if documented and (callable(target) or isinstance(member, property)):
                yield f"{name}.{member_name}", owner, inspect.cleandoc(doc)


def problems_in(where: str, owner: type | None, text: str) -> list[str]:
    found: list[str] = []
    for ref in _ROLE.findall(text):
        if "." not in ref:
            if owner is not None and not has_member(owner, ref):
                found.append(f"{where}: :meth:/:attr: `{ref}` is not a member of {owner.__name__}")
            continue
        resolved = resolve(ref)
        if resolved is not None and not has_member(*resolved):
            found.append(f"{where}: `{ref}` does not exist")
    for cls_name, member in _CLASS_MEMBER.findall(text):
        cls = CLASSES.get(cls_name)
        if cls is not None and not has_member(cls, member):
            found.append(f"{where}: `{cls_name}.{member}` does not exist")
    for method in _EVENT_CALL.findall(text):
        if not any(hasattr(c, method) for c in EVENT_CLASSES):
            found.append(f"{where}: `event.{method}(` is a method of no event payload")
    return found


def test_docstrings_name_only_members_that_exist() -> None:
    problems = [p for where, owner, text in docstrings() for p in problems_in(where, owner, text)]
    assert problems == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_docs_name_only_members_that_exist(doc: Path) -> None:
    assert problems_in(doc.name, None, doc.read_text()) == []


def test_the_check_catches_a_method_that_does_not_exist() -> None:
    # The original case: ToolCallEvent's docstring named `deny` before it existed.
    text = "Handlers may call :meth:`mock` or :meth:`refuse`; or `event.refuse(reason)`."
    assert problems_in("ToolCallEvent", otelhooks.ToolCallEvent, text) == [
        "ToolCallEvent: :meth:/:attr: `refuse` is not a member of ToolCallEvent",
        "ToolCallEvent: `event.refuse(` is a method of no event payload",
    ]
    assert problems_in("doc", None, "call `ToolCallEvent.refuse` to deny") == [
        "doc: `ToolCallEvent.refuse` does not exist"
    ]
    assert problems_in("ToolCallEvent", otelhooks.ToolCallEvent, ":meth:`deny`") == []


# A private module of the package, by import path or file path (``otelhooks.x._y``,
# ``otelhooks/x/_y.py``); docs/design.md explains the architecture to maintainers, so it may.
_PRIVATE_MODULE = re.compile(r"\botelhooks(?:[./][a-z]\w*)*[./]_[a-z]\w*")


def private_modules_in(text: str) -> list[str]:
    return _PRIVATE_MODULE.findall(text)


@pytest.mark.parametrize("doc", [d for d in DOCS if d.name != "design.md"], ids=lambda p: p.name)
def test_user_docs_send_no_one_to_a_private_module(doc: Path) -> None:
    assert private_modules_in(doc.read_text()) == []


def test_the_private_module_check_catches_both_spellings() -> None:
    text = "see `otelhooks.integrations.coding_agents._joins` and `otelhooks/_actions/_inbox.py`"
    assert private_modules_in(text) == [
        "otelhooks.integrations.coding_agents._joins",
        "otelhooks/_actions",
    ]
    assert private_modules_in("otelhooks.integrations.claude_code.hook_client") == []
