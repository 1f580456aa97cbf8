"""``Model.trusted(values)`` gives the model validation gives, for every payload model.

The instrumentation may build payloads through ``trusted`` (no validation of values whose types
it knows); these tests hold the result equal to ``Model(**values)`` in type, dump, fields set,
extras and private attributes, and show that anything unexpected is validated as usual.
"""

from __future__ import annotations

import types
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any, Literal, Union, get_args, get_origin

import pytest
from pydantic import BaseModel, ValidationError

import otelhooks.events as events_module
from otelhooks._events._trusted import _PLANS, builder, trusted
from otelhooks._sources import SOURCES
from otelhooks.events import (
    AfterToolCallEvent,
    CompleteEvent,
    ErrorEvent,
    HookEvent,
    TokenUsage,
    ToolCallEvent,
    ToolResult,
)

MODELS = [
    obj
    for name in events_module.__all__
    if isinstance(obj := getattr(events_module, name), type)
    and issubclass(obj, BaseModel)
    and hasattr(obj, "trusted")
]


@pytest.fixture(autouse=True)
def _pinned_sources() -> Iterator[None]:
    # Default factories (eventId, timestamp, deliveredAt) must give the same value both ways.
    saved = (SOURCES.event_id, SOURCES.now_ms)
    SOURCES.event_id, SOURCES.now_ms = (lambda: "e" * 32), (lambda: 1_700_000_000_000)
    try:
        yield
    finally:
        SOURCES.event_id, SOURCES.now_ms = saved


def _sample(annotation: Any, depth: int = 0) -> Any:
    """A value of ``annotation`` of the type a trusted build accepts as it is."""
    if annotation is Any:
        return {"any": [1, "two"]}
    if annotation is str:
        return "text"
    if annotation is bool:
        return True
    if annotation is int:
        return 7
    if annotation is float:
        return 2.5
    origin = get_origin(annotation)
    if origin is Literal:
        return get_args(annotation)[-1]
    if origin in (Union, types.UnionType):
        return _sample(next(a for a in get_args(annotation) if a is not type(None)), depth)
    if origin is dict:
        return {"k": "v", "n": 1}
    if origin is list:
        return []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation(**_values(annotation, full=True, depth=depth + 1))
    raise AssertionError(f"no sample for {annotation!r}")


def _values(model: type[BaseModel], *, full: bool, depth: int = 0) -> dict[str, Any]:
    values = {}
    for name, info in model.model_fields.items():
        if name == "event" and not info.is_required():
            continue  # the Literal default
        if full or info.is_required():
            values[name] = _sample(info.annotation, depth)
    return values


def _same(a: BaseModel, b: BaseModel) -> None:
    assert type(a) is type(b)
    assert a.model_dump() == b.model_dump()
    assert list(a.__dict__) == list(b.__dict__)
    assert a.model_fields_set == b.model_fields_set
    assert a.__pydantic_extra__ == b.__pydantic_extra__
    assert a.__pydantic_private__ == b.__pydantic_private__
    for name, value in a.__dict__.items():
        if isinstance(value, dict):
            # validation copies dict fields: a trusted build must not share the caller's dict
            assert type(value) is type(b.__dict__[name])


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("full", [True, False], ids=["every_field", "required_only"])
def test_trusted_equals_validation(model: type[Any], full: bool) -> None:
    values = _values(model, full=full)
    _same(model.trusted(values), model(**values))


def test_the_models_the_instrumentation_builds_take_the_fast_path() -> None:
    # A model that lost its plan would still be correct, only slow: say so here.
    for model in (AfterToolCallEvent, ToolCallEvent, ToolResult, CompleteEvent, HookEvent):
        model.trusted(_values(model, full=False))
        assert _PLANS[model] is not None, model
    ErrorEvent.trusted({"errorMessage": "x"})
    assert _PLANS[ErrorEvent] is None  # a "before" validator: always validated


