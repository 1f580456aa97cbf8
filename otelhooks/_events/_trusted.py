"""Building a payload model from values whose types the instrumentation already knows.

Validating an event the instrumentation assembled itself (a ``str`` for every ``str`` field, the
``ToolResult`` it holds for ``result``) costs the observer worker more than running a no-op
handler; pydantic's ``model_construct`` is slower still (it is written in Python and handles every
case). :func:`trusted` checks each value with an exact type test, fills the defaults, and calls
the model's ``after`` validators, which gives the model validation would give (same type, values,
``model_fields_set``, extras and private attributes: ``tests/test_trusted_payloads.py`` holds
them equal for every payload model). Whenever it is unsure (a value of another type, an unknown
key, a model with ``before`` or field validators or a config it does not know) it validates.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, Final, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

__all__ = ["copy_with", "trusted"]

M = TypeVar("M", bound=BaseModel)

_object_setattr = object.__setattr__
_object_new = object.__new__  # what a model's __new__ is, without the lookup on its metaclass
_NoneType: Final = type(None)
# Config keys that change nothing a trusted build does; any other key set on a model (strict,
# str_strip_whitespace, validate_default, ...) makes it validate always.
_KNOWN_CONFIG: Final = frozenset(
    {"extra", "populate_by_name", "validate_assignment", "defer_build", "title"}
)
_RECIPES_LIMIT: Final = 64  # value signatures remembered per model

# What a value of a given type needs to be stored in a field: nothing (True), a check of its
# keys and a copy (_COPY_DICT: dict[str, Any], which validation copies), a check that it is one
# of the options (a tuple: Literal), or validation (None).
_COPY_DICT: Final = "copy"
_Accept = Callable[[type], "bool | str | tuple[Any, ...] | None"]


def _accept_for(annotation: Any) -> _Accept:
    """What the field of ``annotation`` needs for a value of each type."""
    if annotation is Any:
        return lambda kind: True
    if annotation in (str, int, float, bool):
        return lambda kind: True if kind is annotation else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation.model_config.get("revalidate_instances", "never") != "never":
            return lambda kind: None
        # An instance of exactly this model is kept as it is (revalidate_instances="never").
        return lambda kind: True if kind is annotation else None
    origin = get_origin(annotation)
    if origin is Literal:
        options = get_args(annotation)
        return lambda kind: options if any(kind is type(o) for o in options) else None
    if origin is dict and get_args(annotation) == (str, Any):
        return lambda kind: _COPY_DICT if kind is dict else None
    if origin in (Union, types.UnionType):
        args = get_args(annotation)
        if _NoneType in args and len(args) == 2:
            inner = _accept_for(next(a for a in args if a is not _NoneType))
            return lambda kind: True if kind is _NoneType else inner(kind)
    return lambda kind: None


class _Recipe:
    """How values of one signature (their keys and types) become the model's ``__dict__``."""

    __slots__ = ("copies", "factories", "fields_set", "literals")

    def __init__(
        self,
        copies: tuple[str, ...],
        literals: tuple[tuple[str, tuple[Any, ...]], ...],
        factories: tuple[tuple[str, Callable[[], Any]], ...],
        fields_set: set[str],
    ) -> None:
        self.copies = copies
        self.literals = literals
        self.factories = factories
        self.fields_set = fields_set  # copied for each model (a copy of a set skips hashing)


class _Plan:
    """How one model class is built without validation: its fields in order with their
    defaults (the ``template`` of every ``__dict__``), and a recipe per value signature."""

    __slots__ = (
        "accepts",
        "afters",
        "extra",
        "factories",
        "post_init",
        "recipes",
        "required",
        "template",
    )

    def __init__(self, cls: type[BaseModel]) -> None:
        self.template: dict[str, Any] = {}
        self.accepts: dict[str, _Accept] = {}
        self.factories: dict[str, Callable[[], Any]] = {}
        for name, info in cls.model_fields.items():
            self.accepts[name] = _accept_for(info.annotation)
            self.template[name] = None if info.default is PydanticUndefined else info.default
            if info.default_factory is not None:
                self.factories[name] = typing.cast("Callable[[], Any]", info.default_factory)
        self.required = frozenset(
            name for name, info in cls.model_fields.items() if info.is_required()
        )
        self.extra: bool = cls.model_config.get("extra") == "allow"
        self.post_init = bool(cls.__pydantic_post_init__)
        decorators = cls.__pydantic_decorators__
        self.afters: tuple[Callable[[Any], Any], ...] = tuple(
            d.func for d in decorators.model_validators.values()
        )
        self.recipes: dict[tuple[tuple[str, ...], tuple[type, ...]], _Recipe | None] = {}

    def recipe(self, names: tuple[str, ...], kinds: tuple[type, ...]) -> _Recipe | None:
        """The recipe for values with these keys and types, or None: validate them."""
        if not self.required <= set(names):
            return None  # a required field missing: validation says so
        copies: list[str] = []
        literals: list[tuple[str, tuple[Any, ...]]] = []
        for name, kind in zip(names, kinds, strict=True):
            accept = self.accepts.get(name)
            if accept is None:
                return None  # an extra, or an alias
            need = accept(kind)
            if need is None:
                return None
            if need == _COPY_DICT:
                copies.append(name)
            elif isinstance(need, tuple):
                literals.append((name, need))
        given = set(names)
        factories = tuple((n, f) for n, f in self.factories.items() if n not in given)
        return _Recipe(tuple(copies), tuple(literals), factories, given)


