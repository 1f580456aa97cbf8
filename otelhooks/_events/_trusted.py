"""Building a payload model from values whose types the instrumentation already knows.

Validating an event the instrumentation assembled itself (a ``str`` for every ``str`` field, the
``ToolResult`` it holds for ``result``) costs the observer worker more than running a no-op
handler; pydantic's ``model_construct`` is slower still (it is written in Python and handles every
case). :func:`trusted` checks each value with an exact type test, fills the defaults, and calls
the model's ``after`` validators, which gives the model validation would give (same type, values,
``model_fields_set``, extras and private attributes: ``tests/test_trusted_payloads.py`` holds
them equal for every payload model). Whenever it is unsure (a value of another type, an unknown
key, a model with ``before`` or field validators or a config it does not know) it validates.

The work is compiled once per model and set of given fields, as ``dataclasses`` generates an
``__init__``: a function of the values with each field's type test inline and the defaults copied
from a template (:func:`builder` hands it to a caller that always gives the same fields, which
then builds without a dict).
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

__all__ = ["builder", "copy_with", "trusted"]

M = TypeVar("M", bound=BaseModel)

_object_setattr = object.__setattr__
_object_new = object.__new__  # what a model's __new__ is, without the lookup on its metaclass
_NoneType: Final = type(None)
# Config keys that change nothing a trusted build does; any other key set on a model (strict,
# str_strip_whitespace, validate_default, ...) makes it validate always.
_KNOWN_CONFIG: Final = frozenset(
    {"extra", "populate_by_name", "validate_assignment", "defer_build", "title"}
)
_BUILDERS_LIMIT: Final = 64  # sets of given fields remembered per model


class _Blank(BaseModel):
    """The instance a build fills in before it becomes the model's (``__class__`` assigned).

    Filling a model's four slots takes ``object.__setattr__``, since pydantic's ``__setattr__``
    would check every store; called as a function, it builds two tuples per store on CPython
    3.11 (a slot wrapper has no vectorcall): 1,500 instructions each, measured. This class has
    the layout of every model that declares no ``__slots__`` (``BaseModel``'s plus a weak
    reference slot) and object's ``__setattr__`` and ``__delattr__`` (both: they share one type
    slot), so a store to its slots is a plain store. Built as a ``_Blank``, a thirty-field event
    costs 3,600 instructions less. :func:`_fits_blank` says which models it fits.
    """

    if not TYPE_CHECKING:
        __setattr__ = object.__setattr__
        __delattr__ = object.__delattr__
        # Called, the class makes a blank at once: object's own __new__ and __init__, without
        # object.__new__(cls)'s wrapper (it slices its arguments into a new tuple).
        __init__ = object.__init__


def _fits_blank(cls: type[BaseModel]) -> bool:
    """Whether a ``_Blank`` can become a ``cls`` (a model with ``__slots__`` of its own cannot)."""
    probe: BaseModel = _object_new(_Blank)
    try:
        probe.__class__ = cls
    except TypeError:
        return False
    return True


# How a field checks a value it may keep without validation, as Python source over the value's
# variable ``v``: an exact type test (validation would convert anything else), None when values
# of that annotation always need validation. ``consts`` collects the objects the test refers to.
_Check = Callable[[str, dict[str, Any]], str]


def _check_for(annotation: Any) -> tuple[_Check, bool] | None:
    """The check of a field of ``annotation``, and whether a kept value must be copied (a
    ``dict[str, Any]``: validation copies it, after checking that its keys are ``str``); None
    when the field must always be validated."""
    if annotation is Any:
        return (lambda v, consts: "True"), False
    if annotation in (str, int, float, bool):
        return (lambda v, consts: f"type({v}) is {_const(consts, annotation)}"), False
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation.model_config.get("revalidate_instances", "never") != "never":
            return None
        # An instance of exactly this model is kept as it is (revalidate_instances="never").
        return (lambda v, consts: f"type({v}) is {_const(consts, annotation)}"), False
    origin = get_origin(annotation)
    if origin is Literal:
        options = get_args(annotation)

        def literal(v: str, consts: dict[str, Any]) -> str:
            # equal and of the option's own type: True is not 1
            tests = (
                f"({v} == {_const(consts, o)} and type({v}) is {_const(consts, type(o))})"
                for o in options
            )
            return "(" + " or ".join(tests) + ")"

        return literal, False
    if origin is dict and get_args(annotation) == (str, Any):
        return (lambda v, consts: f"type({v}) is {_const(consts, dict)}"), True
    if origin in (Union, types.UnionType):
        args = get_args(annotation)
        if _NoneType in args and len(args) == 2:
            inner = _check_for(next(a for a in args if a is not _NoneType))
            if inner is None:
                return None
            check, copies = inner
            return (lambda v, consts: f"({v} is None or {check(v, consts)})"), copies
    return None


def _const(consts: dict[str, Any], value: Any) -> str:
    """The name the generated source gives ``value``."""
    for name, known in consts.items():
        if known is value:
            return name
    name = f"_c{len(consts)}"
    consts[name] = value
    return name


class _Plan:
    """How one model class is built without validation: its fields in order with their checks
    and defaults, and a builder per set of given fields (in their order)."""

    __slots__ = (
        "afters",
        "blank",
        "builders",
        "checks",
        "cls",
        "defaults",
        "extra",
        "post_init",
        "required",
    )

    def __init__(self, cls: type[BaseModel]) -> None:
        self.cls = cls
        self.checks: dict[str, tuple[_Check, bool] | None] = {}
        # Per field: ("value", default) or ("factory", callable).
        self.defaults: dict[str, tuple[str, Any]] = {}
        for name, info in cls.model_fields.items():
            self.checks[name] = _check_for(info.annotation)
            if info.default_factory is not None:
                self.defaults[name] = ("factory", info.default_factory)
            else:
                default = None if info.default is PydanticUndefined else info.default
                self.defaults[name] = ("value", default)
        self.required = frozenset(
            name for name, info in cls.model_fields.items() if info.is_required()
        )
        self.extra: bool = cls.model_config.get("extra") == "allow"
        self.post_init = bool(cls.__pydantic_post_init__)
        decorators = cls.__pydantic_decorators__
        self.afters: tuple[Callable[[Any], Any], ...] = tuple(
            d.func for d in decorators.model_validators.values()
        )
        self.builders: dict[tuple[Any, ...], Callable[..., Any]] = {}
        self.blank = _fits_blank(cls)

    def builder(
        self,
        names: tuple[str, ...],
        run_after: bool = True,
        owned: frozenset[str] = frozenset(),
        vouched: frozenset[str] = frozenset(),
    ) -> Callable[..., Any]:
        """The builder for values of these fields, given in this order (memoised)."""
        key = (names, run_after, owned, vouched)
        try:
            return self.builders[key]
        except KeyError:
            pass
        if len(self.builders) >= _BUILDERS_LIMIT:
            self.builders.clear()
        build = self._compile(names, run_after, owned, vouched) or _validating(self.cls, names)
        self.builders[key] = build
        return build

    def _compile(
        self,
        names: tuple[str, ...],
        run_after: bool,
        owned: frozenset[str],
        vouched: frozenset[str],
    ) -> Callable[..., Any] | None:
        """A function of the values of ``names`` (positional, in that order) that checks each
        with an exact type test and builds the model from them, or validates all of them when
        one fails; None when values of these fields always need validation (an extra, an
        alias, a required field missing, a type it does not know). ``run_after``, ``owned`` and
        ``vouched`` as :func:`builder` takes them."""
        if len(set(names)) != len(names) or not self.required <= set(names):
            return None
        consts: dict[str, Any] = {
            "_cls": self.cls,
            "_Blank": _Blank,
            "_new": _object_new,
            "_set": _object_setattr,
            "_names": names,
            "_validate": self.cls.model_validate,
            # Copied for every model built: a set made by copying has the table size a copy
            # asks for, and a copy into a table of the same size is the fast one (a fifth less).
            "_given": set(set(names)),
        }
        params = [f"_{i}" for i in range(len(names))]
        fallback = f"return _validate(dict(zip(_names, ({', '.join(params)},))))"
        tests: list[str] = []
        copies: list[tuple[str, bool]] = []
        for name, v in zip(names, params, strict=True):
            if name not in self.checks:
                return None  # an extra, or an alias
            entry = self.checks[name]
            if entry is None:
                return None
            check, copy = entry
            test = "True" if name in vouched else check(v, consts)
            if test != "True":
                tests.append(test)
            if copy:
                copies.append((v, name not in owned))
        lines = [f"def build({', '.join(params)}):"]
        if tests:
            lines += ["    if not (" + "\n        and ".join(tests) + "):", f"        {fallback}"]
        for v, copied in copies:
            # validation copies a dict[str, Any] field, once it checked that its keys are str
            lines += [
                f"    if {v} is not None:",
                f"        for _k in {v}:",
                "            if type(_k) is not str:",
                f"                {fallback}",
            ]
            if copied:
                lines.append(f"        {v} = {v}.copy()")
        # The defaults in field order, copied (a copy of a dict costs a tenth of a display of
        # thirty keys), then the given values and the factories' written over them.
        template: dict[str, Any] = {}
        stores: list[str] = []
        given = dict(zip(names, params, strict=True))
        for name, (how, default) in self.defaults.items():
            template[name] = None if how == "factory" else default
            if name in given:
                stores.append(f"    _d[{name!r}] = {given[name]}")
            elif how == "factory":
                stores.append(f"    _d[{name!r}] = {_const(consts, default)}()")
        consts["_template"] = template
        lines += ["    _d = _template.copy()", *stores]
        extra = "{}" if self.extra else "None"
        if self.blank:
            lines += [
                "    _m = _Blank()",
                "    _m.__dict__ = _d",
                "    _m.__pydantic_fields_set__ = _given.copy()",
                f"    _m.__pydantic_extra__ = {extra}",
                "    _m.__pydantic_private__ = None",
                "    _m.__class__ = _cls",
            ]
        else:
            lines += [
                "    _m = _new(_cls)",
                "    _set(_m, '__dict__', _d)",
                "    _set(_m, '__pydantic_fields_set__', _given.copy())",
                f"    _set(_m, '__pydantic_extra__', {extra})",
                "    _set(_m, '__pydantic_private__', None)",
            ]
        if self.post_init:
            lines.append("    _m.model_post_init(None)")
        for after in self.afters if run_after else ():
            lines.append(f"    _m = {_const(consts, after)}(_m)")
        lines.append("    return _m")
        namespace = dict(consts)
        # Source of our own making: field names appear only as string literals (repr), every
        # other object is bound by name in the namespace.
        exec("\n".join(lines), namespace)
        build = typing.cast("Callable[..., Any]", namespace["build"])
        build.__qualname__ = f"{self.cls.__qualname__}.trusted[{', '.join(names)}]"
        return build


def _validating(cls: type[BaseModel], names: tuple[str, ...]) -> Callable[..., Any]:
    def build(*values: Any) -> Any:
        return cls.model_validate(dict(zip(names, values, strict=True)))

    return build


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


def _plan(cls: type[BaseModel]) -> _Plan | None:
    try:
        return _PLANS[cls]
    except KeyError:
        plan = _PLANS[cls] = _plan_of(cls)
        return plan


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """``cls(**values)``, the model validation gives, without validating what needs no check.

    ``values`` is not kept (dict fields are copied as validation copies them). Falls back to
    ``cls.model_validate(values)`` for anything it cannot vouch for, so a wrong value raises the
    same ``ValidationError``.
    """
    plan = _plan(cls)
    if plan is None:
        return cls.model_validate(values)
    return typing.cast("M", plan.builder(tuple(values))(*values.values()))


def builder(
    cls: type[M],
    names: tuple[str, ...],
    *,
    run_after: bool = True,
    owned: frozenset[str] = frozenset(),
    vouched: frozenset[str] = frozenset(),
) -> Callable[..., M]:
    """``build(*values)``: ``trusted(cls, dict(zip(names, values)))`` without the dict, for a
    caller that always gives the same fields in the same order (the values' types are still
    checked, one by one).

    A caller that knows more says so (and a test holds it to it): ``run_after=False``, its
    values are ones the model's ``after`` validators leave as they are (they are not called);
    ``owned``, the ``dict`` fields it hands over, copies of its own that nobody else holds
    (their keys are checked, they are not copied again); ``vouched``, fields whose values it
    made itself, of exactly the declared type, or that repeat another given field's value
    (their types are not checked again).
    """
    plan = _plan(cls)
    if plan is None:
        return typing.cast("Callable[..., M]", _validating(cls, names))
    return typing.cast("Callable[..., M]", plan.builder(names, run_after, owned, vouched))


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
    if not fields.issuperset(update):
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