def test_after_tool_call_as_the_instrumentation_builds_it() -> None:
    result = ToolResult(content="hello, world")
    args = {"path": "notes/a.txt"}
    values: dict[str, Any] = {
        "operationId": "op-1",
        "parentOperationId": None,
        "sessionKey": None,
        "userId": None,
        "toolCallId": "call_1",
        "identifier": "fs",
        "apiName": "readFile",
        "args": args,
        "callIndex": 0,
        "stepIndex": 2,
        "agentId": "bench",
        "toolName": "readFile",
        "toolInput": args,
        "runId": "op-1",
        "content": result.content,
        "success": result.success,
        "mocked": False,
        "executionTimeMs": 1.25,
        "duration": 0.00125,
        "result": result.model_copy(update={"executionTime": 1.25}),
        "toolOutput": result.content,
    }
    fast, slow = AfterToolCallEvent.trusted(values), AfterToolCallEvent(**values)
    _same(fast, slow)
    assert fast.args is not args  # copied, as validation copies it
    assert fast.result is values["result"]  # a model instance is kept, as validation keeps it


@pytest.mark.parametrize(
    ("model", "values"),
    [
        (ToolResult, {"content": "x", "executionTime": 3}),  # an int where a float is declared
        (ToolResult, {"content": "x", "state": OrderedDict(a=1)}),  # a dict subclass
        (ToolResult, {"content": "x", "surprise": 1}),  # an extra
        (AfterToolCallEvent, {"toolCallId": "c", "identifier": "i", "apiName": "a", "result": {}}),
        (AfterToolCallEvent, {"toolCallId": "c", "identifier": "i", "apiName": "a", "runId": None}),
        (CompleteEvent, {"reason": "max_steps", "tokenUsage": TokenUsage(input=1, output=2)}),
        (HookEvent, {"event": "x", "operationId": "op"}),
    ],
)
def test_values_it_cannot_vouch_for_are_validated(model: type[Any], values: dict[str, Any]) -> None:
    _same(model.trusted(values), model(**values))