def _plan_of(cls: type[BaseModel]) -> _Plan | None:
    """The plan of ``cls``, or None when the model must always be validated."""
    config = cls.model_config
    if not set(config) <= _KNOWN_CONFIG or config.get("extra", "ignore") not in ("allow", "ignore"):
        return None
    decorators = cls.__pydantic_decorators__
    if decorators.field_validators or decorators.validators or decorators.root_validators:
        return None
    for decorator in decorators.model_validators.values():
        # Only instance methods run after validation with no argument but the model.
        if decorator.info.mode != "after":
            return None
        if len(inspect.signature(decorator.func).parameters) != 1:
            return None
    if cls.__pydantic_post_init__ and cls.model_post_init.__name__ != "init_private_attributes":
        return None  # a model_post_init of its own: validation calls it with a context
    for info in cls.model_fields.values():
        if info.alias is not None and not config.get("populate_by_name", False):
            return None
        if info.validate_default or info.default_factory_takes_validated_data:
            return None
        if info.default is not PydanticUndefined:
            try:
                hash(info.default)
            except TypeError:
                return None  # a mutable default: validation copies it
    return _Plan(cls)


_PLANS: dict[type[BaseModel], _Plan | None] = {}
_FIELDS: dict[type[BaseModel], frozenset[str]] = {}


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """``cls(**values)``, the model validation gives, without validating what needs no check.

    ``values`` is not kept (dict fields are copied as validation copies them). Falls back to
    ``cls.model_validate(values)`` for anything it cannot vouch for, so a wrong value raises the
    same ``ValidationError``.
    """
    try:
        plan = _PLANS[cls]
    except KeyError:
        plan = _PLANS[cls] = _plan_of(cls)
    if plan is None:
        return cls.model_validate(values)
    # The keys and the exact types of the values decide everything but dict keys and Literal
    # options, so the per-field work is done once per signature.
    names, kinds = tuple(values), tuple(map(type, values.values()))
    recipes = plan.recipes
    try:
        recipe = recipes[names, kinds]
    except KeyError:
        if len(recipes) >= _RECIPES_LIMIT:
            recipes.clear()
        recipe = recipes[names, kinds] = plan.recipe(names, kinds)
    if recipe is None:
        return cls.model_validate(values)
    data = plan.template.copy()
    data.update(values)  # every key is a field: the fields keep their declared order
    for name in recipe.copies:
        value = data[name]
        if value is not None:
            for key in value:
                if type(key) is not str:
                    return cls.model_validate(values)
            data[name] = value.copy()
    for name, options in recipe.literals:
        value = data[name]
        if not any(value == o and type(value) is type(o) for o in options):
            return cls.model_validate(values)
    for name, factory in recipe.factories:
        data[name] = factory()
    model = _object_new(cls)
    _object_setattr(model, "__dict__", data)
    _object_setattr(model, "__pydantic_fields_set__", recipe.fields_set.copy())
    _object_setattr(model, "__pydantic_extra__", {} if plan.extra else None)
    _object_setattr(model, "__pydantic_private__", None)
    if plan.post_init:
        model.model_post_init(None)
    for after in plan.afters:
        model = after(model)
    return model


def copy_with(model: M, update: dict[str, Any]) -> M:
    """``model.model_copy(update=update)`` for updates of declared fields, at a fraction of the
    cost (pydantic's copy is generic Python). Like ``model_copy``, nothing is validated; any
    other key goes through ``model_copy`` itself."""
    cls = type(model)
    try:
        fields = _FIELDS[cls]
    except KeyError:
        # The class property model_fields costs as much as the rest of the copy: once per class.
        fields = _FIELDS[cls] = frozenset(cls.model_fields)
    for name in update:
        if name not in fields:
            return model.model_copy(update=update)
    copied = _object_new(cls)
    data = model.__dict__.copy()
    data.update(update)
    _object_setattr(copied, "__dict__", data)
    fields_set = model.__pydantic_fields_set__.copy()
    fields_set.update(update)
    _object_setattr(copied, "__pydantic_fields_set__", fields_set)
    extra = model.__pydantic_extra__
    _object_setattr(copied, "__pydantic_extra__", None if extra is None else extra.copy())
    private = model.__pydantic_private__
    if private is not None:
        private = {k: v for k, v in private.items() if v is not PydanticUndefined}
    _object_setattr(copied, "__pydantic_private__", private)
    return copied