@pytest.mark.parametrize(
    "values",
    [
        {"identifier": "i", "apiName": "a"},  # toolCallId missing
        {"toolCallId": 1, "identifier": "i", "apiName": "a"},
        {"toolCallId": "c", "identifier": "i", "apiName": "a", "event": "before_tool_call"},
    ],
)
def test_invalid_values_raise_as_validation_does(values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as expected:
        AfterToolCallEvent(**values)
    with pytest.raises(ValidationError) as got:
        AfterToolCallEvent.trusted(values)
    assert got.value.errors() == expected.value.errors()


def test_trusted_is_reachable_as_a_function() -> None:
    _same(trusted(ToolResult, {"content": "x"}), ToolResult(content="x"))


@pytest.mark.parametrize(
    ("model", "update"),
    [
        (ToolResult(content="x"), {"executionTime": 1.5}),
        (ToolResult(content="x", state={"a": 1}, surprise=2), {"success": False, "error": "e"}),
        (ToolResult(content="x"), {"notAField": 1}),  # an extra: model_copy itself
        (ToolCallEvent(toolCallId="c", identifier="i", apiName="a"), {"args": {"b": 2}}),
    ],
)
def test_copy_with_equals_model_copy(model: Any, update: dict[str, Any]) -> None:
    got, expected = model.copy_with(update), model.model_copy(update=update)
    _same(got, expected)
    assert got is not model
    assert got.__dict__ is not model.__dict__
    assert got.model_fields_set is not model.model_fields_set


@pytest.mark.parametrize(
    "model",
    [m for m in MODELS if issubclass(m, HookEvent)],
    ids=lambda m: m.__name__,
)
def test_a_live_event_sets_its_span_ids_as_assignment_does(model: type[Any]) -> None:
    # LiveEvent.payload writes traceId/spanId without pydantic's __setattr__: same model.
    from otelhooks._live import _set_ids

    values = _values(model, full=False)
    assigned, written = model(**values), model(**values)
    assigned.traceId, assigned.spanId = "ab" * 16, "cd" * 8
    _set_ids(written, "ab" * 16, "cd" * 8)
    _same(written, assigned)


def test_the_instrumentations_positional_builder_equals_validation() -> None:
    # What an observed tool call's worker builds: after_tool_call from positional values, with
    # the span's ids and without them.
    # The instrumentation's builder skips the mirroring validator and the copy of the
    # arguments it owns: the same model, for every api name (an empty one included).
    from otelhooks._instrument._observed import AFTER_BUILD, AFTER_FIELDS, AFTER_WITH_IDS

    result = ToolResult(content="hello")
    for api in ("readFile", ""):
        args = {"path": "a.txt"}
        base = (
            "op-1", None, None, "u", "call_1", "fs", api, args, 0, 2, "bench",
            api, args, "op-1", "hello", "hello", True, False, 1.5, 0.0015, result,
        )  # fmt: skip
        with_ids = (*base, "ab" * 16, "cd" * 8)
        for names, values in ((AFTER_FIELDS, base), (AFTER_WITH_IDS, with_ids)):
            expected = AfterToolCallEvent(**dict(zip(names, values, strict=True)))
            got = builder(AfterToolCallEvent, names)(*values)
            _same(got, expected)
            assert got.args is not args
            _same(builder(AfterToolCallEvent, names, **AFTER_BUILD)(*values), expected)


def test_an_owned_dict_is_checked_not_copied() -> None:
    build = builder(ToolResult, ("content", "state"), owned=frozenset({"state"}))
    state = {"type": "blocked"}
    assert build("x", state).state is state
    with pytest.raises(ValidationError):
        build("x", {1: "a"})  # a key not a str: validated, as ever


def test_a_positional_builder_validates_what_it_cannot_vouch_for() -> None:
    build = builder(ToolResult, ("content", "executionTime", "state"))
    # an int for a float; a dict subclass
    _same(build("x", 3, None), ToolResult(content="x", executionTime=3, state=None))
    _same(
        build("x", None, OrderedDict(a=1)),
        ToolResult(content="x", executionTime=None, state=OrderedDict(a=1)),
    )
    for values in ((["not", "text"], None, None), ("x", None, {1: "a"})):  # a key not a str
        with pytest.raises(ValidationError) as got:
            build(*values)
        with pytest.raises(ValidationError) as expected:
            ToolResult(**dict(zip(("content", "executionTime", "state"), values, strict=True)))
        assert got.value.errors() == expected.value.errors()


def _snapshot(result: ToolResult | None, mocked: bool = False) -> tuple[Any, ...]:
    """What a real tool call's end hands the observer worker (``result`` None: the call's own,
    from ``set_result("text")``), 7.5 ms after it started."""
    from opentelemetry.sdk.trace import TracerProvider

    from otelhooks import AgentTracer
    from otelhooks._instrument._observed import after_args

    tracer = AgentTracer(tracer_provider=TracerProvider())
    with (
        tracer.operation("t") as op,
        op.step() as step,
        step.tool_call("fs", "readFile", {"path": "a"}) as call,
    ):
        if result is None:
            result = call.set_result("text")
        return after_args(
            op, call.tool_call_id, "fs", "readFile", call.args, call.call_index, step.index,
            result, 7.5, mocked, call.span.get_span_context(),
        )  # fmt: skip


@pytest.mark.parametrize(
    "result",
    [
        ToolResult(content="hello"),
        ToolResult(content="no", success=False, error="boom"),
        ToolResult(content="x", executionTime=3.0),  # replaced, as model_copy replaces it
        ToolResult.model_validate({"content": "x", "success": True}),
        ToolResult(),
        # crosses as the model: state, extras, a subclass
        ToolResult(content="x", state={"type": "blocked"}),
        ToolResult(content="x", surprise=1),  # type: ignore[call-arg]
        type("MyResult", (ToolResult,), {})(content="x"),
    ],
    ids=["plain", "failed", "timed", "validated", "empty", "state", "extra", "subclass"],
)
def test_an_observed_result_is_what_model_copy_gives(result: ToolResult) -> None:
    # The observer worker rebuilds the result it records with the call's executionTime, from
    # the snapshot a real tool call takes as it ends.
    from otelhooks._instrument._observed import after_tool_call

    snapshot = _snapshot(result)
    payload = after_tool_call(*snapshot)
    assert isinstance(payload, AfterToolCallEvent)
    _same(payload.result, result.model_copy(update={"executionTime": 7.5}))
    assert (snapshot[7] is None) == (  # crossed as values, not as the model
        type(result) is ToolResult and not result.state and not result.__pydantic_extra__
    )


def test_a_built_model_is_its_class_in_every_way() -> None:
    # A build fills a blank instance and then gives it the model's class: afterwards it must be
    # that class for pydantic too (assignment, copies, pickling, equality with validation).
    import copy
    import pickle

    build = builder(ToolResult, ("content", "success"))
    built = build("x", True)
    assert type(built) is ToolResult
    assert built.__class__ is ToolResult
    built.error = "late"  # pydantic's own __setattr__ again: the fields set grows
    assert built.model_fields_set == {"content", "success", "error"}
    validated = ToolResult(content="x", success=True, error="late")
    built.surprise = 1  # an extra (extra="allow"), as pydantic stores one
    validated.surprise = 1
    _same(built, validated)
    assert built == validated
    _same(copy.deepcopy(built), built)
    _same(pickle.loads(pickle.dumps(built)), built)


def test_a_model_with_slots_of_its_own_is_built_without_the_blank() -> None:
    class Slotted(BaseModel):
        __slots__ = ("_cache",)
        name: str = ""

    from otelhooks._events._trusted import _Plan

    assert not _Plan(Slotted).blank
    _same(builder(Slotted, ("name",))("n"), Slotted(name="n"))


def test_a_vouched_field_is_not_checked() -> None:
    # The contract a caller signs with ``vouched``: its values are not looked at again.
    build = builder(ToolResult, ("content", "executionTime"), vouched=frozenset({"executionTime"}))
    assert build("x", 3).executionTime == 3  # an int kept as given: validation would make 3.0
    assert type(build("x", 3).executionTime) is int


@pytest.mark.parametrize("mocked", [False, True])
def test_what_the_instrumentation_vouches_for_is_of_the_declared_type(mocked: bool) -> None:
    # The fields an observed call's build does not check, from a real tool call's snapshot:
    # each exactly what validation would make of it.
    from otelhooks._instrument._observed import AFTER_BUILD, after_tool_call

    payload = after_tool_call(*_snapshot(None, mocked))
    validated = AfterToolCallEvent.model_validate(
        {name: getattr(payload, name) for name in payload.model_fields_set}
    )
    _same(payload, validated)
    for name in AFTER_BUILD["vouched"]:
        assert type(getattr(payload, name)) is type(getattr(validated, name)), name


def test_an_observed_call_without_a_span_gives_no_span_ids() -> None:
    # Tracing off: the span context is invalid (ids 0). The payload is the one validation
    # gives without the ids: None, and not among the fields set.
    from otelhooks._instrument._observed import after_tool_call

    snapshot = (*_snapshot(None)[:-2], 0, 0)
    payload = after_tool_call(*snapshot)
    assert (payload.traceId, payload.spanId) == (None, None)
    assert not {"traceId", "spanId"} & payload.model_fields_set
    _same(
        payload,
        AfterToolCallEvent.model_validate(
            {name: getattr(payload, name) for name in payload.model_fields_set}
        ),
    )
    with_ids = after_tool_call(*_snapshot(None))
    assert {"traceId", "spanId"} <= with_ids.model_fields_set
